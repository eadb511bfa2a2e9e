// The CUDA execution emulator (see emulator.h): a team of OS threads per launch, one per CUDA
// thread of a block, and one mutex + condition variable for every barrier of the launch.
#include "core/cuda/emulator.h"

#include <array>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

thread_local dim3 threadIdx;
thread_local dim3 blockIdx;
thread_local dim3 blockDim;
thread_local dim3 gridDim;

namespace rg::emu {
namespace {

// Limits of every current NVIDIA GPU; dynamic shared memory above 48 KiB needs an opt-in
// attribute on the GPU, which ringgrad's kernels do not use.
constexpr unsigned kMaxThreadsPerBlock = 1024;
constexpr unsigned kMaxBlockZ = 64;
constexpr unsigned kMaxGridYZ = 65535;
constexpr std::size_t kMaxDynamicShared = 48 * 1024;

// Thrown in the threads of a launch that another thread has failed: they leave quietly, the
// launch rethrows the first real error.
struct Aborted {};

struct Warp {
  std::condition_variable cv;  // its lanes wait here: a shuffle wakes 32 threads, not the block
  int lanes = 0;
  unsigned mask = 0;  // the lanes that exist
  int arrived = 0;
  int exited = 0;
  uint64_t generation = 0;
  std::array<uint64_t, 32> slots{};
};

struct Launch {
  int threads = 0;
  std::mutex mutex;
  std::condition_variable sync_cv;  // __syncthreads
  std::condition_variable done_cv;  // the end of a block
  int arrived = 0;                  // at __syncthreads
  int exited = 0;                   // returned from the kernel for this block
  uint64_t sync_generation = 0;
  uint64_t block_generation = 0;
  std::deque<Warp> warps;
  std::unique_ptr<std::max_align_t[]> shared;
  std::size_t shared_bytes = 0;
  bool aborted = false;
  std::exception_ptr error;

