#!/usr/bin/env python3
"""Writes a complete new op into the tree: scripts/new_op.sh NAME [--pointwise|--custom|--reduction].

The generated op builds and passes its tests at once. Its formula is a placeholder — y = x³
(backward gx = 3·x²·gy), or for --reduction y = Σ x² over the last dim (gx = 2·x·gy) — written
in every place the math lives (functors or kernels, the header's comment, the PyTorch fixture
module): replace it there, then regenerate the fixture.

--pointwise (default): the math is a pair of RG_HOST_DEVICE functors that the elementwise
  engine applies on the CPU and in its CUDA grid-stride kernel (ops/relu is the model).
--custom: the op owns its kernels: a CPU kernel (<op>_cpu.cpp, parallel_for) and CUDA kernels
  with a launcher in <op>_kernels.cuh that nvcc compiles for the GPU and the host compiler
  compiles against the kernel emulator for the tests (ops/softmax is the model).
--reduction: as --custom, for an op that reduces the last dim: a block per row combines its
  elements with the warp-shuffle tree of core/cuda/reduce_kernels.cuh.

What it writes (ops/README.md, "Add an op with the scaffold", walks through it):
  ops/<op>/...                         the op's folder
  tests/ops/<op>_test.cpp              gradcheck (f64), PyTorch parity, bad inputs, devices
  tests/kernels/<op>_kernels_test.cpp  (custom, reduction) the CUDA kernels, emulated, against the CPU
  tools/fixtures/<op>.py               the PyTorch reference; tests/fixtures/<op>.safetensors
                                       when a Python with torch is found (--python)
and one line in each registry: apps/bench_ops_registry.h (the benchmark),
tests/gpu/ops_parity_test.cpp (GPU parity) and, for --pointwise,
tests/kernels/pointwise_kernels_test.cpp (emulated kernel parity). CMake finds the op's folder
and ops/ops.h is generated (ops/CMakeLists.txt): no line to add there.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARK = "new_op.sh adds"  # registries carry a comment with these words where lines go


def camel(name):
    return "".join(part.capitalize() for part in name.split("_"))


def header(name, kind):
    where = ("the functors in {n}_functors.h, applied by the elementwise engine"
             if kind == "pointwise" else
             "{n}_cpu.cpp (CPU) and {n}_kernels.cuh (CUDA, and the emulator in the tests)")
    return f"""#pragma once
// {name}(x) = x³, elementwise. (The scaffold's placeholder formula: replace it here, in the
// math — {where.format(n=name)} — and in tools/fixtures/{name}.py.)
// Backward: gx = 3·x²·gy. The node captures the input x (the output alone cannot give x²
// without a cube root).
// x: any shape, a floating dtype (f32, f64, f16, bf16), any device with a kernel.

#include "core/tensor.h"

namespace rg {{

Tensor {name}(const Tensor& x);

}}  // namespace rg
"""


def pointwise_files(name):
    C = camel(name)
    functors = f"""#pragma once
// Host/device math of {name}, shared by the CPU loop and the CUDA kernel.

#include "core/macros.h"

namespace rg {{

struct {C}Fn {{
  template <class C>
  RG_HOST_DEVICE C operator()(C x) const {{
    return x * x * x;
  }}
}};

struct {C}GradFn {{  // (gy, x) -> gx = 3·x²·gy
  template <class C>
  RG_HOST_DEVICE C operator()(C gy, C x) const {{
    return C(3) * x * x * gy;
  }}
}};

}}  // namespace rg
"""
    cpp = f"""#include "ops/{name}/{name}.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"
#include "ops/{name}/{name}_functors.h"

namespace rg {{
namespace {{

class {C}Backward : public Node {{
 public:
  explicit {C}Backward(Tensor x) : x_(std::move(x)) {{}}
  std::string name() const override {{ return "{C}Backward"; }}
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {{
    return {{pointwise("{name}_backward", {C}GradFn{{}}, g[0], x_)}};
  }}
  void release_saved() override {{ x_ = Tensor(); }}

 private:
  Tensor x_;
}};

}}  // namespace

Tensor {name}(const Tensor& x) {{
  check_same_float("{name}", {{x}});
  // pointwise() picks the device's kernel (core/dispatch.h): the CPU loop or the CUDA kernel.
  Tensor y = pointwise("{name}", {C}Fn{{}}, x);
  if (needs_grad({{x}})) record(std::make_shared<{C}Backward>(saved(x)), {{x}}, {{&y}});
  return y;
}}

}}  // namespace rg
"""
    cu = f"""// The CUDA kernels of {name}: the elementwise engine's grid-stride kernel, built for the
// functors that {name} and its backward apply (the CPU loop applies the same ones).
#include "ops/elementwise/elementwise_cuda.cuh"
#include "ops/{name}/{name}_functors.h"

RG_POINTWISE_CUDA(rg::{C}Fn, 1);
RG_POINTWISE_CUDA(rg::{C}GradFn, 2);
"""
    return {
        f"ops/{name}/{name}.h": header(name, "pointwise"),
        f"ops/{name}/{name}_functors.h": functors,
        f"ops/{name}/{name}.cpp": cpp,
        f"ops/{name}/{name}_cuda.cu": cu,
    }


def custom_files(name):
    C = camel(name)
    kernel_h = f"""#pragma once
