// Plan cache and execution of cuDNN convolutions (see conv_run.h).
#include "ops/conv/cudnn/conv_run.h"

#include <map>
#include <memory>
#include <mutex>

#include "core/cuda/handle_pool.h"
#include "core/cuda/stream.h"
#include "core/launch_counts.h"

namespace rg::cuda {
namespace {

cudnnHandle_t cudnn_handle(int device, cudaStream_t stream) {
  const cudnnHandle_t handle = thread_handle<cudnnHandle_t>(device, [](int d) {
    cudnnHandle_t created = nullptr;
    RG_CUDNN_CHECK(cudnnCreate(&created), "cuDNN on cuda:", d);
    return created;
  });
  RG_CUDNN_CHECK(cudnnSetStream(handle, stream), "cuDNN on cuda:", device);
  return handle;
}

// The device's properties, read once from the device through a handle.
const CudnnDescriptor& device_properties(int device, cudnnHandle_t handle) {
  static std::mutex mutex;
  static auto& cache = *new std::map<int, CudnnDescriptor>;
  std::lock_guard lock(mutex);
  auto it = cache.find(device);
  if (it == cache.end()) {
    CudnnDescriptor props(CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR,
                          "cuDNN device properties of cuda:" + std::to_string(device));
    props.set(CUDNN_ATTR_DEVICEPROP_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle).finalize();
    it = cache.emplace(device, std::move(props)).first;
  }
  return it->second;
}

// The largest power of two up to 16 dividing every pointer: cuDNN plans are specific to it.
int64_t alignment_of(std::initializer_list<const void*> pointers) {
  int64_t alignment = 16;
  for (const void* p : pointers)
    while (reinterpret_cast<std::uintptr_t>(p) % static_cast<std::uintptr_t>(alignment) != 0)
      alignment /= 2;
  return alignment;
}

// Queues `plan` on the handle's stream for the tensors' data. The workspace comes from the
// caching allocator on this stream, and goes back to it after the convolution in stream order.
void execute(cudnnHandle_t handle, const ConvPlan& plan, const Tensor& x, const Tensor& w,
             const Tensor& y, const std::string& what) {
  const Tensor workspace =
      empty({std::max<int64_t>(plan.workspace_bytes, 1)}, {DType::u8, x.device()});
  void* pointers[] = {x.data_ptr(), w.data_ptr(), y.data_ptr()};
  const int64_t ids[] = {kConvX, kConvW, kConvY};
  void* workspace_ptr = workspace.data_ptr();
  CudnnDescriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, what + " (variant pack)");
  pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers)
      .set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, ids)
      .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace_ptr)
      .finalize();
  count_launch(Launch::library_call);
  RG_CUDNN_CHECK(cudnnBackendExecute(handle, plan.plan.get(), pack.get()), what);
}

// Candidates timed when benchmarking, mode A's and then the fallback list's: enough to hold the
// fast engines the heuristics rank below their first, few enough that a network's first step
// stays short. On an H200 (ResNet18, batch 128, f32, 30-40 steps, five alternations over two
// leases) 16 from both lists ran 1.4-3.5 % more images/s than 8 from mode A alone; on an H100
// cuDNN offered 7 to 10 per problem of that net (f32), so 16 take them all.
constexpr int kBenchmarkCandidates = 16;

// The fastest of `plans` on these tensors (fastest_candidate): each runs once untimed
// (first-launch costs), then twice between timing events, and the host waits for each. The runs
// write only the problem's output tensor, which the caller's own run then overwrites (alpha 1,
// beta 0). A plan that fails to run is passed over, as PyTorch's benchmark does.
std::size_t fastest_plan(const std::vector<ConvPlan>& plans, cudnnHandle_t handle,
                         cudaStream_t stream, const Tensor& x, const Tensor& w, const Tensor& y,
                         const std::string& what) {
  const int device = x.device().index;
  return fastest_candidate(
      plans.size(),
      [&](std::size_t i) {
        Event start(device, EventTiming::enabled), end(device, EventTiming::enabled);
        execute(handle, plans[i], x, w, y, what);
        start.record(stream);
        for (int run = 0; run < 2; ++run) execute(handle, plans[i], x, w, y, what);
        end.record(stream);
        end.synchronize();
        return start.elapsed_ms(end);
      },
      what);
}

