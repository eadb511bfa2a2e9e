// bf16 convolutions on the CPU's dot products, as tensors: whether the tile kernels
// (conv2d_tiles.h) take a convolution — groups 1, bf16, a machine with AMX or AVX512-BF16 — and
// their calls. conv2d_cpu.cpp tries these first and routes everything else.
#include <optional>
#include <string>

#include "core/kernel_log.h"
#include "ops/conv/conv2d/conv2d_kernel.h"
#include "ops/conv/conv2d/conv2d_tiles.h"

namespace rg {

// "x [N, C, H, W] w [O, C, kH, kW] s1x1 p1x1 d1x1 g1 bf16": the problem a kernel note names.
std::string conv2d_problem(const Shape& x, const Shape& w, const Conv2dParams& p, DType dtype) {
  return shape_str(x) + " w " + shape_str(w) + " s" + std::to_string(p.stride[0]) + "x" +
         std::to_string(p.stride[1]) + " p" + std::to_string(p.padding[0]) + "x" +
         std::to_string(p.padding[1]) + " d" + std::to_string(p.dilation[0]) + "x" +
         std::to_string(p.dilation[1]) + " g" + std::to_string(p.groups) + " " +
         std::string(dtype_name(dtype));
}

namespace {

std::string tile_kernel_name(detail::tiles::TileIsa isa) {
  return "bf16 tiles (" + std::string(detail::tiles::tile_isa_name(isa)) + ")";
}

// The tile kernels' description of the convolution x ⋆ w for `pass` (forward or backward-weight),
// or nullopt where they do not run it: not bf16, or not by the rule (conv2d_tiles_run: groups 1,
// a machine with bf16 dot products, the shape).
std::optional<detail::tiles::TileConv> tile_conv(const Shape& x, const Shape& w,
                                                 const Conv2dParams& p, DType dtype, ConvPass pass,
                                                 detail::tiles::TileIsa& isa) {
  if (dtype != DType::bf16 || !detail::tiles::tile_isa_available(isa) ||
      !conv2d_tiles_run(w, p, pass))
    return std::nullopt;
  detail::tiles::TileConv g{.N = x[0],
                            .C = x[1],
                            .H = x[2],
                            .W = x[3],
                            .O = w[0],
                            .kH = w[2],
                            .kW = w[3],
                            .sH = p.stride[0],
                            .sW = p.stride[1],
                            .dH = p.dilation[0],
                            .dW = p.dilation[1],
                            .pad_top = p.padding[0],
                            .pad_left = p.padding[1],
                            .pad_bottom = p.padding[0],
                            .pad_right = p.padding[1]};
  return g.with_output_size();
}

// Backward-data as a tile forward: gx = gy, with stride − 1 zeros inserted between its pixels
// and padded by d·(k − 1) − p (more at the bottom and right where gy covers fewer outputs or
// the stride skipped the last input rows), convolved with the flipped, transposed weight.
std::optional<detail::tiles::TileConv> tile_backward_data_conv(const Shape& gy, const Shape& w,
                                                               const Shape& x,
                                                               const Conv2dParams& p, DType dtype,
                                                               detail::tiles::TileIsa& isa) {
  if (dtype != DType::bf16 || !detail::tiles::tile_isa_available(isa) ||
      !conv2d_tiles_run(w, p, ConvPass::backward_data))
    return std::nullopt;
  const int64_t reach_h = p.dilation[0] * (w[2] - 1), reach_w = p.dilation[1] * (w[3] - 1);
  detail::tiles::TileConv g{.N = gy[0],
                            .C = gy[1],
                            .H = gy[2],
                            .W = gy[3],
                            .O = w[1],
                            .kH = w[2],
                            .kW = w[3],
                            .dH = p.dilation[0],
                            .dW = p.dilation[1],
                            .pad_top = reach_h - p.padding[0],
                            .pad_left = reach_w - p.padding[1],
                            .up_h = p.stride[0],
                            .up_w = p.stride[1]};
  g.pad_bottom = x[2] + reach_h - g.pad_top - ((gy[2] - 1) * p.stride[0] + 1);
  g.pad_right = x[3] + reach_w - g.pad_left - ((gy[3] - 1) * p.stride[1] + 1);
  // Padding wider than the kernel's reach (a negative pad here) crops gx: not a tile layout.
  if (g.pad_top < 0 || g.pad_left < 0 || g.pad_bottom < 0 || g.pad_right < 0) return std::nullopt;
  g.with_output_size();
  RG_CHECK(g.Ho == x[2] && g.Wo == x[3],
           "conv2d_backward_data: internal error: the tile "
           "layout gives ",
           g.Ho, "x", g.Wo, " for ", shape_str(x));
  return g;
}
}  // namespace

std::optional<Tensor> conv2d_forward_tiles(const Tensor& x_in, const Tensor& w_in,
                                           const Tensor& b_in, const Conv2dParams& p) {
  detail::tiles::TileIsa isa;
  if (auto g = tile_conv(x_in.shape(), w_in.shape(), p, x_in.dtype(), ConvPass::forward, isa)) {
    const Tensor x = x_in.contiguous(), w = w_in.contiguous();
    const Tensor bias = b_in.defined() ? b_in.contiguous() : Tensor();
    Tensor y = empty({g->N, g->O, g->Ho, g->Wo}, {x.dtype(), x.device()});
    detail::tiles::tile_conv_forward(
        *g, x.data<BFloat16>(), w.data<BFloat16>(), detail::tiles::WeightOrder::as_is,
        bias.defined() ? bias.data<BFloat16>() : nullptr, y.data<BFloat16>(), isa);
    note_kernel("conv2d", conv2d_problem(x.shape(), w.shape(), p, x.dtype()),
                tile_kernel_name(isa));
    return y;
  }
  return std::nullopt;
}

std::optional<Tensor> conv2d_backward_data_tiles(const Tensor& gy_in, const Tensor& w_in,
                                                 const Shape& x_shape, const Conv2dParams& p,
                                                 const Tensor& b_in) {
  detail::tiles::TileIsa isa;
  if (b_in.defined() && b_in.dtype() != DType::bf16) return std::nullopt;
  if (auto g =
          tile_backward_data_conv(gy_in.shape(), w_in.shape(), x_shape, p, gy_in.dtype(), isa)) {
    const Tensor gy = gy_in.contiguous(), w = w_in.contiguous();
    const Tensor bias = b_in.defined() ? b_in.contiguous() : Tensor();
    Tensor gx = empty(x_shape, {gy.dtype(), gy.device()});
    detail::tiles::tile_conv_forward(
        *g, gy.data<BFloat16>(), w.data<BFloat16>(), detail::tiles::WeightOrder::flipped_transposed,
        bias.defined() ? bias.data<BFloat16>() : nullptr, gx.data<BFloat16>(), isa);
    note_kernel("conv2d_backward_data", conv2d_problem(x_shape, w.shape(), p, gy.dtype()),
                tile_kernel_name(isa));
    return gx;
  }
  return std::nullopt;
}

std::optional<Tensor> conv2d_backward_weight_tiles(const Tensor& gy_in, const Tensor& x_in,
                                                   const Shape& weight_shape,
                                                   const Conv2dParams& p) {
  detail::tiles::TileIsa isa;
  if (auto g =
          tile_conv(x_in.shape(), weight_shape, p, x_in.dtype(), ConvPass::backward_weight, isa)) {
    const Tensor gy = gy_in.contiguous(), x = x_in.contiguous();
    g->Ho = gy.size(2);  // gy may cover only the first outputs (conv_transpose2d)
    g->Wo = gy.size(3);
    Tensor gw = empty(weight_shape, {gy.dtype(), gy.device()});
    detail::tiles::tile_conv_backward_weight(*g, gy.data<BFloat16>(), x.data<BFloat16>(),
                                             gw.data<BFloat16>(), isa);
    note_kernel("conv2d_backward_weight", conv2d_problem(x.shape(), weight_shape, p, x.dtype()),
                tile_kernel_name(isa));
    return gw;
  }
  return std::nullopt;
}

}  // namespace rg