// The CPU kernels of {name} (ops/{name}/{name}_cpu.cpp), declared for {name}.cpp. Contiguous
// tensors of one dtype; the op makes them so.

#include "core/tensor.h"

namespace rg {{

// y = x³ elementwise. y, x: n elements.
void {name}_forward_cpu(const Tensor& y, const Tensor& x);
// gx = 3·x²·gy elementwise (forward and backward side by side: outputs, then inputs).
void {name}_backward_cpu(const Tensor& gx, const Tensor& gy, const Tensor& x);

}}  // namespace rg
"""
    cpu = f"""// The CPU kernels of {name}: the plain reference that the CUDA kernels are tested against.
#include "core/dispatch.h"
#include "core/half.h"
#include "core/thread_pool.h"
#include "ops/{name}/{name}_kernel.h"

namespace rg {{
namespace {{

// Below this many elements a chunk is not worth a thread.
constexpr int64_t kGrain = 1 << 14;

}}  // namespace

void {name}_forward_cpu(const Tensor& y, const Tensor& x) {{
  dispatch_floating(x.dtype(), "{name}", [&](auto tag) {{
    using T = decltype(tag);
    using A = compute_t<T>;  // 16-bit types compute in f32 and round once, as on the GPU
    const T* in = x.data<T>();
    T* out = y.data<T>();
    parallel_for(x.numel(), kGrain, [&](int64_t lo, int64_t hi) {{
      for (int64_t i = lo; i < hi; ++i) {{
        const A v = static_cast<A>(in[i]);
        out[i] = static_cast<T>(v * v * v);
      }}
    }});
  }});
}}

void {name}_backward_cpu(const Tensor& gx, const Tensor& gy, const Tensor& x) {{
  dispatch_floating(x.dtype(), "{name}_backward", [&](auto tag) {{
    using T = decltype(tag);
    using A = compute_t<T>;  // 16-bit types compute in f32 and round once, as on the GPU
    const T* g = gy.data<T>();
    const T* in = x.data<T>();
    T* out = gx.data<T>();
    parallel_for(x.numel(), kGrain, [&](int64_t lo, int64_t hi) {{
      for (int64_t i = lo; i < hi; ++i) {{
        const A v = static_cast<A>(in[i]);
        out[i] = static_cast<T>(A(3) * v * v * static_cast<A>(g[i]));
      }}
    }});
  }});
}}

}}  // namespace rg
"""
    cuh = f"""#pragma once
// The CUDA kernels of {name} and their launchers. nvcc compiles this header for the GPU
// ({name}_cuda.cu); the host compiler compiles it against the kernel emulator for the tests
// (tests/kernels/{name}_kernels_test.cpp), so keep to what core/cuda/kernel.h provides.

#include <algorithm>

#include "core/cuda/kernel.h"
#include "core/dispatch.h"
#include "core/half.h"
#include "core/tensor.h"

// The inline namespace keeps these nvcc-built and emulated definitions apart (core/cuda/kernel.h).
namespace rg {{
inline namespace RG_KERNEL_BUILD {{
namespace {name}_cuda {{

// Grid-stride loops: any n runs on a grid capped at kMaxBlocks.
constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;

template <class T>
__global__ void forward_kernel(T* y, const T* x, int64_t n) {{
  using A = compute_t<T>;  // f32 for the 16-bit types, as on the CPU
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {{
    const A v = static_cast<A>(x[i]);
    y[i] = static_cast<T>(v * v * v);
  }}
}}

template <class T>
__global__ void backward_kernel(T* gx, const T* gy, const T* x, int64_t n) {{
  using A = compute_t<T>;  // f32 for the 16-bit types, as on the CPU
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {{
    const A v = static_cast<A>(x[i]);
    gx[i] = static_cast<T>(A(3) * v * v * static_cast<A>(gy[i]));
  }}
}}

inline unsigned blocks_for(int64_t n) {{
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, kMaxBlocks));
}}

}}  // namespace {name}_cuda

// ---- kernel launchers: contiguous tensors of one dtype, on the stream given ----

inline void launch_{name}_forward(const Tensor& y, const Tensor& x, cudaStream_t stream) {{
  const int64_t n = x.numel();
  if (n == 0) return;  // a launch of 0 blocks is an error
  dispatch_floating(x.dtype(), "{name}", [&](auto tag) {{
    using T = decltype(tag);
    cuda::launch({name}_cuda::forward_kernel<T>, dim3({name}_cuda::blocks_for(n)),
                 dim3({name}_cuda::kThreads), 0, stream, y.data<T>(), x.data<T>(), n);
  }});
}}

inline void launch_{name}_backward(const Tensor& gx, const Tensor& gy, const Tensor& x,
                                   cudaStream_t stream) {{
  const int64_t n = x.numel();
  if (n == 0) return;
  dispatch_floating(x.dtype(), "{name}_backward", [&](auto tag) {{
    using T = decltype(tag);
    cuda::launch({name}_cuda::backward_kernel<T>, dim3({name}_cuda::blocks_for(n)),
                 dim3({name}_cuda::kThreads), 0, stream, gx.data<T>(), gy.data<T>(), x.data<T>(),
                 n);
  }});
}}

}}  // inline namespace RG_KERNEL_BUILD
}}  // namespace rg
"""
    cu = f"""// The CUDA side of {name}: the OnCuda overloads that dispatch_device calls in {name}.cpp.
