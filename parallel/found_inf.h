#pragma once
// Loss scaling across ranks. Each rank's LossScaler finds inf/NaN only in its own gradients —
// before DDP's allreduce they differ, and one rank's overflow may not show on another. If the
// ranks decided alone, one would skip a step the others take and the replicas would drift
// apart for good. So the verdicts are exchanged: any rank's overflow makes every rank skip the
// step and back off its scale, and the scales stay equal on all ranks.
//
//   LossScaler& scaler = *amp.scaler();
//   parallel::sync_found_inf(scaler, group);   // once, after making the scaler
//
// Every rank must then call unscale()/step() each step (the hook is a collective).

#include <memory>
#include <optional>

#include "optim/loss_scaler.h"
#include "parallel/process_group.h"

namespace rg::parallel {

// Whether any rank of `group` found inf/NaN, and where: an allgather of each rank's first
// overflowing parameter (one number per rank). The verdict names the lowest rank that
// overflowed and its parameter, the same on every rank — so a rank that skips because of
// another's overflow reports that rank's parameter, not one of its own from an earlier step.
// A collective: every rank calls it.
FoundInfVerdict exchange_found_inf(ProcessGroup& group,
                                   std::optional<std::size_t> local_first_overflow);

// Installs on `scaler` a found-inf hook that calls exchange_found_inf over `group`.
void sync_found_inf(LossScaler& scaler, std::shared_ptr<ProcessGroup> group);

}  // namespace rg::parallel
