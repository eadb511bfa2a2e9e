#pragma once
// Convolutions as cuDNN graphs: forward, backward-data and backward-filter of conv2d,
// conv_transpose2d (its forward is a backward-data) and N-d convolution, in any of the
// project's floating dtypes. CUDA builds only.
//
// A problem becomes an operation graph (tensor, convolution and operation descriptors), cuDNN's
// heuristics (mode A, else the fallback list) rank engine configurations for a device, and each is
// finalised into an execution plan with its workspace size until the options' filters are met. All
// of this runs without a GPU when the device is described by JSON (core/cuda/cudnn_backend.h);
// cuDNN checks shapes when the graph is finalised, and its message ends up in the rg::Error.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/cuda/cudnn_backend.h"
#include "core/dtype.h"
#include "core/tensor.h"

namespace rg::cuda {

enum class ConvDirection { forward, backward_data, backward_filter };

// y = conv(x, w): x (N, C, spatial...), w (K, C / groups, kernel...), y (N, K, out...), with
// 1 to 3 spatial dims. Strides left empty mean contiguous (NCHW). Groups follow from C and w's
// second dim. forward computes y, backward_data x (from y and w), backward_filter w (from x and
// y), each with f32 accumulation (f64 for f64).
struct ConvProblem {
  ConvDirection direction = ConvDirection::forward;
  DType dtype = DType::f32;
  Shape x, w, y;
  Shape x_strides, w_strides, y_strides;
  std::vector<int64_t> stride, padding, dilation;
  std::string describe()
      const;  // "conv forward f16 x [8, 64, 32, 32] w [...] ... stride [1, 1] ..."
};

// The tensors' unique ids in the graph: what a variant pack binds pointers to.
inline constexpr int64_t kConvX = 'x', kConvW = 'w', kConvY = 'y';

struct ConvPlanOptions {
  bool deterministic = false;  // only engines without CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC
  // f32 on tensor cores computes in TF32 (engines noted TENSOR_CORE or DOWN_CONVERT_INPUTS).
  // Off by default, so f32 results match the CPU's to f32 precision (PyTorch's default for
  // cuDNN is on: torch.backends.cudnn.allow_tf32).
  bool allow_tf32 = false;
  int64_t alignment = 16;  // bytes: the smallest alignment of the tensors' data pointers
  int max_plans = 1;       // stop after this many finalised plans
  // After mode A's engines, also the fallback list's (benchmarking: more candidates to time, as
  // PyTorch's benchmark mode also takes both); otherwise the fallback only where mode A has none.
  bool fallback_too = false;
};

struct ConvPlan {
  CudnnDescriptor plan;
  int64_t workspace_bytes = 0;
  int64_t engine = -1;        // cuDNN's global engine index, for logs
  bool tensor_cores = false;  // the engine is noted TENSOR_CORE or DOWN_CONVERT_INPUTS
};

// The output shape of a convolution (PyTorch's formula), checked to be positive.
Shape conv_output_shape(const Shape& x, const Shape& w, const std::vector<int64_t>& stride,
                        const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation);

// Finalised plans for `problem` on the device `device_props`, best first per cuDNN's
// heuristics. Throws when the problem is invalid (cuDNN's reason included) or no engine
// configuration passes the filters.
std::vector<ConvPlan> conv_plans(const ConvProblem& problem, const CudnnDescriptor& device_props,
                                 const ConvPlanOptions& options = {});

// Benchmark mode's choice among `count` candidate plans: time(i) runs candidate i and returns
// its milliseconds, or throws rg::Error when it cannot run (its workspace does not fit, say), and
// is then passed over. The fastest's index; the first of equals. Throws, with every candidate's
// error, when none runs.
std::size_t fastest_candidate(std::size_t count, const std::function<float(std::size_t)>& time,
                              const std::string& what);

}  // namespace rg::cuda