// The kernels live in {name}_kernels.cuh, which the emulator tests also compile.
#include "core/cuda/stream.h"
#include "ops/{name}/{name}_cuda.h"
#include "ops/{name}/{name}_kernels.cuh"

namespace rg {{

Tensor {name}_forward(OnCuda, const Tensor& x) {{
  Tensor y = empty(x.shape(), {{x.dtype(), x.device()}});
  cuda::DeviceGuard guard(x.device().index);
  launch_{name}_forward(y, x, cuda::current_stream(x.device().index));
  return y;
}}

Tensor {name}_backward(OnCuda, const Tensor& gy, const Tensor& x) {{
  Tensor gx = empty(x.shape(), {{x.dtype(), x.device()}});
  cuda::DeviceGuard guard(x.device().index);
  launch_{name}_backward(gx, gy, x, cuda::current_stream(x.device().index));
  return gx;
}}

}}  // namespace rg
"""
    cuda_h = f"""#pragma once
// The CUDA entry points of {name} (defined in {name}_cuda.cu, built only with the CUDA
// backend). {name}.cpp names them through dispatch_device, which instantiates the call only
// in CUDA builds: a CPU-only build never references them.

#include "core/dispatch.h"
#include "core/tensor.h"

namespace rg {{

Tensor {name}_forward(OnCuda, const Tensor& x);            // x contiguous
Tensor {name}_backward(OnCuda, const Tensor& gy, const Tensor& x);  // gy, x contiguous

}}  // namespace rg
"""
    cpp = f"""#include "ops/{name}/{name}.h"

#include "core/autograd.h"
#include "core/dispatch.h"
#include "ops/elementwise/elementwise.h"
#include "ops/{name}/{name}_cuda.h"
#include "ops/{name}/{name}_kernel.h"

namespace rg {{
namespace {{

Tensor {name}_forward(OnCpu, const Tensor& x) {{
  Tensor y = empty(x.shape(), {{x.dtype(), x.device()}});
  {name}_forward_cpu(y, x);
  return y;
}}

Tensor {name}_backward(OnCpu, const Tensor& gy, const Tensor& x) {{
  Tensor gx = empty(x.shape(), {{x.dtype(), x.device()}});
  {name}_backward_cpu(gx, gy, x);
  return gx;
}}

class {C}Backward : public Node {{
 public:
  explicit {C}Backward(Tensor x) : x_(std::move(x)) {{}}
  std::string name() const override {{ return "{C}Backward"; }}
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {{
    check_same_float("{name}_backward", {{g[0], x_}});
    const Tensor gy = g[0].contiguous();
    return {{dispatch_device<Kernels::cpu_and_cuda>("{name}_backward", x_.device(),
                                                   [&](auto on) {{ return {name}_backward(on, gy, x_); }})}};
  }}
  void release_saved() override {{ x_ = Tensor(); }}

 private:
  Tensor x_;  // contiguous
}};

}}  // namespace

Tensor {name}(const Tensor& x) {{
  check_same_float("{name}", {{x}});
  // The kernels read contiguous memory: a strided input is copied once, here.
  const Tensor xc = x.contiguous();
  Tensor y = dispatch_device<Kernels::cpu_and_cuda>(
      "{name}", x.device(), [&](auto on) {{ return {name}_forward(on, xc); }});
  if (needs_grad({{x}})) record(std::make_shared<{C}Backward>(saved(xc)), {{x}}, {{&y}});
  return y;
}}

}}  // namespace rg
"""
    kernels_test = f"""// The CUDA kernels of {name} ({name}_kernels.cuh) run through the emulator against the CPU
// kernels, forward and backward, in every floating dtype, on sizes that leave partial blocks.
#include <gtest/gtest.h>

#include "core/rng.h"
#include "ops/ops.h"
#include "ops/{name}/{name}_kernel.h"
#include "ops/{name}/{name}_kernels.cuh"
#include "tests/kernels/kernel_test_util.h"
#include "tests/support/fixtures.h"

