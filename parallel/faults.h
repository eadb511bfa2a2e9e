#pragma once
// Faults a learner can inject into a training job, to watch what the parallel layer does when
// a rank dies, exits, falls behind or freezes — and how long the others take to notice. A
// training loop calls FaultPlan::at_step once per step; the plan comes from specs such as
// train_cifar's `--fault kill:rank=1:step=50`:
//
//   kill:rank=R:step=S              rank R sends itself SIGKILL (a crash, the OOM killer)
//   exit:rank=R:step=S[:code=C]     rank R ends at once with status C (default 1) without
//                                   shutting down: no MPI_Finalize, no destructors
//   delay:rank=R:step=S:seconds=T   rank R sleeps T seconds, then goes on (a slow rank; the
//                                   job survives when T is below the collective timeout)
//   stop:rank=R:step=S              rank R sends itself SIGSTOP: alive but frozen (a hung
//                                   driver, a debugger); only the collective timeout ends it
//   error:rank=R:step=S             rank R throws an rg::Error, as a bug, a bad batch or a
//                                   failed device call would; the program's own error path
//                                   must end the job (parallel::end_job_after_error)
//   overflow:step=S[:rank=R]        in step S's backward, one gradient of rank R (default 0)
//                                   becomes inf, as an f16 overflow would: the loss scaler must
//                                   skip the step on every rank and back off (always at=backward;
//                                   a program refuses it without a loss scaler)
//
// Step S is the S-th training step of the run, counted from 1 across epochs (the numbering of
// the loss scaler's "step S: gradient overflow" lines). Where the fault fires is the optional
// field at= (any kind takes it):
//   at=step        just before step S (the default)
//   at=backward    during step S's backward, in the hook of a gradient half-way through it:
//                  some gradients computed (and DDP's allreduces of their buckets started),
//                  the rest still to come
//   at=checkpoint  while rank 0 writes the checkpoint at the end of the epoch holding step S
//                  (train_cifar: last.safetensors, after best.safetensors), once the new file
//                  is complete under its temporary name and before it replaces the old one: the
//                  moment a crash must leave the previous checkpoint whole. rank=0 only, the
//                  rank that writes checkpoints.
// Each spec is a kind then key=value fields separated by ':'; an unknown kind or key, a missing
// or repeated key, a key the kind does not take and a value out of range are rg::Errors naming
// the spec and the field.
//
// This is the one place where the library ends its own process on purpose (DESIGN.md: no exit()
// in the library otherwise): ending it is what the fault is for.

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace rg::parallel {

enum class FaultKind { kill, exit, delay, stop, error, overflow };
enum class FaultPoint { step, backward, checkpoint };  // at= (see above)

struct Fault {
  FaultKind kind = FaultKind::kill;
  FaultPoint at = FaultPoint::step;
  int rank = 0;
  int64_t step = 1;
  int exit_code = 1;   // exit only: the process's status, 0..255
  double seconds = 0;  // delay only: how long to sleep
  std::string spec;    // as given, for messages
};

// Largest values a spec may hold: beyond any real run, small enough never to overflow.
inline constexpr int kMaxFaultRank = 1 << 20;
inline constexpr double kMaxFaultDelaySeconds = 1e6;  // 11.6 days

// Parses one spec (see the top of this file); throws rg::Error naming what was wrong.
Fault parse_fault(const std::string& spec);

class FaultPlan {
 public:
  FaultPlan() = default;
  // Parses every spec; throws on the first bad one.
  explicit FaultPlan(const std::vector<std::string>& specs);

  bool empty() const { return faults_.empty(); }
  const std::vector<Fault>& faults() const { return faults_; }
  std::vector<std::string> specs() const;

  // Throws rg::Error for a fault aimed at a rank the job does not have (rank 1 in a job of one
  // process would otherwise never fire, and the run would silently show nothing).
  void check_world(int world_size) const;

  // Call once per training step, before the step runs: applies this rank's at=step faults for
  // `step` (1-based). Announces each on stderr first ("ringgrad: rank 1: injected fault
  // kill:rank=1:step=50 at step 50: SIGKILL"), so the job's output shows where it came from.
  // kill, exit and stop do not return (stop returns only if someone sends SIGCONT); error
  // throws.
  void at_step(int rank, int64_t step) const;
  // The same for the at=backward faults of `step`: call it during that step's backward, from
  // the gradient hook of `param` (whose gradient an overflow fault sets to inf).
  void in_backward(int rank, int64_t step, const Tensor& param = {}) const;
  // The same for the at=checkpoint faults of an epoch of steps first_step..last_step: call it
  // while writing `file`, the new file complete but not yet in place.
  void in_checkpoint_write(int rank, int64_t first_step, int64_t last_step,
                           const std::string& file) const;
  // Whether some fault of `rank` fires at `point` (a program arms the hooks it needs).
  bool has(int rank, FaultPoint point) const;
  // Whether some fault is of this kind (on any rank).
  bool has(FaultKind kind) const;

 private:
  std::vector<Fault> faults_;
};

const char* fault_kind_name(FaultKind kind);
const char* fault_point_name(FaultPoint point);

}  // namespace rg::parallel
