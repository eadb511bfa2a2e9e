#pragma once
// Engine: the one communication thread of a process and everything MPI-wide.
//
// Every MPI call ringgrad makes — MPI_Init_thread and MPI_Finalize included — runs on this
// thread, taken from a queue in the order the collectives were issued. So communication
// overlaps the computation of the threads that issue it, and the program works whatever thread
// level MPI provides (MULTIPLE is asked for, so the program itself may use MPI too).
//
// Waiting is polling: nonblocking MPI calls, then MPI_Test until done. Between tests the engine
// looks at the clock (a wait longer than the timeout is an error naming whom it waited for) and
// every 50 ms at the other processes on this machine (a peer whose process has exited is
// reported by rank and pid at once, instead of after the timeout). Peers on other machines are
// only caught by the timeout. On a fault the engine prints the message, fails every queued and
// later collective with it and, with OnFault::abort_job, calls MPI_Abort after a grace period.
//
// A rank that leaves — shutdown at exit or called, an exception out of the program — is alive
// while it goes, so it tells the others first (departures.h): each liveness check also reads
// those notices, and a rank waiting in a collective the leaver will never join fails at once,
// naming it, how it left and where this rank waits.

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "parallel/mpi/departures.h"
#include "parallel/process_group.h"
#include "parallel/world.h"

namespace rg::parallel::mpi {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

class Engine {
 public:
  // Starts the communication thread, which initialises MPI (or adopts the program's MPI) and
  // learns every rank's process id and host. Throws if MPI cannot start.
  static Engine& start(milliseconds timeout, OnFault on_fault);
  static Engine* instance();  // null before start()

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  milliseconds timeout() const { return timeout_; }
  // Which host `rank` runs on, as the lowest rank on that host (host names compared at start).
  int host_of(int rank) const { return hosts_.at(static_cast<std::size_t>(rank)); }

  // Queues fn for the communication thread. The Work completes when fn returns; an exception
  // from fn is a fault (see above). `keep` holds the tensors fn touches: alive until done, and
  // forever if the collective failed with messages possibly still in flight into them.
  std::shared_ptr<Work> submit(std::function<void()> fn, std::vector<Tensor> keep);
  // Runs fn on the communication thread and returns when it is done (set-up work such as
  // duplicating a communicator); its exception is rethrown here and is a fault too.
  void run(std::function<void()> fn);

  // On the communication thread: calls done() until it returns true. Throws rg::Error when
  // `timeout` passes ("timed out after … ms waiting for <waiting_for()>") or when a process of
  // this job on this machine has exited.
  void wait_until(const std::function<bool()>& done, milliseconds timeout,
                  const std::function<std::string()>& waiting_for);
  // Waits for an MPI request the same way.
  void wait_request(MPI_Request& request, milliseconds timeout,
                    const std::function<std::string()>& waiting_for);

  // Drains the queue, tells every rank this one is leaving (`how`: "its program returned"),
  // meets them in a barrier (which notices dead peers and ranks that stop on an error while
  // this one waits), finalizes MPI and joins the thread. Idempotent; runs at exit.
  void shutdown(const std::string& how = "it called parallel::shutdown()");

  // For a rank that ends without shutting down (std::terminate: `how` says why): tells every
  // other rank, from the communication thread, waiting at most two seconds for it.
  void announce_ending(const std::string& how);

  // While it lives, the communication thread waits in `waiting` (a collective, a group being
  // created): what the departure notices are judged against. On the communication thread.
  class Running {
   public:
    Running(Engine& engine, const Waiting& waiting) : engine_(engine), previous_(engine.waiting_) {
      engine.waiting_ = waiting;
    }
    ~Running() { engine_.waiting_ = previous_; }
    Running(const Running&) = delete;
    Running& operator=(const Running&) = delete;

   private:
    Engine& engine_;
    Waiting previous_;
  };
  // On the communication thread: a new group's number (0 for the world, in creation order, the
  // same on every rank), and a collective of a group completed (what notices count).
  int add_group();
  void completed(int group, int64_t seq);
  int groups() const { return static_cast<int>(completed_.size()); }

  // Ends the whole job now: prints `reason` with this rank, then MPI_Abort from the calling
  // thread — the one MPI call not made on the communication thread, which may be waiting in a
  // collective for a peer (set_up asks for MPI_THREAD_MULTIPLE; MPI_Abort is a last resort).
  [[noreturn]] void abort_job(const std::string& reason);

 private:
  struct Task;
  Engine(milliseconds timeout, OnFault on_fault);
  ~Engine();
  void loop();
  void set_up();     // on the thread: MPI_Init, peers, operators
  void tear_down();  // on the thread: barrier, MPI_Finalize
  void fault(const std::string& message);
  std::string dead_peers() const;  // "rank 2 (pid 4711)" for each peer whose process is gone
  bool is_dead(int rank) const;
  // Under scripts/mpirun.sh --elastic (RG_ELASTIC_DIR set): the ranks this one saw die, in
  // $RG_ELASTIC_DIR/lost.<rank>, from which the supervisor learns how many ranks remain.
  void record_lost_peers() const;
  // ... and that this rank itself ends the job (MPI_Abort), in $RG_ELASTIC_DIR/ended.<rank>: a
  // rank that sees it gone a moment later must not count it lost.
  void record_ending_the_job() const;
  // Departure notices (departures.h), on the communication thread.
  void send_notice(NoticeKind kind, const std::string& how, const std::vector<int>& to);
  void send_notice_to_all(NoticeKind kind, const std::string& how);
  void receive_notices();             // whatever has arrived, into notices_
  bool sends_done();                  // every notice sent has left
  void serve_ending_request();        // announce_ending's, from another thread
  std::string stopped_peers() const;  // the same for each peer stopped by a signal or debugger

  struct Peer {
    int pid = 0;
    bool watched = false;  // on this machine and visible in /proc: its exit can be seen
    int64_t start_time = 0;
  };

  milliseconds timeout_;
  OnFault on_fault_;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  bool we_initialized_mpi_ = false;
  std::atomic<bool> mpi_started_{false};  // MPI_Init_thread has returned (or MPI was up)
  MPI_Comm comm_ = MPI_COMM_NULL;         // the engine's own: set-up exchange and the final barrier
  std::vector<Peer> peers_;
  std::vector<int> hosts_;  // per rank: the lowest rank on its host

  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Task>> queue_;
  bool stopping_ = false;
  bool stopped_ = false;
  std::string fault_;        // the first fault; empty while healthy
  std::string leaving_how_;  // shutdown's `how`

  // Departures (departures.h); on the communication thread unless said otherwise.
  bool notices_ready_ = false;      // comm_ exists
  Waiting waiting_;                 // what the thread waits in now
  std::vector<int64_t> completed_;  // per group: the last collective completed
  std::map<int, Notice> notices_;   // by sender: the latest notice received
  struct Sent {
    std::string bytes;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  std::deque<Sent> sent_;  // buffers of notices in flight (a deque: they must not move)
  // announce_ending's request, under mutex_ (the flag is read without it while waiting).
  std::string ending_how_;
  std::atomic<bool> ending_requested_{false};
  bool ending_announced_ = false;
  std::condition_variable announced_;
  std::vector<std::vector<Tensor>> kept_;  // tensors of failed collectives, never freed
};

}  // namespace rg::parallel::mpi