namespace rg {{
namespace {{
using namespace rg::testing;

Tensor values(const Shape& shape, DType dtype, uint64_t seed) {{
  manual_seed(seed);
  return add(mul(rand(shape, {{DType::f64}}), 4.0), -2.0).to(dtype);
}}

TEST({C}Kernel, ForwardAndBackwardMatchTheCpuKernels) {{
  for (DType dtype : kFloatingDtypes)
    for (const Shape& shape : {{Shape{{1}}, Shape{{3, 367}}}}) {{  // 1101: several blocks, a partial one
      const Tensor x = values(shape, dtype, 1), gy = values(shape, dtype, 2);
      const Tensor y_cpu = empty(shape, {{dtype}}), y_emu = empty(shape, {{dtype}});
      {name}_forward_cpu(y_cpu, x);
      launch_{name}_forward(y_emu, x, nullptr);
      EXPECT_TRUE(all_close(y_emu, y_cpu, 0, 0)) << dtype;
      const Tensor gx_cpu = empty(shape, {{dtype}}), gx_emu = empty(shape, {{dtype}});
      {name}_backward_cpu(gx_cpu, gy, x);
      launch_{name}_backward(gx_emu, gy, x, nullptr);
      EXPECT_TRUE(all_close(gx_emu, gx_cpu, 0, 0)) << dtype;
    }}
}}

TEST({C}Kernel, EmptyTensorsLaunchNothing) {{
  const Tensor x = empty({{0, 3}});
  launch_{name}_forward(empty({{0, 3}}), x, nullptr);
  launch_{name}_backward(empty({{0, 3}}), x, x, nullptr);
}}

}}  // namespace
}}  // namespace rg
"""
    return {
        f"ops/{name}/{name}.h": header(name, "custom"),
        f"ops/{name}/{name}.cpp": cpp,
        f"ops/{name}/{name}_kernel.h": kernel_h,
        f"ops/{name}/{name}_cpu.cpp": cpu,
        f"ops/{name}/{name}_kernels.cuh": cuh,
        f"ops/{name}/{name}_cuda.h": cuda_h,
        f"ops/{name}/{name}_cuda.cu": cu,
        f"tests/kernels/{name}_kernels_test.cpp": kernels_test,
    }


def reduction_files(name):
    C = camel(name)
    header_h = f"""#pragma once
// {name}(x) = Σ_c x[..., c]², the sum of squares over the last dim: (..., C) -> (...).
// (The scaffold's placeholder formula: replace it here, in {name}_cpu.cpp (CPU), in
// {name}_kernels.cuh (CUDA, and the emulator in the tests) and in tools/fixtures/{name}.py.)
// Backward: gx[..., c] = 2·x[..., c]·gy[...]. The node captures the input x.
// x: at least one dim, a floating dtype (f32, f64, f16, bf16), any device with a kernel.

#include "core/tensor.h"

namespace rg {{

Tensor {name}(const Tensor& x);

}}  // namespace rg
"""
    kernel_h = f"""#pragma once
// The CPU kernels of {name} (ops/{name}/{name}_cpu.cpp), declared for {name}.cpp. Contiguous
// tensors of one dtype, seen as `rows` rows of `cols` elements (cols: the last dim).

#include "core/tensor.h"

namespace rg {{

// y[r] = Σ_c x[r, c]². y: rows; x: rows × cols.
void {name}_forward_cpu(const Tensor& y, const Tensor& x, int64_t rows, int64_t cols);
// gx[r, c] = 2·x[r, c]·gy[r] (outputs first, then inputs, as the forward).
void {name}_backward_cpu(const Tensor& gx, const Tensor& gy, const Tensor& x, int64_t rows,
                         int64_t cols);

}}  // namespace rg
"""
    cpu = f"""// The CPU kernels of {name}: the plain reference that the CUDA kernels are tested against.
#include "core/dispatch.h"
#include "core/half.h"
#include "core/thread_pool.h"
#include "ops/{name}/{name}_kernel.h"

namespace rg {{

void {name}_forward_cpu(const Tensor& y, const Tensor& x, int64_t rows, int64_t cols) {{
  dispatch_floating(x.dtype(), "{name}", [&](auto tag) {{
    using T = decltype(tag);
    const T* in = x.data<T>();
    T* out = y.data<T>();
    // Rows split over the threads; each row summed in double, so that the GPU's float tree
    // (error near log2(cols)·u) is the only rounding that differs between the two.
    parallel_for(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(cols, 1)),
                 [&](int64_t lo, int64_t hi) {{
                   for (int64_t r = lo; r < hi; ++r) {{
                     double acc = 0;
                     for (int64_t c = 0; c < cols; ++c) {{
                       const double v = static_cast<double>(in[r * cols + c]);
                       acc += v * v;
                     }}
                     out[r] = static_cast<T>(acc);
                   }}
                 }});
  }});
}}

void {name}_backward_cpu(const Tensor& gx, const Tensor& gy, const Tensor& x, int64_t rows,
                         int64_t cols) {{
  dispatch_floating(x.dtype(), "{name}_backward", [&](auto tag) {{
    using T = decltype(tag);
    using A = compute_t<T>;  // 16-bit types compute in f32 and round once, as on the GPU
    const T* g = gy.data<T>();
    const T* in = x.data<T>();
    T* out = gx.data<T>();
    parallel_for(rows * cols, 1 << 14, [&](int64_t lo, int64_t hi) {{
      for (int64_t i = lo; i < hi; ++i)
        out[i] = static_cast<T>(A(2) * static_cast<A>(in[i]) * static_cast<A>(g[i / cols]));
    }});
  }});
}}

}}  // namespace rg
"""
    cuh = f"""#pragma once
// The CUDA kernels of {name} and their launchers. nvcc compiles this header for the GPU
// ({name}_cuda.cu); the host compiler compiles it against the kernel emulator for the tests
// (tests/kernels/{name}_kernels_test.cpp), so keep to what core/cuda/kernel.h provides.
// Forward: one block per row (grid-stride over the rows); its threads stride over the row's
// elements and the warp-shuffle tree of core/cuda/reduce_kernels.cuh combines them, in float for
// f32 and the 16-bit types (double for f64). Backward: a grid-stride elementwise loop.

#include <algorithm>

#include "core/cuda/reduce_kernels.cuh"

