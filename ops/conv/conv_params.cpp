#include "ops/conv/conv_params.h"

#include <atomic>

#include "core/error.h"

namespace rg {

namespace {
std::atomic<Bf16ConvKernels> g_bf16_conv_kernels{Bf16ConvKernels::by_rule};
}  // namespace

void set_bf16_conv_kernels(Bf16ConvKernels kernels) {
  g_bf16_conv_kernels.store(kernels, std::memory_order_relaxed);
}

Bf16ConvKernels bf16_conv_kernels() {
  return g_bf16_conv_kernels.load(std::memory_order_relaxed);
}

template <int N>
Shape conv_output_shape(std::string_view op, const Shape& x, const Shape& w,
                        const ConvParams<N>& p) {
  RG_CHECK(x.size() == N + 2, op, ": input must be ", N + 2, "-D (N, C, ", kConvAxes<N>, "), got ",
           shape_str(x));
  RG_CHECK(w.size() == N + 2, op, ": weight must be ", N + 2, "-D (O, C/groups, ",
           kConvKernelAxes<N>, "), got ", shape_str(w));
  for (int a = 0; a < N; ++a) {
    RG_CHECK(p.stride[a] >= 1 && p.dilation[a] >= 1 && p.padding[a] >= 0, op,
             ": stride and dilation must be >= 1 and padding >= 0, got stride ",
             conv_size_str<N>(p.stride), ", padding ", conv_size_str<N>(p.padding), ", dilation ",
             conv_size_str<N>(p.dilation));
  }
  RG_CHECK(p.groups >= 1, op, ": groups must be >= 1, got ", p.groups);
  RG_CHECK(x[1] >= 1 && x[1] % p.groups == 0, op, ": input channels (", x[1], " in ", shape_str(x),
           ") must be a positive multiple of groups (", p.groups, ")");
  RG_CHECK(w[0] >= 1 && w[0] % p.groups == 0, op, ": output channels (", w[0], " in weight ",
           shape_str(w), ") must be a positive multiple of groups (", p.groups, ")");
  RG_CHECK(w[1] * p.groups == x[1], op, ": input ", shape_str(x), " has ", x[1],
           " channels but weight ", shape_str(w), " expects ", w[1], " × ", p.groups,
           " groups = ", w[1] * p.groups);
  for (int a = 0; a < N; ++a)
    RG_CHECK(w[2 + a] >= 1, op, ": kernel size must be >= 1, got weight ", shape_str(w));
  Shape y{x[0], w[0]};
  for (int a = 0; a < N; ++a) {
    const int64_t extent = p.dilation[a] * (w[2 + a] - 1) + 1;  // of the dilated kernel
    // Checked before dividing: C++ rounds a negative quotient up to 0, which would give 1.
    RG_CHECK(x[2 + a] + 2 * p.padding[a] >= extent, op, ": output size would be <= 0 for input ",
             shape_str(x), " (padded ", x[2 + a] + 2 * p.padding[a], ") and weight ", shape_str(w),
             " (dilated kernel ", extent, ")");
    y.push_back((x[2 + a] + 2 * p.padding[a] - extent) / p.stride[a] + 1);
  }
  return y;
}

template Shape conv_output_shape<2>(std::string_view, const Shape&, const Shape&,
                                    const ConvParams<2>&);
template Shape conv_output_shape<3>(std::string_view, const Shape&, const Shape&,
                                    const ConvParams<3>&);

}  // namespace rg