struct PlanChoice {
  ConvPlanOptions options;
  bool benchmark = false;  // time the candidates (ConvPlanMode::benchmark)
};

std::shared_ptr<const ConvPlan> cached_plan(const ConvProblem& problem, int device,
                                            const PlanChoice& choice, cudnnHandle_t handle,
                                            cudaStream_t stream, const Tensor& x, const Tensor& w,
                                            const Tensor& y) {
  static std::mutex mutex;
  static auto& cache = *new std::map<std::string, std::shared_ptr<const ConvPlan>>;
  const ConvPlanOptions& options = choice.options;
  std::string key =
      problem.describe() + " x_strides " + shape_str(problem.x_strides) + " w_strides " +
      shape_str(problem.w_strides) + " y_strides " + shape_str(problem.y_strides) +
      " on cuda:" + std::to_string(device) + " alignment " + std::to_string(options.alignment) +
      (options.deterministic ? " deterministic" : "") + (choice.benchmark ? " benchmark" : "");
  {
    std::lock_guard lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  // Built outside the lock (heuristics take milliseconds, benchmarks more); a race builds it
  // twice, harmlessly.
  std::vector<ConvPlan> plans = conv_plans(problem, device_properties(device, handle), options);
  const std::size_t chosen = choice.benchmark && plans.size() > 1
                                 ? fastest_plan(plans, handle, stream, x, w, y, problem.describe())
                                 : 0;
  auto plan = std::make_shared<const ConvPlan>(std::move(plans[chosen]));
  std::lock_guard lock(mutex);
  return cache.emplace(std::move(key), std::move(plan)).first->second;
}

}  // namespace

MemoryFormat conv_memory_format(const Tensor& activation, const Tensor& weight) {
  for (const Tensor* t : {&activation, &weight})
    if (const MemoryFormat f = t->suggest_memory_format(); f != MemoryFormat::contiguous) return f;
  return MemoryFormat::contiguous;
}

ConvProblem conv_problem(ConvDirection direction, const Tensor& x, const Tensor& w, const Tensor& y,
                         const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                         const std::vector<int64_t>& dilation) {
  ConvProblem p;
  p.direction = direction;
  p.dtype = x.dtype();
  p.x = x.shape();
  p.w = w.shape();
  p.y = y.shape();
  p.x_strides = x.strides();
  p.w_strides = w.strides();
  p.y_strides = y.strides();
  p.stride = stride;
  p.padding = padding;
  p.dilation = dilation;
  return p;
}

void run_conv(const ConvProblem& problem, const Tensor& x, const Tensor& w, const Tensor& y,
              ConvPlanMode mode) {
  const std::string what = problem.describe();
  RG_CHECK(x.device().is_cuda() && w.device() == x.device() && y.device() == x.device(), what,
           ": tensors on one GPU expected, got ", x.describe(), ", ", w.describe(), ", ",
           y.describe());
  RG_CHECK(x.dtype() == problem.dtype && w.dtype() == problem.dtype && y.dtype() == problem.dtype,
           what, ": dtype mismatch");
  const int device = x.device().index;
  DeviceGuard guard(device);
  const cudaStream_t stream = current_stream(device);
  const cudnnHandle_t handle = cudnn_handle(device, stream);
  PlanChoice choice;
  choice.options.deterministic = mode == ConvPlanMode::deterministic;
  choice.options.alignment = alignment_of({x.data_ptr(), w.data_ptr(), y.data_ptr()});
  choice.benchmark = mode == ConvPlanMode::benchmark;
  if (choice.benchmark) {
    choice.options.max_plans = kBenchmarkCandidates;
    choice.options.fallback_too = true;
  }
  const std::shared_ptr<const ConvPlan> plan =
      cached_plan(problem, device, choice, handle, stream, x, w, y);
  execute(handle, *plan, x, w, y, what);
}

}  // namespace rg::cuda
