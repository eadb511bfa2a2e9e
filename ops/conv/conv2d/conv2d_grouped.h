#pragma once
// Grouped convolutions of few channels per group on the CPU (internal to ops/conv/conv2d):
// depthwise ones (one input channel per group: MobileNet's, EfficientNet's, ShuffleNetV2's 3×3
// and 5×5 layers) and groups of a few channels (ResNeXt29_32x4d's 4, DPN92's 3; RegNet's 8 for
// backward-weight). The kernels compute any grouped convolution; grouped_direct_pays says where
// conv2d runs them.
//
// im2col + GEMM runs such a layer as G products of an Og × Cg·kH·kW matrix by a Cg·kH·kW × Ho·Wo
// one: the column matrix costs kH·kW copies of each plane, and GEMMs a few rows high run far
// below the FMA peak. Here each input plane is instead copied once into a zero-padded buffer,
// split into sW phase planes along the width (phase r holds the padded columns v·sW + r), so
// that the tap (i, j) of the outputs ho, wo..wo+L−1 is one contiguous vector at any stride:
//   phase (j·dW) mod sW, row ho·sH + i·dH, columns ⌊j·dW / sW⌋ + wo ...
// and a register tile of a few output channels × a few such vectors sums Cg·kH·kW products into
// each lane, the vectors as wide as the output rows (16, 8 or 4 f32 lanes) so that small planes
// waste none. Backward-data is the same kernel run on gy: the input gradient is the stride-1
// correlation of gy — zeros inserted between its pixels at stride s, padded by d·(k − 1) — with
// the flipped kernel, the roles of Cg and Og exchanged. Backward-weight sums gy · the same
// vectors of the padded input, one group per thread over the whole batch, in a fixed order.
// Every output's sum runs in an order fixed by the shapes alone: the results do not depend on
// the thread count.

#include <cstdint>

#include "ops/conv/conv2d/conv2d_direct.h"

namespace rg::detail {

// Whether these kernels beat the others (the direct ones, im2col + GEMM) on g's pass `kernel`:
// depthwise convolutions always; groups of up to 4 channels on planes of 16×16 outputs and more,
// and for backward-weight of up to 8. Measured on Zen 5 (AVX-512, 2 threads, bench_ops --model
// zoo, batch 128, ms, before → after): MobileNetV2's depthwise 3×3 96 @32 forward 30.5 → 15.6,
// backward-data 46.8 → 24.9, backward-weight 27.4 → 23.0, its 576 @8 25.2 → 6.2, 42.3 → 7.5,
// 27.1 → 17.4; EfficientNetB0's 5×5 240 @16 83.2 → 14.4, 98.0 → 17.3, 82.5 → 24.6; DPN92's 3
// channels a group @32 47.0 → 24.0, 56.6 → 30.8, 130.2 → 32.8; ResNeXt29_32x4d's 4 @32 32.4 →
// 28.2, 33.4 → 33.5, 98.5 → 46.6; RegNetX's 8 @32 backward-weight 43.4 → 32.1 (forward 16.5 →
// 19.5: not taken). Wider groups and smaller planes lost (DPN92's 24 channels @4: 13.0 → 22.7
// forward, 16.3 → 83.3 backward-weight): a register tile of four channels reuses each load too
// little there, where the GEMM's packing pays.
bool grouped_direct_pays(const DirectConv& g, DirectKernel kernel);

// y = conv(x, w) + bias (bias may be null). All tensors contiguous.
template <class T>
void grouped_forward(const DirectConv& g, const T* x, const T* w, const T* bias, T* y);

// gx from the full output gradient gy: (N, G·O, Ho, Wo).
template <class T>
void grouped_backward_data(const DirectConv& g, const T* gy, const T* w, T* gx);

// gw = Σ_n gy ⋆ x.
template <class T>
void grouped_backward_weight(const DirectConv& g, const T* gy, const T* x, T* gw);

// Depthwise convolutions (one input and one output channel per group) of outputs under 8 wide,
// where rows would fill only 4-lane vectors, run vectorised over channels instead: a vector holds
// one pixel of L channels (conv2d_depthwise_lanes.cpp). The three functions above call these
// where this holds. Measured as above: MobileNetV2's 960 @4 6.6 → 3.3 ms forward, 6.9 → 4.7
// backward-data, 12.1 → 7.9 backward-weight; at 8×8 (8-lane rows) they lost (576 @8 forward 7.9
// → 12.0: the interleaving costs more than the lanes save).
bool depthwise_by_lanes(const DirectConv& g);
template <class T>
void depthwise_lanes_forward(const DirectConv& g, const T* x, const T* w, const T* bias, T* y);
template <class T>
void depthwise_lanes_backward_data(const DirectConv& g, const T* gy, const T* w, T* gx);
template <class T>
void depthwise_lanes_backward_weight(const DirectConv& g, const T* gy, const T* x, T* gw);

}  // namespace rg::detail