// The inline namespace keeps these nvcc-built and emulated definitions apart (core/cuda/kernel.h).
namespace rg {{
inline namespace RG_KERNEL_BUILD {{
namespace {name}_cuda {{

#if defined(__CUDACC__)
inline constexpr int64_t kMaxBlocks = 65535;
inline constexpr unsigned kThreads = cuda::kBlockThreads;
#else
// Emulated (one OS thread per CUDA thread, ~1 ms per barrier): a few blocks of two warps still
// exercise the grid-stride loop over rows, the strided loop in a row and the cross-warp step.
inline constexpr int64_t kMaxBlocks = 3;
inline constexpr unsigned kThreads = 64;
#endif

template <class T>
__global__ void forward_kernel(T* y, const T* x, int64_t rows, int64_t cols) {{
  using A = compute_t<T>;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {{
    A acc = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {{
      const A v = static_cast<A>(x[r * cols + c]);
      acc += v * v;
    }}
    acc = reduce_cuda::block_sum(acc);  // valid in thread 0; ends with a barrier
    if (threadIdx.x == 0) y[r] = static_cast<T>(acc);
  }}
}}

template <class T>
__global__ void backward_kernel(T* gx, const T* gy, const T* x, int64_t rows, int64_t cols) {{
  using A = compute_t<T>;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows * cols;
       i += int64_t(gridDim.x) * blockDim.x)
    gx[i] = static_cast<T>(A(2) * static_cast<A>(x[i]) * static_cast<A>(gy[i / cols]));
}}

inline unsigned blocks_for(int64_t n) {{
  return static_cast<unsigned>(std::clamp<int64_t>(n, 1, kMaxBlocks));
}}

}}  // namespace {name}_cuda

// ---- kernel launchers: contiguous tensors of one dtype, on the stream given ----

inline void launch_{name}_forward(const Tensor& y, const Tensor& x, int64_t rows, int64_t cols,
                                  cudaStream_t stream) {{
  if (rows == 0) return;  // a launch of 0 blocks is an error
  dispatch_floating(x.dtype(), "{name}", [&](auto tag) {{
    using T = decltype(tag);
    cuda::launch({name}_cuda::forward_kernel<T>, dim3({name}_cuda::blocks_for(rows)),
                 dim3({name}_cuda::kThreads), 0, stream, y.data<T>(), x.data<T>(), rows, cols);
  }});
}}

inline void launch_{name}_backward(const Tensor& gx, const Tensor& gy, const Tensor& x,
                                   int64_t rows, int64_t cols, cudaStream_t stream) {{
  if (rows * cols == 0) return;
  dispatch_floating(x.dtype(), "{name}_backward", [&](auto tag) {{
    using T = decltype(tag);
    const int64_t blocks = (rows * cols + {name}_cuda::kThreads - 1) / {name}_cuda::kThreads;
    cuda::launch({name}_cuda::backward_kernel<T>, dim3({name}_cuda::blocks_for(blocks)),
                 dim3({name}_cuda::kThreads), 0, stream, gx.data<T>(), gy.data<T>(), x.data<T>(),
                 rows, cols);
  }});
}}

}}  // inline namespace RG_KERNEL_BUILD
}}  // namespace rg
"""
    cuda_h = f"""#pragma once
// The CUDA entry points of {name} (defined in {name}_cuda.cu, built only with the CUDA
// backend). {name}.cpp names them through dispatch_device, which instantiates the call only
// in CUDA builds: a CPU-only build never references them.

#include "core/dispatch.h"
#include "core/tensor.h"

namespace rg {{

// y = x with its last dim summed away; x contiguous, rows × cols.
Tensor {name}_forward(OnCuda, const Tensor& x, int64_t rows, int64_t cols);
// gx, shaped as x; gy and x contiguous.
Tensor {name}_backward(OnCuda, const Tensor& gy, const Tensor& x, int64_t rows, int64_t cols);

}}  // namespace rg
"""
    cu = f"""// The CUDA side of {name}: the OnCuda overloads that dispatch_device calls in {name}.cpp.
// The kernels live in {name}_kernels.cuh, which the emulator tests also compile.
#include "core/cuda/stream.h"
#include "ops/{name}/{name}_cuda.h"
#include "ops/{name}/{name}_kernels.cuh"

namespace rg {{

Tensor {name}_forward(OnCuda, const Tensor& x, int64_t rows, int64_t cols) {{
  const Shape& s = x.shape();
  Tensor y = empty(Shape(s.begin(), s.end() - 1), {{x.dtype(), x.device()}});
  cuda::DeviceGuard guard(x.device().index);
  launch_{name}_forward(y, x, rows, cols, cuda::current_stream(x.device().index));
  return y;
}}

Tensor {name}_backward(OnCuda, const Tensor& gy, const Tensor& x, int64_t rows, int64_t cols) {{
  Tensor gx = empty(x.shape(), {{x.dtype(), x.device()}});
  cuda::DeviceGuard guard(x.device().index);
  launch_{name}_backward(gx, gy, x, rows, cols, cuda::current_stream(x.device().index));
  return gx;
}}

}}  // namespace rg
"""
    cpp = f"""#include "ops/{name}/{name}.h"

#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/error.h"
#include "ops/elementwise/elementwise.h"
#include "ops/{name}/{name}_cuda.h"
#include "ops/{name}/{name}_kernel.h"

