#include "parallel/checkpoint.h"

#include <nlohmann/json.hpp>

#include "core/rng.h"
#include "parallel/horovod.h"

namespace rg::parallel {

using json = nlohmann::json;

std::optional<Resumed> load_checkpoint_on_root(const std::string& path, nn::Module& model,
                                               Optimizer* optimizer, LRScheduler* scheduler,
                                               MixedPrecision* amp, int root, ProcessGroup& group) {
  json verdict;
  if (group.rank() == root) {
    if (path.empty()) {
      verdict["resume"] = false;
    } else {
      try {
        const TrainingState s = load_checkpoint(path, model, optimizer, scheduler, amp);
        const PhiloxState rng = default_generator().state();
        verdict = {{"resume", true},
                   {"path", path},
                   {"epoch", s.epoch},
                   {"step", s.step},
                   {"best_accuracy", s.best_accuracy},
                   {"extra", s.extra},
                   {"scheduler", scheduler ? json(scheduler->state_dict()) : json::object()},
                   {"rng", json::array({rng.seed, rng.offset})},
                   {"amp", amp ? json(amp->state_dict().metadata) : json::object()}};
      } catch (const Error& e) {
        verdict = {{"error", e.what()}};
      }
    }
  }
  verdict = json::parse(broadcast_object(verdict.dump(), root, group));
  if (verdict.contains("error"))
    fail(verdict["error"].get<std::string>(),
         group.rank() == root ? "" : " (read by rank " + std::to_string(root) + ")");
  if (!verdict["resume"].get<bool>()) return std::nullopt;

  broadcast_parameters(model, root, group);
  if (optimizer) broadcast_optimizer_state(*optimizer, root, group);
  if (amp) {
    // Every rank's own state supplies tensors of the right names and shapes to receive into.
    StateDict received = amp->state_dict();
    broadcast_parameters(received.tensors, root, group);
    received.metadata = verdict["amp"].get<std::map<std::string, std::string>>();
    if (group.rank() != root) amp->load_state_dict(received);
  }
  Resumed r;
  r.path = verdict["path"];
  r.state.epoch = verdict["epoch"];
  r.state.step = verdict["step"];
  r.state.best_accuracy = verdict["best_accuracy"];
  r.state.extra = verdict["extra"].get<std::map<std::string, std::string>>();
  if (group.rank() != root) {
    if (scheduler)
      scheduler->load_state_dict(verdict["scheduler"].get<std::map<std::string, std::string>>());
    default_generator().set_state(
        {verdict["rng"][0].get<uint64_t>(), verdict["rng"][1].get<uint64_t>()});
  }
  return r;
}

}  // namespace rg::parallel
