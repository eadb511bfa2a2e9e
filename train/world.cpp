#include "train/world.h"

#include <algorithm>
#include <thread>

#include "core/thread_pool.h"
#include "parallel/world.h"

namespace rg::train {

std::shared_ptr<parallel::ProcessGroup> join_world(const WorldOptions& options) {
  parallel::ProcessGroupOptions group_options;
  group_options.algorithm = options.allreduce;
  group_options.timeout = options.collective_timeout;
  group_options.check_sequence = options.check_sequence;
  auto group = parallel::init(group_options);
  if (options.threads > 0) {
    set_num_threads(static_cast<int>(options.threads));
  } else if (group->local_size() > 1) {
    // Each process computing with every core would oversubscribe them N times over.
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    set_num_threads(std::max(1, cores / group->local_size()));
  }
  return group;
}

Device training_device(const std::string& device_flag, int local_rank, int local_size) {
  const Device device = Device::parse(device_flag);
  if (device_flag != "cuda" || local_size <= 1) return device;
  return Device::cuda(local_rank);
}

}  // namespace rg::train