namespace rg {{
namespace {{

Tensor {name}_forward(OnCpu, const Tensor& x, int64_t rows, int64_t cols) {{
  const Shape& s = x.shape();
  Tensor y = empty(Shape(s.begin(), s.end() - 1), {{x.dtype(), x.device()}});
  {name}_forward_cpu(y, x, rows, cols);
  return y;
}}

Tensor {name}_backward(OnCpu, const Tensor& gy, const Tensor& x, int64_t rows, int64_t cols) {{
  Tensor gx = empty(x.shape(), {{x.dtype(), x.device()}});
  {name}_backward_cpu(gx, gy, x, rows, cols);
  return gx;
}}

class {C}Backward : public Node {{
 public:
  {C}Backward(Tensor x, int64_t rows, int64_t cols) : x_(std::move(x)), rows_(rows), cols_(cols) {{}}
  std::string name() const override {{ return "{C}Backward"; }}
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {{
    check_same_float("{name}_backward", {{g[0], x_}});
    const Tensor gy = g[0].contiguous();
    return {{dispatch_device<Kernels::cpu_and_cuda>("{name}_backward", x_.device(), [&](auto on) {{
      return {name}_backward(on, gy, x_, rows_, cols_);
    }})}};
  }}
  void release_saved() override {{ x_ = Tensor(); }}

 private:
  Tensor x_;  // contiguous
  int64_t rows_, cols_;
}};

}}  // namespace

Tensor {name}(const Tensor& x) {{
  check_same_float("{name}", {{x}});
  if (x.dim() == 0)
    fail("{name}: x must have a dim to sum over, got ", x.describe());
  // The kernels read contiguous rows: a strided input is copied once, here.
  const Tensor xc = x.contiguous();
  const int64_t cols = x.shape().back(), rows = cols == 0 ? 0 : x.numel() / cols;
  Tensor y = dispatch_device<Kernels::cpu_and_cuda>(
      "{name}", x.device(), [&](auto on) {{ return {name}_forward(on, xc, rows, cols); }});
  if (needs_grad({{x}}))
    record(std::make_shared<{C}Backward>(saved(xc), rows, cols), {{x}}, {{&y}});
  return y;
}}

}}  // namespace rg
"""
    kernels_test = f"""// The CUDA kernels of {name} ({name}_kernels.cuh) run through the emulator against the CPU
// kernels, forward and backward, in every floating dtype: more rows than blocks, rows longer
// than a block, a row of one element. The sums differ in order (a tree against a loop in
// double), hence device_parity_tolerance.
#include <gtest/gtest.h>

#include "core/rng.h"
#include "ops/ops.h"
#include "ops/{name}/{name}_kernel.h"
#include "ops/{name}/{name}_kernels.cuh"
#include "tests/kernels/kernel_test_util.h"
#include "tests/support/fixtures.h"

namespace rg {{
namespace {{
using namespace rg::testing;

Tensor values(const Shape& shape, DType dtype, uint64_t seed) {{
  manual_seed(seed);
  return add(mul(rand(shape, {{DType::f64}}), 4.0), -2.0).to(dtype);
}}

TEST({C}Kernel, ForwardAndBackwardMatchTheCpuKernels) {{
  for (DType dtype : kFloatingDtypes)
    for (const auto& [rows, cols] : {{std::pair<int64_t, int64_t>{{5, 301}}, {{7, 1}}}}) {{
      const Tensor x = values({{rows, cols}}, dtype, 1), gy = values({{rows}}, dtype, 2);
      const Tensor y_cpu = empty({{rows}}, {{dtype}}), y_emu = empty({{rows}}, {{dtype}});
      {name}_forward_cpu(y_cpu, x, rows, cols);
      launch_{name}_forward(y_emu, x, rows, cols, nullptr);
      const double tol = device_parity_tolerance(dtype);
      EXPECT_TRUE(all_close(y_emu, y_cpu, tol, tol)) << dtype << " " << rows << "x" << cols;
      const Tensor gx_cpu = empty({{rows, cols}}, {{dtype}}), gx_emu = empty({{rows, cols}}, {{dtype}});
      {name}_backward_cpu(gx_cpu, gy, x, rows, cols);
      launch_{name}_backward(gx_emu, gy, x, rows, cols, nullptr);
      EXPECT_TRUE(all_close(gx_emu, gx_cpu, 0, 0)) << dtype << " " << rows << "x" << cols;
    }}
}}

TEST({C}Kernel, EmptyTensorsLaunchNothing) {{
  const Tensor x = empty({{0, 3}});
  launch_{name}_forward(empty({{0}}), x, 0, 3, nullptr);
  launch_{name}_backward(empty({{0, 3}}), empty({{0}}), x, 0, 3, nullptr);
}}

}}  // namespace
}}  // namespace rg
"""
    return {
        f"ops/{name}/{name}.h": header_h,
        f"ops/{name}/{name}.cpp": cpp,
        f"ops/{name}/{name}_kernel.h": kernel_h,
        f"ops/{name}/{name}_cpu.cpp": cpu,
        f"ops/{name}/{name}_kernels.cuh": cuh,
        f"ops/{name}/{name}_cuda.h": cuda_h,
        f"ops/{name}/{name}_cuda.cu": cu,
        f"tests/kernels/{name}_kernels_test.cpp": kernels_test,
    }


def op_test(name, kind):
    C = camel(name)
    extra_bad = (f"""
  EXPECT_TRUE(throws_error([] {{ {name}(ones({{}})); }}, {{"{name}", "dim to sum over", "[] f32 cpu"}}));"""
                 if kind == "reduction" else "")
    return f"""#include <gtest/gtest.h>

