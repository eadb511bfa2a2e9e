#pragma once
// Library handles (cuBLAS, cuDNN) per host thread and device: a handle must not be used by two
// threads at once, and creating one costs milliseconds, so the handles of threads that end go
// back to a pool for the next thread (DataParallel starts threads every step), as PyTorch does.
// Handles are never destroyed: at process exit the CUDA context may already be gone.

#include <mutex>
#include <unordered_map>
#include <vector>

namespace rg::cuda {

// Create: Handle(int device), called with `device` current; throws on failure.
template <class Handle, class Create>
Handle thread_handle(int device, Create create) {
  // One pool per handle type (per instantiation), leaked on purpose (see above).
  static std::mutex& mutex = *new std::mutex;
  static auto& pool = *new std::unordered_map<int, std::vector<Handle>>;
  struct Mine {
    std::unordered_map<int, Handle> by_device;
    ~Mine() {
      std::lock_guard lock(mutex);
      for (const auto& [d, h] : by_device) pool[d].push_back(h);
    }
  };
  thread_local Mine mine;
  if (auto it = mine.by_device.find(device); it != mine.by_device.end()) return it->second;
  Handle handle{};
  {
    std::lock_guard lock(mutex);
    auto& free = pool[device];
    if (!free.empty()) {
      handle = free.back();
      free.pop_back();
    }
  }
  if (!handle) handle = create(device);
  mine.by_device.emplace(device, handle);
  return handle;
}

}  // namespace rg::cuda
