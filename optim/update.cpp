// The fused steps by device: tensors grouped by the device they live on (all cpu devices share
// the CPU loops), then one dispatch per group, so a model on one GPU costs one launch per step.
#include <map>
#include <utility>

#include "optim/update_items.h"

namespace rg::detail {
namespace {

// Groups positions 0..n-1 by device(i); cpu and the logical cpu:N devices form one group.
template <class DeviceOf>
std::map<std::pair<int, int>, std::vector<std::size_t>> by_device(std::size_t n,
                                                                  DeviceOf device_of) {
  std::map<std::pair<int, int>, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < n; ++i) {
    const Device d = device_of(i);
    groups[d.is_cpu() ? std::pair{0, 0} : std::pair{1, d.index}].push_back(i);
  }
  return groups;
}

// The item's device: its parameter's (the optimizers) or its tensor's (Lookahead).
Device device_of(const SgdItem& item) {
  return item.param.device();
}
Device device_of(const AdamWItem& item) {
  return item.param.device();
}
Device device_of(const LookaheadItem& item) {
  return item.tensor.device();
}

template <class Item, class Step>
void step_by_device(const char* op, const std::vector<Item>& items, Step step) {
  for (const auto& [key, positions] :
       by_device(items.size(), [&](std::size_t i) { return device_of(items[i]); })) {
    std::vector<Item> group;
    for (std::size_t i : positions) group.push_back(items[i]);
    const Device device = device_of(group.front());
    dispatch_device<Kernels::cpu_and_cuda>(op, device, [&](auto on) { step(on, group); });
  }
}

}  // namespace

void sgd_step(const std::vector<SgdItem>& items) {
  step_by_device("SGD.step", items, [](auto on, const auto& group) { sgd_step(on, group); });
}

void adamw_step(const std::vector<AdamWItem>& items) {
  step_by_device("AdamW.step", items, [](auto on, const auto& group) { adamw_step(on, group); });
}

void lookahead_update(const std::vector<LookaheadItem>& items, double decay) {
  step_by_device("Lookahead.update", items,
                 [&](auto on, const auto& group) { lookahead_update(on, group, decay); });
}

int64_t unscale_grads(const std::vector<Tensor>& grads, const std::vector<int64_t>& indices,
                      double inv_scale) {
  int64_t first_bad = -1;
  for (const auto& [key, positions] :
       by_device(grads.size(), [&](std::size_t i) { return grads[i].device(); })) {
    std::vector<Tensor> g;
    std::vector<int64_t> idx;
    for (std::size_t i : positions) {
      g.push_back(grads[i]);
      idx.push_back(indices[i]);
    }
    const int64_t bad = dispatch_device<Kernels::cpu_and_cuda>(
        "LossScaler.unscale", g.front().device(),
        [&](auto on) { return unscale_grads(on, g, idx, inv_scale); });
    if (bad >= 0 && (first_bad < 0 || bad < first_bad)) first_bad = bad;
  }
  return first_bad;
}

}  // namespace rg::detail