#include <vector>

#include "core/config.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {{
namespace {{
using namespace rg::testing;

TEST({C}, Gradcheck) {{
  auto fn = [](const std::vector<Tensor>& in) {{ return {name}(in[0]); }};
  EXPECT_TRUE(gradcheck(fn, {{grad_input({{2, 3}}, -2, 2)}}));
  // A transposed (non-contiguous) input: the op must follow strides.
  auto transposed = [](const std::vector<Tensor>& in) {{ return {name}(in[0].transpose(0, 1)); }};
  EXPECT_TRUE(gradcheck(transposed, {{grad_input({{3, 2}}, -2, 2, 3)}}));
}}

TEST({C}, MatchesPyTorch) {{
  Fixture f("{name}");  // tests/fixtures/{name}.safetensors, from tools/fixtures/{name}.py
  for (std::string c : {{"small", "wide"}}) {{
    SCOPED_TRACE(c);
    Tensor x = f[c + ".x"].set_requires_grad(true);
    Tensor y = {name}(x);
    EXPECT_TRUE(all_close(y, f[c + ".y"]));
    y.backward(f[c + ".gy"]);
    EXPECT_TRUE(all_close(x.grad(), f[c + ".gx"]));
  }}
}}

TEST({C}, BadInput) {{
  EXPECT_TRUE(throws_error([] {{ {name}(ones({{2}}, {{DType::i64}})); }}, {{"{name}", "[2] i64 cpu"}}));
  EXPECT_TRUE(throws_error([] {{ {name}(ones({{2, 2}}, {{DType::u8}})); }}, {{"{name}", "[2, 2] u8 cpu"}}));{extra_bad}
}}

// Without a GPU: a cuda:0 tensor (host memory labelled cuda:0, never read) is refused by name.
// With one, tests/gpu/ops_parity_test.cpp compares the op on the GPU with the CPU.
TEST({C}, OnDevices) {{
  std::vector<float> buffer(6);
  const Tensor g = from_blob(buffer.data(), {{2, 3}}, {{DType::f32, Device::cuda(0)}});
  if (!kWithCuda) {{
    EXPECT_TRUE(throws_error([&] {{ {name}(g); }}, {{"cuda:0", "no CUDA backend"}}));
  }} else if (cuda_device_count() == 0) {{
    EXPECT_TRUE(throws_error([&] {{ {name}(g); }}, {{"cuda:0", "no usable GPU"}}));
  }}
  // A logical cpu device runs the CPU kernel, and keeps the result there.
  const Tensor x = ones({{2, 3}}, {{DType::f32, Device::cpu(1)}});
  EXPECT_EQ({name}(x).device(), Device::cpu(1));
}}

}}  // namespace
}}  // namespace rg
"""


def fixture_module(name, kind):
    formula, expr = (("Σ over the last dim of x²", "(x * x).sum(-1)") if kind == "reduction"
                     else ("x³", "x * x * x"))
    return f'''def make(torch):
    """{name}(x) = {formula}: the scaffold's placeholder formula, the same as ops/{name}/."""
    out = {{}}

    def case(case_name, x):
        x.requires_grad_(True)
        y = {expr}
        gy = torch.randn_like(y)
        (gx,) = torch.autograd.grad(y, x, gy)
        out.update({{f"{{case_name}}.x": x, f"{{case_name}}.y": y,
                    f"{{case_name}}.gy": gy, f"{{case_name}}.gx": gx}})

    case("small", torch.randn(3, 4, 5))
    case("wide", torch.linspace(-3, 3, 24).reshape(4, 6))
    return out
