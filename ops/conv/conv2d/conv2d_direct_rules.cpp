// Which direct kernel runs where (see conv2d_direct.h; the kernels are described in
// conv2d_direct_common.h).
#include "ops/conv/conv2d/conv2d_direct.h"

#include <cstdint>

#include "ops/conv/conv2d/conv2d_direct_common.h"

namespace rg::detail {

using namespace direct;

namespace {
// The work of each forward, in output-channel × output slots computed (useful or not):
// by outputs, the junk columns, q rounded up to whole tiles and the padding rows of the last
// output tile; by channels, the channels rounded up to whole vectors and the outputs to a
// whole number of tiles.
int64_t forward_work(const DirectConv& g, DirectForward kind) {
  if (kind == DirectForward::by_outputs) {
    const Layout l = Layout::of<float>(g);
    return round_up(g.O, l.tile.OR) * l.Qt;
  }
  return round_up(g.O, kChannelVectors * Simd<float>::L) * round_up(g.Ho * g.Wo, kPositionTile);
}
}  // namespace

bool winograd_applies(const DirectConv& g) {
  return g.kH == 3 && g.kW == 3 && g.sH == 1 && g.sW == 1 && g.dH == 1 && g.dW == 1;
}

bool winograd4_applies(const DirectConv& g) {
  const int64_t TW = (g.Wo + 3) / 4, L = Simd<float>::L;  // f64's L divides f32's
  return winograd_applies(g) && TW > 0 && (TW % L == 0 || L % TW == 0);
}

namespace {
// Winograd against the direct forwards, on AVX2 at batch 128 (one process alternating the two
// per call, 8 pairs, each side first in half of them; medians of the pairs' time ratios,
// forward / backward-data): ResNet18's 64-channel 32×32 layer 0.56-0.60 / 0.54, 128-channel
// 16×16 0.52-0.62 / 0.62, 256-channel 8×8 0.55-0.61 / 0.56, 512-channel 4×4 0.71-0.77 / 0.76;
// airbench94's 24→64 31×31 0.74 / 0.86, 64→256 15×15 0.60, 256-channel 7×7 0.74-0.77 / 0.77;
// the quick preset's 24→32 31×31 0.80, 32→32 15×15 1.00. Where over a quarter of the
// computed outputs are padding (3×3 images: 16 for 9; 1.00 on airbench94's last layer), or on
// three input channels (the stem: 1.17) or outputs (its backward-data: 1.32), the direct
// kernels stay. AVX-512 (Intel Xeon, family 6 model 167; CPU time of one thread, best of 3,
// tools in ops/conv/conv2d/README.md), the better Winograd forward against the better direct one:
// ResNet18's 64-channel 32×32 layer 0.67, 128-channel 16×16 0.50, 256-channel 8×8 0.50,
// 512-channel 4×4 0.59; ResNet20's 16, 32 and 64 channels 0.83, 0.57, 0.62; airbench94's 24→64
// 31×31 0.79, 64-channel 15×15 0.63, 64→256 15×15 0.62, 256-channel 7×7 0.70, and the quick
// preset's 0.86, 0.70, 0.80. The same rule holds there.
bool winograd_pays(const DirectConv& g) {
  const int64_t computed = 4 * ((g.Ho + 1) / 2) * ((g.Wo + 1) / 2);
  return kFmaVectors && winograd_applies(g) && g.C >= 16 && g.O >= 16 &&
         3 * computed <= 4 * g.Ho * g.Wo;
}
// F(4×4, 3×3) against F(2×2, 3×3), same method, 8-15 pairs (f32). Rows of 4×4 tiles filling
// whole vectors: ResNet18's 64-channel 32×32 layer 0.75-0.77, ResNet20's 16-channel one
// 0.80-0.84; before the GEMMs went position by position, 32 and 128 channels at 32×32 0.74, 256
// 0.78, and 64×64 images of 16, 32 and 64 channels 0.76, 0.74 and 0.73. Packs of two 16×16
// images: 64, 128 and 256 channels 0.875, 0.73-0.85 and 0.88, but 32 channels 0.955-1.01; packs
// of four 8×8 images: 32, 64, 128 and 256 channels 0.78, 0.78, 0.74 and 0.69-0.83. Packs of
// eight 4×4 images lost at 128 and 256 channels (1.10, 1.02) and won little at 512 (0.86-0.91):
// their transformed kernels (36 · C · O, 38 MB at 512 channels) are written and then read from
// memory once per chunk of images (0.88 again on 2026-11-27, but no faster whole step: 1.006,
// 16 pairs). Widths that are not a multiple of 4 (each row's last tile partly padding), batch
// 256: airbench94's 24→64 31×31 0.78-0.79, 64→64 and 64→256 15×15 (packs of two) 0.77 and
// 0.70-0.73, 256-channel 7×7 (packs of four) 0.76-0.79; the quick preset's 24→32 31×31 0.81,
// 128-channel 7×7 0.75, 32→32 15×15 0.92 (few channels in packs of two, as at 16×16: not
// taken). All those compute 0.5625 of F(2×2)'s multiply-adds, padding tiles included; F(4×4)
// runs where that fraction is at most 0.6 (6×6 images: 1.0, 14×14: 0.73).
// AVX-512 (L = 16, same method as for winograd_pays above), F(4×4) against F(2×2): packs of four
// 8×8 images and of eight 4×4 ones win there too: ResNet18's 256-channel 8×8 layer 0.87,
// 512-channel 4×4 0.85, ResNet20's 64-channel 8×8 0.71, airbench94's 256-channel 7×7 0.92, the
// quick preset's 128-channel 7×7 0.85; packs of two 16×16 images (and 15×15) 0.51-0.70; rows
// of 32 (two rows of 4×4 tiles per vector) only with 64 channels and more, as on AVX2:
// ResNet18's 64-channel layer 1.01, airbench94's 24→64 1.17, ResNet20's 16 channels 0.92.
bool winograd4_pays(const DirectConv& g) {
  const int64_t TH = (g.Ho + 3) / 4, TW = (g.Wo + 3) / 4, L = Simd<float>::L;
  const int64_t f22_tiles = ((g.Ho + 1) / 2) * ((g.Wo + 1) / 2);
  const bool wide_enough = g.C >= 64 && g.O >= 64;
  const bool fits = kAvx512 ? TW % L == 0 || (L % TW == 0 && (2 * TW != L || wide_enough))
                            : TW % L == 0 || 4 * TW == L || (2 * TW == L && wide_enough);
  return winograd4_applies(g) && fits && 5 * 36 * TH * TW <= 3 * 16 * f22_tiles;
}
// The Winograd backward-weight's 16 × C × O sums (f32), per group.
int64_t winograd_sums_bytes(const DirectConv& g) {
  return 16 * g.C * g.O * int64_t{sizeof(float)};
}
// The Winograd backward-weight against the direct ones (gathered rows at 8×8 and 4×4, padded
// images above), same method, 16 pairs: ResNet18's 64-channel 32×32 layer 0.76, 128-channel
// 16×16 0.68, 256-channel 8×8 0.66 and 512-channel 4×4 0.83 (those two with shared sums).
// airbench94's layers have odd sizes (a quarter of the 7×7 layer's tiles padding: 1.06); its
// 64→256 15×15 layer 0.99, its 24→64 31×31 1.16 (few channels to amortise the transforms on).
bool winograd_weight_pays(const DirectConv& g) {
  return winograd_pays(g) && g.C >= 64 && g.O >= 64 && winograd_sums_bytes(g) <= (16 << 20) &&
         g.Ho % 2 == 0 && g.Wo % 2 == 0;
}
// F(4×4) against F(2×2)'s backward-weight (per-part sums), same method, 8 pairs: ResNet18's
// 64-channel 32×32 layer 0.74-0.75 (staging blocks of 4 units instead of 8: 0.77-0.80), 64
// channels at 64×64 0.87 (blocks of 4); but on its 128-channel 16×16 layer (per-part sums of
// 2.4 MB) 0.99 against either form of F(2×2) (blocks of 4; of 8, 1.13). So where rows of tiles fill
// whole vectors and the 36 · C · O sums stay within 1 MB.
bool winograd4_weight_pays(const DirectConv& g) {
  const int64_t TW = (g.Wo + 3) / 4, L = Simd<float>::L;
  return winograd_weight_pays(g) && winograd4_pays(g) && TW % L == 0 &&
         36 * g.C * g.O * int64_t{sizeof(float)} <= (1 << 20);
}
// F(4×4) with shared sums (kSharedTiles4) against F(2×2)'s backward-weight as chosen below,
// same method, 12 pairs, twice: ResNet18's 128-channel 16×16 layer 0.90 and 0.92 (per-part
// F(2×2)), 256-channel 8×8 0.69 and 0.73, 512-channel 4×4 0.78 and 0.77 (shared F(2×2)); but
// its 64-channel 32×32 layer 0.96 (per-part F(4×4) above: 0.74), 64 channels at 16×16 1.17.
// Where F(2×2)'s backward-weight does not run (odd sizes), against the direct kernels chosen
// there, batch 256, 6-8 pairs: airbench94's 64→64 and 64→256 15×15 layers 0.75 and 0.83, its
// 256-channel 7×7 layer 0.58 (per-part sums 0.84, 0.86 and 0.74; on the 24→64 31×31 layer
// 0.95, not taken), the quick preset's 128-channel 7×7 one 0.58. Whole training steps (a
// throwaway switch, 12-16 pairs): airbench94's net 0.84, the quick preset's 0.93.
bool winograd4_shared_weight_pays(const DirectConv& g) {
  if (g.Ho % 2 != 0 || g.Wo % 2 != 0)
    return winograd_pays(g) && winograd4_pays(g) && g.C >= 64 && g.O >= 64 &&
           winograd_sums_bytes(g) <= (16 << 20);
  return winograd_weight_pays(g) && winograd4_applies(g) && g.C >= 128 && g.O >= 128 &&
         3 * 4 * ((g.Ho + 3) / 4) <= 4 * g.Ho;
}
// Shared sums against per-thread ones: 0.85 at 256 channels (4 MB of sums), 0.69 at 512 (16
// MB); but 1.2 at 128 (1 MB) and 1.47 at 64 (256 KB), where per-thread sums stay in the caches.
bool winograd_sums_shared(const DirectConv& g) {
  return winograd_sums_bytes(g) > (1 << 20);
}
}  // namespace

DirectForward direct_forward_kind(const DirectConv& g) {
  if (winograd_pays(g) && winograd4_pays(g)) return DirectForward::winograd_4x4;
  if (winograd_pays(g)) return DirectForward::winograd;
  // By outputs wins up to 25 % of waste (8×8 images with padding 1: on AVX2 it also beat by
  // channels there, measured); on smaller images (4×4: 19 outputs for a tile 48 wide with
  // AVX-512, 32 with AVX2) by channels takes over. On AVX-512 (same machine and method as
  // winograd_pays) by channels wins with 64 output channels and more, one vector of four each
  // full, whatever the image: ResNet18's 3×3 stride-2 layers 0.95, 0.72 and 0.46 of by outputs,
  // its stem 0.85, airbench94's 3×3 images 0.22; not its 24-channel whitening (1.47) nor
  // ResNet18's 1×1 stride-2 layers (1.10, 1.04: those stay as before).
  if (kAvx512)
    return g.O >= 64 && g.kH * g.kW > 1 ? DirectForward::by_channels : DirectForward::by_outputs;
  const bool outputs_pay = 5 * g.O * g.Ho * g.Wo >= 4 * forward_work(g, DirectForward::by_outputs);
  return outputs_pay ? DirectForward::by_outputs : DirectForward::by_channels;
}

bool direct_conv_pays(const DirectConv& g, DirectKernel kernel) {
  // The tiles are sized for the vector registers of AVX-512 or AVX2 with FMA; on other CPUs
  // they spill (the kernels stay correct, and tested, everywhere).
  if (!kFmaVectors || g.N == 0) return false;
  const int64_t useful = g.O * g.Ho * g.Wo;
  if (kernel == DirectKernel::forward) {
    if (winograd_pays(g)) return true;
    // By outputs up to 25 % of waste (above); by channels up to a third: 3×3 images, 9
    // outputs in 12 slots, still ran 1.8-2.3× faster than im2col + GEMM (airbench94's
    // 256-channel layers, AVX2); 7×7 ~1.8×, ResNet18's 4×4 stage ~1.5×.
    const DirectForward kind = direct_forward_kind(g);
    return kind == DirectForward::by_outputs ? 5 * useful >= 4 * forward_work(g, kind)
                                             : 4 * useful >= 3 * forward_work(g, kind);
  }
  if (kernel == DirectKernel::backward_data) {
    // By phases, against im2col + GEMM + col2im, on AVX2 (bench_ops, batch 128, the best of 5
    // alternations): ResNet18's 3×3 stride-2 layers 49-65 → 44-55 ms. Where the kernel does
    // not overlap itself (1×1 or 2×2 stride 2: one tap per phase) every tap reads a new plane
    // of gy for its 12 FMAs, and ResNet18's 1×1 128→256 lost (8.0 → 10.4 ms): those stay on
    // the GEMM. AVX-512 keeps im2col (not measured there).
    return !kAvx512 && g.sH * g.sW > 1 && g.kH * g.kW > g.sH * g.sW;
  }
  // Backward-weight wastes only the channel padding, but transposes gy: one move per K/L
  // FMAs, too many for 1x1 kernels (measured slower than im2col + GEMM there). Over padded
  // images with AVX2 and outputs under 8×8 it lost where the K × Op sums, read and written
  // once per pass over the tiles (every 128 outputs), outgrow the caches (ResNet18's 4×4
  // stage, 9 MB: ~0.7× im2col + GEMM): those images take the gathered rows instead.
  const ChannelTile t = channel_tile<float>(g.O);
  return g.kH * g.kW > 1 && 4 * g.O >= 3 * round_up(g.O, t.NV * Simd<float>::L);
}

DirectBackwardWeight direct_backward_weight_kind(const DirectConv& g) {
  if (winograd4_weight_pays(g)) return DirectBackwardWeight::winograd_4x4;
  if (winograd4_shared_weight_pays(g)) return DirectBackwardWeight::winograd_4x4_shared_sums;
  if (winograd_weight_pays(g))
    return winograd_sums_shared(g) ? DirectBackwardWeight::winograd_shared_sums
                                   : DirectBackwardWeight::winograd;
  // Gathered rows copy every tap's window of x and read gy once per block of taps; that pays
  // on small images, where layers are wide and the padded-image kernel's K × O sums outgrow
  // the caches: with AVX2, at batch 128,
  // 1.6-2× faster than im2col + GEMM on ResNet18's 4×4 stage, 1.2-1.5× faster than padded
  // images on airbench94's 7×7 and 3×3 layers, but 0.7-1.0× at 8×8 and 0.5-0.6× at 16×16 and
  // 32×32 (measured). At 8×8 only where the padded-image kernel's sums are large: in one
  // process alternating the two (ABBA pairs, medians of the pairs' ratios, three runs) 256
  // channels (2.4 MB of sums) 3-12 % faster, but 128 (0.6 MB) 14 % and 64 channels 23 %
  // slower. AVX-512 keeps padded images (gathered rows not measured there).
  if (kAvx512) return DirectBackwardWeight::padded_images;
  const int64_t sums_bytes = g.G * g.C * g.kH * g.kW * g.O * int64_t{sizeof(float)};
  const bool rows_pay = g.Ho * g.Wo < 64 || (g.Ho * g.Wo <= 64 && sums_bytes > (1 << 20));
  return rows_pay ? DirectBackwardWeight::gathered_rows : DirectBackwardWeight::padded_images;
}

template <class T>
void direct_conv_forward(const DirectConv& g, const T* x, const T* w, const T* bias, T* y,
                         DirectForward kind) {
  if (kind == DirectForward::by_channels) return forward_by_channels(g, x, w, bias, y);
  if (kind == DirectForward::winograd) return forward_winograd(g, x, w, bias, y);
  if (kind == DirectForward::winograd_4x4) return forward_winograd4(g, x, w, bias, y);
  forward_by_outputs(g, x, w, bias, y);
}

template void direct_conv_forward<float>(const DirectConv&, const float*, const float*,
                                         const float*, float*, DirectForward);
template void direct_conv_forward<double>(const DirectConv&, const double*, const double*,
                                          const double*, double*, DirectForward);

template <class T>
void direct_conv_backward_weight(const DirectConv& g, const T* gy, const T* x, T* gw,
                                 DirectBackwardWeight kind) {
  if (kind == DirectBackwardWeight::gathered_rows)
    return backward_weight_gathered_rows(g, gy, x, gw);
  if (kind == DirectBackwardWeight::winograd_4x4)
    return backward_weight_winograd4(g, gy, x, gw, false);
  if (kind == DirectBackwardWeight::winograd_4x4_shared_sums)
    return backward_weight_winograd4(g, gy, x, gw, true);
  if (kind == DirectBackwardWeight::winograd) return backward_weight_winograd(g, gy, x, gw, false);
  if (kind == DirectBackwardWeight::winograd_shared_sums)
    return backward_weight_winograd(g, gy, x, gw, true);
  backward_weight_padded_images(g, gy, x, gw);
}

template void direct_conv_backward_weight<float>(const DirectConv&, const float*, const float*,
                                                 float*, DirectBackwardWeight);
template void direct_conv_backward_weight<double>(const DirectConv&, const double*, const double*,
                                                  double*, DirectBackwardWeight);

}  // namespace rg::detail