  // Under the lock: fail the launch with `message`, wake everyone, throw in this thread.
  [[noreturn]] void abort(const std::string& message) {
    if (!aborted) {
      aborted = true;
      error = std::make_exception_ptr(Error("cuda emulator: " + message));
      wake_all();
    }
    throw Aborted{};
  }
  // Every thread is at some barrier or gone, and none of them completed one: nobody is left to
  // release anyone. (Arrival counts drop to 0 when a barrier releases, so this never counts a
  // released thread that has not woken yet.)
  bool stuck() const {
    int blocked = arrived + exited;
    for (const Warp& w : warps) blocked += w.arrived;
    return blocked == threads;
  }
  void wake_all() {
    sync_cv.notify_all();
    done_cv.notify_all();
    for (Warp& w : warps) w.cv.notify_all();
  }
  // Under the lock, after counting this thread's arrival: wait on `cv` until `done()`.
  template <class Done>
  void wait(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, Done done) {
    if (stuck())
      abort(
          "deadlock: the threads of a block wait at different barriers (__syncthreads or a "
          "warp intrinsic in divergent code)");
    cv.wait(lock, [&] { return aborted || done(); });
    if (aborted) throw Aborted{};
  }
};

Launch* g_launch = nullptr;  // the launch in progress (launches are serialised)
std::mutex g_launch_mutex;
thread_local int t_thread = 0;  // linear thread index in the block

Warp& my_warp() {
  return g_launch->warps[t_thread / warpSize];
}

void warp_barrier(Launch& l, Warp& w, std::unique_lock<std::mutex>& lock) {
  const uint64_t generation = w.generation;
  if (++w.arrived == w.lanes) {
    w.arrived = 0;
    ++w.generation;
    w.cv.notify_all();
    return;
  }
  l.wait(lock, w.cv, [&] { return w.generation != generation; });
}

void check_warp_call(Launch& l, const Warp& w, unsigned mask, const char* what) {
  if (mask != w.mask)
    l.abort(std::string(what) + " with mask " + std::to_string(mask) + ": the emulator runs only " +
            "full-mask warp intrinsics (this warp's lanes: " + std::to_string(w.mask) + ")");
  if (w.exited > 0)
    l.abort(std::string(what) + " after a lane of the warp returned (undefined on the GPU)");
}

// A thread has returned from the kernel for this block; the last one resets the block.
void exit_block(Launch& l) {
  std::unique_lock lock(l.mutex);
  if (l.aborted) throw Aborted{};
  Warp& w = my_warp();
  ++w.exited;
  if (w.arrived > 0) l.abort("a lane returned while others of its warp waited in a warp intrinsic");
  ++l.exited;
  if (l.exited == l.threads) {
    l.exited = 0;
    l.arrived = 0;
    for (Warp& each : l.warps) each.exited = 0;
    std::memset(l.shared.get(), 0xFF, l.shared_bytes);
    ++l.block_generation;
    l.done_cv.notify_all();
    return;
  }
  if (l.arrived > 0 && l.arrived + l.exited == l.threads) {  // the rest wait at __syncthreads
    l.arrived = 0;
    ++l.sync_generation;
    l.sync_cv.notify_all();
  }
  const uint64_t generation = l.block_generation;
  l.wait(lock, l.done_cv, [&] { return l.block_generation != generation; });  // block's end
}

void run_thread(Launch& l, int thread, dim3 grid, dim3 block, const std::function<void()>& body) {
  t_thread = thread;
  threadIdx = dim3(thread % block.x, thread / block.x % block.y, thread / (block.x * block.y));
  blockDim = block;
  gridDim = grid;
  try {
    for (unsigned z = 0; z < grid.z; ++z)
      for (unsigned y = 0; y < grid.y; ++y)
        for (unsigned x = 0; x < grid.x; ++x) {
          blockIdx = dim3(x, y, z);
          try {
            body();
          } catch (const Aborted&) {
            throw;
          } catch (...) {
            std::unique_lock lock(l.mutex);
            if (!l.aborted) {
              l.aborted = true;
              l.error = std::current_exception();
              l.wake_all();
            }
            return;
          }
          exit_block(l);
        }
  } catch (const Aborted&) {
  }
}

}  // namespace

void launch(dim3 grid, dim3 block, std::size_t dynamic_shared_bytes,
            const std::function<void()>& body) {
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  RG_CHECK(threads >= 1 && threads <= kMaxThreadsPerBlock && block.z <= kMaxBlockZ,
           "cuda emulator: invalid block (", block.x, ", ", block.y, ", ", block.z,
           "): 1 to 1024 threads, z at most 64");
  RG_CHECK(grid.x >= 1 && grid.y >= 1 && grid.z >= 1 && grid.y <= kMaxGridYZ &&
               grid.z <= kMaxGridYZ && grid.x <= 0x7fffffffu,
           "cuda emulator: invalid grid (", grid.x, ", ", grid.y, ", ", grid.z, ")");
  RG_CHECK(dynamic_shared_bytes <= kMaxDynamicShared, "cuda emulator: ", dynamic_shared_bytes,
           " bytes of dynamic shared memory requested, at most ", kMaxDynamicShared);

  std::lock_guard serial(g_launch_mutex);
  Launch l;
  l.threads = static_cast<int>(threads);
  const std::size_t words =
      (dynamic_shared_bytes + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t);
  l.shared = std::make_unique<std::max_align_t[]>(std::max<std::size_t>(words, 1));
  l.shared_bytes = dynamic_shared_bytes;
  std::memset(l.shared.get(), 0xFF, l.shared_bytes);
  for (int first = 0; first < l.threads; first += warpSize) {
    Warp& w = l.warps.emplace_back();
    w.lanes = std::min(warpSize, l.threads - first);
    w.mask = w.lanes == 32 ? 0xffffffffu : (1u << w.lanes) - 1;
  }
  g_launch = &l;
  {
    std::vector<std::jthread> team;
    team.reserve(threads);
    for (int t = 0; t < l.threads; ++t)
      team.emplace_back([&, t] { run_thread(l, t, grid, block, body); });
  }
  g_launch = nullptr;
  if (l.error) std::rethrow_exception(l.error);
}

void sync_block() {
  Launch& l = *g_launch;
  std::unique_lock lock(l.mutex);
  if (l.aborted) throw Aborted{};
  const uint64_t generation = l.sync_generation;
  if (++l.arrived + l.exited == l.threads) {
    l.arrived = 0;
    ++l.sync_generation;
    l.sync_cv.notify_all();
    return;
  }
  l.wait(lock, l.sync_cv, [&] { return l.sync_generation != generation; });
}

void* dynamic_shared() {
  return g_launch->shared.get();
}

int lane_id() {
  return t_thread % warpSize;
}

uint64_t warp_exchange(unsigned mask, uint64_t bits, int source_lane) {
  Launch& l = *g_launch;
  std::unique_lock lock(l.mutex);
  if (l.aborted) throw Aborted{};
  Warp& w = my_warp();
  check_warp_call(l, w, mask, "warp shuffle");
  if (source_lane < 0 || source_lane >= w.lanes) source_lane = lane_id();
  w.slots[lane_id()] = bits;
  warp_barrier(l, w, lock);  // every lane has written
  const uint64_t result = w.slots[source_lane];
  warp_barrier(l, w, lock);  // every lane has read: the slots may be written again
  return result;
}

unsigned warp_ballot(unsigned mask, bool flag) {
  Launch& l = *g_launch;
  std::unique_lock lock(l.mutex);
  if (l.aborted) throw Aborted{};
  Warp& w = my_warp();
  check_warp_call(l, w, mask, "warp vote");
  w.slots[lane_id()] = flag ? 1 : 0;
  warp_barrier(l, w, lock);
  unsigned ballot = 0;
  for (int lane = 0; lane < w.lanes; ++lane)
    if (w.slots[lane]) ballot |= 1u << lane;
  warp_barrier(l, w, lock);
  return ballot;
}

void sync_warp(unsigned mask) {
  Launch& l = *g_launch;
  std::unique_lock lock(l.mutex);
  if (l.aborted) throw Aborted{};
  Warp& w = my_warp();
  check_warp_call(l, w, mask, "__syncwarp");
  warp_barrier(l, w, lock);
}

}  // namespace rg::emu
