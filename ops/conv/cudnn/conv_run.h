#pragma once
// Running a convolution on a GPU through cuDNN: the plan for a problem is built once per
// device, alignment and mode (conv_plan.h) — the heuristics' first, or the fastest of their
// first few when benchmarking — and cached; each run binds the data pointers and a
// workspace from the caching allocator and queues the plan on the current stream. CUDA builds.

#include "core/tensor.h"
#include "ops/conv/cudnn/conv_plan.h"

namespace rg::cuda {

// How run_conv picks a problem's plan (the caller's mode, ops/conv/conv.h): the plan cuDNN's
// heuristics rank first; only engines cuDNN does not mark nondeterministic; or the fastest of
// cuDNN's first candidates, timed on the problem's first run.
enum class ConvPlanMode { heuristic, deterministic, benchmark };

// Runs `problem` on the tensors' GPU: forward writes y from x and w, backward_data writes x
// from y and w, backward_filter writes w from x and y. The tensors must match the problem's
// shapes, strides and dtype, on one device. Plans are cached per mode.
void run_conv(const ConvProblem& problem, const Tensor& x, const Tensor& w, const Tensor& y,
              ConvPlanMode mode);

// The memory format every operand of a cuDNN convolution runs in: channels_last (4-D) or
// channels_last_3d (5-D) when `activation` or `weight` is in it (and not plainly contiguous),
// else contiguous — PyTorch's cudnn_conv_suggest_memory_format.
MemoryFormat conv_memory_format(const Tensor& activation, const Tensor& weight);

// The problem of a convolution of these tensors (their shapes and strides).
ConvProblem conv_problem(ConvDirection direction, const Tensor& x, const Tensor& w, const Tensor& y,
                         const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                         const std::vector<int64_t>& dilation);

}  // namespace rg::cuda
