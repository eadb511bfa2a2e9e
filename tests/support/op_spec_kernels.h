#pragma once
// The emulated-kernel part of a pointwise op's spec: the CUDA pointwise kernel
// (ops/elementwise/elementwise_kernels.cuh), compiled by the host compiler against the kernel
// emulator, against the CPU loop, for one functor that the op or its backward launches — in
// every floating dtype, on contiguous, broadcast, strided and channels-last operands of odd
// sizes, bit for bit.
//
//   .kernels = {pointwise_kernel<1>("silu", SiluFn{}), pointwise_kernel<2>("silu_grad",
//   SiluGradFn{})}

#include <string>
#include <utility>
#include <vector>

#include "ops/elementwise/elementwise.h"
#include "ops/elementwise/elementwise_kernels.cuh"
#include "tests/support/op_spec.h"

namespace rg::testing {

// channels_last: every operand and the output NHWC (the kernels' flat path, as on a
// channels-last network); mixed_channels_last: operand 0 and the output NHWC, the others NCHW
// (the strided path).
enum class Layout { contiguous, broadcast, strided, channels_last, mixed_channels_last };

// Operand k of an N-ary call, shaped for the layout; the broadcast result is [5, 6, 7].
inline Tensor pointwise_operand(int k, Layout layout, DType dtype, Range range) {
  switch (layout) {
    case Layout::contiguous:
      return uniform({3, 367}, range).to(dtype);  // 1101 elements: several blocks and rounds
    case Layout::broadcast: {
      const Shape shapes[] = {{5, 1, 7}, {6, 7}, {5, 6, 1}, {7}, {1, 1, 1}};
      return uniform(shapes[k % 5], range).to(dtype);
    }
    case Layout::strided:
      return uniform({43, 9}, range).to(dtype).transpose(0, 1);  // [9, 43] read column-major
    case Layout::channels_last:
      return uniform({2, 5, 7, 3}, range).to(dtype).contiguous(MemoryFormat::channels_last);
    case Layout::mixed_channels_last: {
      const Tensor x = uniform({2, 5, 7, 3}, range).to(dtype);
      return k == 0 ? x.contiguous(MemoryFormat::channels_last) : x;
    }
  }
  return {};
}

// The functor f of arity N, as the CUDA kernel (emulated) and the CPU loop apply it.
template <int N, class F>
KernelCheck pointwise_kernel(std::string label, F f, Range range = kAnyValues) {
  return {label,
          [=] {
            std::vector<KernelResult> results;
            for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16})
              for (Layout layout : {Layout::contiguous, Layout::broadcast, Layout::strided,
                                    Layout::channels_last, Layout::mixed_channels_last}) {
                std::vector<Tensor> in;
                for (int k = 0; k < N; ++k)
                  in.push_back(pointwise_operand(k, layout, dtype, range));
                Shape shape = in[0].shape();
                for (int k = 1; k < N; ++k) shape = broadcast_shapes(shape, in[k].shape(), label);
                const Tensor expected = empty(shape, {dtype});
                // The emulated kernel writes a transposed (non-contiguous) output when strided,
                // an NHWC one when channels-last.
                const Tensor actual = layout == Layout::strided
                                          ? empty({shape[1], shape[0]}, {dtype}).transpose(0, 1)
                                          : empty(shape, {dtype},
                                                  layout == Layout::channels_last ||
                                                          layout == Layout::mixed_channels_last
                                                      ? MemoryFormat::channels_last
                                                      : MemoryFormat::contiguous);
                [&]<std::size_t... K>(std::index_sequence<K...>) {
                  pointwise_into(OnCpu{}, label, f, expected, in[K]...);
                  launch_pointwise(label, f, actual, nullptr, in[K]...);
                }
                (std::make_index_sequence<N>{});
                results.push_back({label + " " + std::string(dtype_name(dtype)) + " layout " +
                                       std::to_string(static_cast<int>(layout)),
                                   actual, expected, Match::bits});
              }
            return results;
          },
          KernelKind::pointwise_engine};
}

}  // namespace rg::testing
