#include "train/world.h"

#include <algorithm>
#include <thread>

#include "core/thread_pool.h"
#include "parallel/host_staged_group.h"
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

GpuBackend parse_gpu_backend(const std::string& text) {
  if (text == "auto" || text == "nccl") return GpuBackend::nccl;
  if (text == "mpi") return GpuBackend::mpi;
  fail("backend must be auto, nccl or mpi, got '", text, "'");
}

std::string gpu_backend_name(GpuBackend backend) {
  return backend == GpuBackend::nccl ? "nccl" : "mpi";
}

Device rank_device(const RankPlacement& p) {
  const Device device = Device::parse(p.device_flag);
  if (device.is_cpu() || p.local_size <= 1) return device;
  const std::string ranks = std::to_string(p.local_size) + " processes on this machine";
  const char* how =
      " NCCL needs a GPU per process (it refuses two on one GPU: \"Duplicate GPU detected\"). "
      "To run them on fewer GPUs — to learn or test DDP on one GPU — use --backend mpi: the "
      "processes share the GPUs and reduce gradients through host memory (slower).";
  if (p.device_flag != "cuda") {  // cuda:N, the same on every process
    RG_CHECK(p.backend == GpuBackend::mpi, "--device ", device, " puts all ", ranks, " on ", device,
             ".", how, " Or give --device cuda: each process takes cuda:<local rank>");
    return device;
  }
  if (p.backend == GpuBackend::mpi)
    return Device::cuda(p.gpu_count > 0 ? p.local_rank % p.gpu_count : p.local_rank);
  RG_CHECK(p.gpu_count <= 0 || p.local_rank < p.gpu_count, "--device cuda with ", ranks, " but ",
           p.gpu_count, " GPU(s): local rank ", p.local_rank, " has no cuda:", p.local_rank, ".",
           how);
  return Device::cuda(p.local_rank);
}

std::shared_ptr<parallel::ProcessGroup> gradient_group(
    std::shared_ptr<parallel::ProcessGroup> world, const Device& device, GpuBackend backend) {
  if (!device.is_cuda() || backend == GpuBackend::nccl || world->size() == 1) return world;
  return std::make_shared<parallel::HostStagedGroup>(std::move(world));
}

std::vector<Device> data_parallel_devices(const std::string& device_flag, int dp,
                                          const std::string& list, int gpu_count) {
  std::vector<Device> devices;
  if (!list.empty()) {
    std::size_t at = 0;
    for (;;) {
      const std::size_t comma = std::min(list.find(',', at), list.size());
      devices.push_back(Device::parse(list.substr(at, comma - at)));
      RG_CHECK(devices.back().type == devices.front().type, "--dp-devices '", list,
               "': ", devices.back(), " is not of ", devices.front(),
               "'s kind (DataParallel runs on one kind of device)");
      if (comma == list.size()) break;
      at = comma + 1;
    }
    RG_CHECK(dp == 0 || dp == static_cast<int>(devices.size()), "--dp ", dp, " but --dp-devices '",
             list, "' names ", devices.size(), " devices");
    return devices;
  }
  const Device base = Device::parse(device_flag);
  for (int i = 0; i < dp; ++i)
    devices.push_back(base.is_cpu() ? Device::cpu(i)
                                    : Device::cuda(gpu_count > 0 ? i % gpu_count : i));
  return devices;
}

bool shares_a_device(const std::vector<Device>& devices) {
  for (std::size_t b = 0; b < devices.size(); ++b)
    for (std::size_t a = 0; a < b; ++a)
      if (devices[a] == devices[b]) return true;
  return false;
}

}  // namespace rg::train