'''


# ---- registries: one line each ----

def insert_before_mark(path, line, extra_mark=""):
    """Inserts `line` before the comment line that carries MARK (and extra_mark)."""
    with open(path) as f:
        lines = f.read().split("\n")
    at = [i for i, l in enumerate(lines) if MARK in l and extra_mark in l]
    if len(at) != 1:
        sys.exit(f"new_op: {path} needs exactly one '{MARK}' {extra_mark} comment line")
    if line in lines:
        sys.exit(f"new_op: {path} already has: {line}")
    lines.insert(at[0], line)
    with open(path, "w") as f:
        f.write("\n".join(lines))


def find_torch_python(explicit):
    candidates = [explicit] if explicit else [os.environ.get("RG_TORCH_PYTHON"), sys.executable,
                                              "python3", "/work/venv-torch/bin/python"]
    for py in candidates:
        if not py or not shutil.which(py) and not os.path.exists(py):
            continue
        if subprocess.run([py, "-c", "import torch"], capture_output=True).returncode == 0:
            return py
    return None


def main():
    parser = argparse.ArgumentParser(prog="scripts/new_op.sh",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("name", help="the op's name: lower_snake_case, a C++ identifier")
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--pointwise", dest="kind", action="store_const", const="pointwise")
    kind.add_argument("--custom", dest="kind", action="store_const", const="custom")
    kind.add_argument("--reduction", dest="kind", action="store_const", const="reduction")
    parser.add_argument("--python", help="a Python with PyTorch, to write the fixture")
    parser.add_argument("--root", default=ROOT, help="the tree to write into (default: this one)")
    args = parser.parse_args()
    kind = args.kind or "pointwise"
    name = args.name
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or name.endswith("_"):
        sys.exit(f"new_op: '{name}' is not a lower_snake_case name (letters, digits, _)")
    keywords = {"and", "auto", "bool", "break", "case", "catch", "char", "class", "const", "continue",
                "default", "delete", "do", "double", "else", "enum", "explicit", "extern", "false",
                "float", "for", "friend", "goto", "if", "inline", "int", "long", "namespace", "new",
                "not", "operator", "or", "private", "protected", "public", "return", "short",
                "signed", "sizeof", "static", "struct", "switch", "template", "this", "throw",
                "true", "try", "typedef", "typename", "union", "unsigned", "using", "virtual",
                "void", "volatile", "while", "xor"}
    if name in keywords:
        sys.exit(f"new_op: '{name}' is a C++ keyword; pick another name")
    root = os.path.abspath(args.root)
    if os.path.exists(os.path.join(root, "ops", name)):
        sys.exit(f"new_op: ops/{name}/ already exists")
    for header_path in glob.glob(os.path.join(root, "ops", "*", "*.h")):
        with open(header_path) as f:
            if re.search(rf"\bTensor {name}\(", f.read()):
                sys.exit(f"new_op: an op named {name} exists already")
    files = {"pointwise": pointwise_files, "custom": custom_files,
             "reduction": reduction_files}[kind](name)
    files[f"tests/ops/{name}_test.cpp"] = op_test(name, kind)
    for rel in files:
        if os.path.exists(os.path.join(root, rel)):
            sys.exit(f"new_op: {rel} exists already")
    fixture_py = f"tools/fixtures/{name}.py"
    if os.path.exists(os.path.join(root, fixture_py)):
        sys.exit(f"new_op: {fixture_py} exists already")

    # Every registry must take its line before anything is written: no half-made op.
    marks = [("apps/bench_ops_registry.h", ""), ("tests/gpu/ops_parity_test.cpp", "")]
    if kind == "pointwise":
        marks += [("tests/kernels/pointwise_kernels_test.cpp", "include"),
                  ("tests/kernels/pointwise_kernels_test.cpp", "parity")]
    for rel, extra in marks:
        with open(os.path.join(root, rel)) as f:
            if sum(MARK in l and extra in l for l in f) != 1:
                sys.exit(f"new_op: {rel} needs exactly one '{MARK}' {extra} comment line")

    written = []
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        written.append(rel)
    with open(os.path.join(root, fixture_py), "w") as f:
        f.write(fixture_module(name, kind))
    written.append(fixture_py)

    C = camel(name)
    insert_before_mark(os.path.join(root, "apps/bench_ops_registry.h"),
                       f'      bandwidth_op("{name}", 1, [](V x) {{ return {name}(x[0]); }}),')
    insert_before_mark(os.path.join(root, "tests/gpu/ops_parity_test.cpp"),
                       f'      {{"{name}", 1, false, [](V x) {{ return {name}(x[0]); }}}},')
    if kind == "pointwise":
        kernels_test = os.path.join(root, "tests/kernels/pointwise_kernels_test.cpp")
        insert_before_mark(kernels_test, f'#include "ops/{name}/{name}_functors.h"', "include")
        insert_before_mark(kernels_test, f'  expect_parity("{name}", {C}Fn{{}}, any, _);', "parity")
        insert_before_mark(kernels_test, f'  expect_parity("{name}_grad", {C}GradFn{{}}, any, _, _);',
                           "parity")
    registries = ["apps/bench_ops_registry.h", "tests/gpu/ops_parity_test.cpp"]
    if kind == "pointwise":
        registries.append("tests/kernels/pointwise_kernels_test.cpp")

    cpp_files = [os.path.join(root, r) for r in written + registries
                 if r.endswith((".h", ".cpp", ".cu", ".cuh"))]
    subprocess.run(["clang-format", "-i", "--style=file"] + cpp_files, check=True, cwd=root)

    py = find_torch_python(args.python)
    if py:
        subprocess.run([py, os.path.join(root, "tools/make_fixtures.py"), name], check=True,
                       cwd=root)
        written.append(f"tests/fixtures/{name}.safetensors")
        fixture_note = f"fixture written with {py}"
    else:
        fixture_note = (f"no Python with PyTorch found: run `python3 tools/make_fixtures.py {name}` "
                        f"where torch is installed (until then {C}.MatchesPyTorch fails, naming "
                        f"the missing file)")
    print(f"new_op: wrote {kind} op '{name}':")
    for rel in written:
        print(f"  {rel}")
    print("and one line in: " + ", ".join(registries))
    print(f"new_op: {fixture_note}")
    formula = "Σ x² over the last dim" if kind == "reduction" else "x³"
    print(f"new_op: now replace the placeholder formula ({formula}) in ops/{name}/ and {fixture_py}")


if __name__ == "__main__":
    main()
