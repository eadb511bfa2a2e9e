#pragma once
// The random part of the image augmentations, written once for the host and the device: the
// per-sample draws of SampleRng (transforms.h) and where each output pixel of a crop-and-flip
// comes from. The CPU transforms (RandomCrop, RandomHorizontalFlip, AlternatingFlip) and the
// device data path's kernels (device_batch_kernels.cuh, and its CPU loops in
// device_batch_cpu.cpp) both call these functions, so a given (seed, epoch, sample index) picks
// the same crop and flip on every device. Only integer arithmetic, one exact conversion and one
// double multiply per draw: nothing a compiler may contract or reorder.
//
// Nothing here includes Tensor or CUDA headers: nvcc, the host compiler and the kernel emulator
// all build it.

#include <cstdint>

#include "core/macros.h"
#include "core/philox.h"

namespace rg::data {

enum class Padding { zeros, reflect };

// ---- the draws of SampleRng -----------------------------------------------------------------

// Draw number `draw` of sample `index` in `epoch`: uniform in [0, 1) with 53 random bits. The
// epoch sits above the draw counter in Philox's counter (20 bits of draws per sample and epoch).
RG_HOST_DEVICE inline double sample_uniform(uint64_t seed, uint64_t epoch, uint64_t index,
                                            uint64_t draw) {
  const Philox4 r = philox4x32_10(index, epoch << 20 | draw, seed);
  return static_cast<double>((static_cast<uint64_t>(r.v[0]) << 32 | r.v[1]) >> 11) * 0x1.0p-53;
}

// A uniform integer in [0, n) from a uniform u in [0, 1).
RG_HOST_DEVICE inline int64_t sample_below(double u, int64_t n) {
  const auto v = static_cast<int64_t>(u * static_cast<double>(n));
  return v < n - 1 ? v : n - 1;
}

// The key of a sample's draws that are the same in every epoch (SampleRng::same_every_epoch):
// another key than the seed, so that none of them is one of epoch 0's draws.
RG_HOST_DEVICE inline uint64_t same_every_epoch_key(uint64_t seed) {
  return seed ^ 0x9E3779B97F4A7C15ULL;
}

// ---- crop and flip --------------------------------------------------------------------------

enum class FlipMode : int32_t {
  none,
  random,       // RandomHorizontalFlip: mirrored when a fresh draw is below the probability
  alternating,  // AlternatingFlip: a coin drawn once per sample, inverted in odd epochs
};

// The augmentation of one image (C, H, W) -> (C, out_h, out_w), in the CPU recipes' order: a
// random crop of the padded image (RandomCrop), then a flip. Plain data, passed to kernels by
// value.
struct GeometrySpec {
  int64_t crop = 0;  // the crop's side (RandomCrop's size); 0: no crop, the image's own size
  int64_t padding = 0;
  Padding padding_mode = Padding::zeros;
  FlipMode flip = FlipMode::none;
  double flip_probability = 0.5;  // FlipMode::random
};

// Where one sample's output pixels come from: the crop window's corner in padded coordinates,
// and whether the crop is mirrored.
struct SampleGeometry {
  int64_t top = 0, left = 0;
  bool flip = false;
};

// The draws of one sample, exactly as the CPU transforms make them: RandomCrop takes draws 0
// (top) and 1 (left) of the sample's stream, RandomHorizontalFlip the next one; AlternatingFlip
// draws from the sample's every-epoch stream and takes none of this one's.
RG_HOST_DEVICE inline SampleGeometry draw_geometry(const GeometrySpec& spec, uint64_t seed,
                                                   uint64_t epoch, uint64_t index, int64_t height,
                                                   int64_t width) {
  SampleGeometry g;
  uint64_t draw = 0;
  if (spec.crop > 0) {
    g.top = sample_below(sample_uniform(seed, epoch, index, draw++),
                         height + 2 * spec.padding - spec.crop + 1);
    g.left = sample_below(sample_uniform(seed, epoch, index, draw++),
                          width + 2 * spec.padding - spec.crop + 1);
  }
  if (spec.flip == FlipMode::random) {
    g.flip = sample_uniform(seed, epoch, index, draw++) < spec.flip_probability;
  } else if (spec.flip == FlipMode::alternating) {
    const bool first = sample_uniform(same_every_epoch_key(seed), 0, index, 0) < 0.5;
    g.flip = first != (epoch % 2 == 1);
  }
  return g;
}

// The source coordinate of padded coordinate i along an axis of n pixels: i itself inside,
// -1 in zero padding, the mirror image without repeating the edge in reflect padding
// (-1 -> 1, n -> n - 2; PyTorch's F.pad mode 'reflect', valid for a padding below n).
RG_HOST_DEVICE inline int64_t padded_source(int64_t i, int64_t n, Padding mode) {
  if (i >= 0 && i < n) return i;
  if (mode == Padding::zeros) return -1;
  return i < 0 ? -i : 2 * (n - 1) - i;
}

// Output pixel (y, x) of a sample with geometry g: its source row and column in the image
// (H, W), or -1 where it falls into zero padding. Mirroring comes after the crop (the CPU
// transforms' order): output column x reads crop column out_w - 1 - x.
struct SourcePixel {
  int64_t y, x;
};
RG_HOST_DEVICE inline SourcePixel crop_flip_source(const GeometrySpec& spec,
                                                   const SampleGeometry& g, int64_t y, int64_t x,
                                                   int64_t height, int64_t width, int64_t out_w) {
  const int64_t cx = g.flip ? out_w - 1 - x : x;
  if (spec.crop == 0) return {y, cx};
  return {padded_source(g.top + y - spec.padding, height, spec.padding_mode),
          padded_source(g.left + cx - spec.padding, width, spec.padding_mode)};
}

// Output pixel (y, x) of a view of an image (H, W) shifted by (dy, dx) with reflection at the
// border, then mirrored when `flip`: out[y][x] = in[y + dy][x' + dx] with x' = W - 1 - x when
// mirrored. airbench94's test-time views (cifar_task.cpp): the mirror image, and the shifts by
// one pixel up-left and down-right, each with its mirror.
RG_HOST_DEVICE inline SourcePixel shifted_view_source(int64_t y, int64_t x, int64_t dy, int64_t dx,
                                                      bool flip, int64_t height, int64_t width) {
  const int64_t fx = flip ? width - 1 - x : x;
  return {padded_source(y + dy, height, Padding::reflect),
          padded_source(fx + dx, width, Padding::reflect)};
}

}  // namespace rg::data
