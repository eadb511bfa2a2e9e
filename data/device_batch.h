#pragma once
// The device data path's kernels, one element at a time, and their two backends. Each function
// below has an OnCpu overload (device_batch_cpu.cpp: a parallel_for over the elements) and an
// OnCuda one (device_batch_cuda.cu: the grid-stride kernels of device_batch_kernels.cuh); both
// call the same RG_HOST_DEVICE element functions, and the kernel emulator runs the kernels
// against the CPU DataLoader in tests/kernels/device_batch_kernels_test.cpp.
//
//   plan_epoch:   once per epoch, a thread per position of the sampler's order: that sample's
//                 crop corner and flip, drawn from its Philox stream (augment_geometry.h);
//   gather_batch: once per batch, a thread per output element: the pixel its sample's geometry
//                 points at, through a (C, 256) table of normalised values; and its label;
//   shifted_view: a thread per element of a batch already made: a shifted and/or mirrored copy
//                 (test-time augmentation).
//
// Normalisation is a table lookup rather than arithmetic: the table holds ToFloat then
// Normalize of every u8 value, computed by those very CPU transforms, so the batch equals the
// CPU's bit for bit whatever the device's rounding and fused multiply-adds, in any output dtype.
//
// Shapes: images (N, C, H, W) u8; labels (N) i64; order (n) i64 dataset indices; plan (n, 3) i64;
// table (C, 256) in the output dtype; output (B, C, out_h, out_w) in any strides (channels-last
// is a stride order) and labels (B) i64.

#include <cstdint>

#include "core/dispatch.h"
#include "core/macros.h"
#include "core/tensor.h"
#include "data/augment_geometry.h"

namespace rg::data {

enum class Mirror { no, yes };

namespace detail {

// ---- element functions ------------------------------------------------------------------

RG_HOST_DEVICE inline void plan_element(const int64_t* order, int64_t position,
                                        const GeometrySpec& spec, uint64_t seed, uint64_t epoch,
                                        int64_t height, int64_t width, int64_t* plan) {
  const SampleGeometry g =
      draw_geometry(spec, seed, epoch, static_cast<uint64_t>(order[position]), height, width);
  plan[3 * position] = g.top;
  plan[3 * position + 1] = g.left;
  plan[3 * position + 2] = g.flip ? 1 : 0;
}

template <class T>
struct GatherArgs {
  const uint8_t* images = nullptr;  // (N, C, H, W) contiguous
  const int64_t* labels = nullptr;  // (N)
  const int64_t* order = nullptr;   // the epoch's dataset indices
  const int64_t* plan = nullptr;    // (n, 3): top, left, flip of each position
  const T* table = nullptr;         // (C, 256): the normalised value of each u8 value
  int64_t channels = 0, height = 0, width = 0;
  int64_t start = 0;  // the batch's first position in the order
  int64_t batch = 0, out_h = 0, out_w = 0;
  int64_t stride[4] = {};  // the output's strides (b, c, y, x), in elements
  T* out = nullptr;
  int64_t* out_labels = nullptr;
  GeometrySpec spec{};
};

// Element e of the batch, row-major over (b, c, y, x).
template <class T>
RG_HOST_DEVICE inline void gather_element(const GatherArgs<T>& a, int64_t e) {
  const int64_t x = e % a.out_w;
  const int64_t y = e / a.out_w % a.out_h;
  const int64_t c = e / (a.out_w * a.out_h) % a.channels;
  const int64_t b = e / (a.out_w * a.out_h * a.channels);
  const int64_t position = a.start + b;
  const int64_t index = a.order[position];
  const SampleGeometry g{a.plan[3 * position], a.plan[3 * position + 1],
                         a.plan[3 * position + 2] != 0};
  const SourcePixel s = crop_flip_source(a.spec, g, y, x, a.height, a.width, a.out_w);
  // Zero padding pads the u8 image with 0, which then becomes the normalised value of 0.
  const int64_t value = s.y < 0 || s.x < 0
                            ? 0
                            : a.images[((index * a.channels + c) * a.height + s.y) * a.width + s.x];
  a.out[b * a.stride[0] + c * a.stride[1] + y * a.stride[2] + x * a.stride[3]] =
      a.table[c * 256 + value];
  if (c == 0 && y == 0 && x == 0) a.out_labels[b] = a.labels[index];
}

template <class T>
struct ViewArgs {
  const T* in = nullptr;  // (P, H, W) contiguous: P planes
  T* out = nullptr;       // the same shape
  int64_t height = 0, width = 0;
  int64_t dy = 0, dx = 0;
  bool flip = false;
};

template <class T>
RG_HOST_DEVICE inline void view_element(const ViewArgs<T>& a, int64_t e) {
  const int64_t x = e % a.width;
  const int64_t y = e / a.width % a.height;
  const int64_t plane = e / (a.width * a.height);
  const SourcePixel s = shifted_view_source(y, x, a.dy, a.dx, a.flip, a.height, a.width);
  a.out[e] = a.in[(plane * a.height + s.y) * a.width + s.x];
}

// ---- the inputs of one gather, as tensors ---------------------------------------------------

struct GatherInputs {
  Tensor images;  // (N, C, H, W) u8, contiguous, on the device
  Tensor labels;  // (N) i64
  Tensor order;   // (n) i64
  Tensor plan;    // (n, 3) i64
  Tensor table;   // (C, 256) in the output dtype
  GeometrySpec spec{};
};

// The arguments of a gather into images_out (B, C, out_h, out_w) and labels_out (B).
template <class T>
GatherArgs<T> gather_args(const GatherInputs& in, int64_t start, const Tensor& images_out,
                          const Tensor& labels_out) {
  GatherArgs<T> a;
  a.images = static_cast<const uint8_t*>(in.images.data_ptr());
  a.labels = static_cast<const int64_t*>(in.labels.data_ptr());
  a.order = static_cast<const int64_t*>(in.order.data_ptr());
  a.plan = static_cast<const int64_t*>(in.plan.data_ptr());
  a.table = static_cast<const T*>(in.table.data_ptr());
  a.channels = in.images.size(1);
  a.height = in.images.size(2);
  a.width = in.images.size(3);
  a.start = start;
  a.batch = images_out.size(0);
  a.out_h = images_out.size(2);
  a.out_w = images_out.size(3);
  for (int d = 0; d < 4; ++d) a.stride[d] = images_out.strides()[static_cast<std::size_t>(d)];
  a.out = static_cast<T*>(images_out.data_ptr());
  a.out_labels = static_cast<int64_t*>(labels_out.data_ptr());
  a.spec = in.spec;
  return a;
}

template <class T>
ViewArgs<T> view_args(const Tensor& images, int64_t dy, int64_t dx, Mirror mirror,
                      const Tensor& out) {
  ViewArgs<T> a;
  a.in = static_cast<const T*>(images.data_ptr());
  a.out = static_cast<T*>(out.data_ptr());
  a.height = images.size(-2);
  a.width = images.size(-1);
  a.dy = dy;
  a.dx = dx;
  a.flip = mirror == Mirror::yes;
  return a;
}

// ---- the backends -------------------------------------------------------------------------

// plan (n, 3) i64 of the epoch's order (n) i64, both on the device.
void plan_epoch(OnCpu, const Tensor& order, const GeometrySpec& spec, uint64_t seed, uint64_t epoch,
                int64_t height, int64_t width, const Tensor& plan);
void plan_epoch(OnCuda, const Tensor& order, const GeometrySpec& spec, uint64_t seed,
                uint64_t epoch, int64_t height, int64_t width, const Tensor& plan);

// Positions [start, start + B) of the order into images_out (B, C, out_h, out_w) in the table's
// dtype and labels_out (B) i64.
void gather_batch(OnCpu, const GatherInputs& in, int64_t start, const Tensor& images_out,
                  const Tensor& labels_out);
void gather_batch(OnCuda, const GatherInputs& in, int64_t start, const Tensor& images_out,
                  const Tensor& labels_out);

// out = images (N, C, H, W), contiguous and floating, shifted by (dy, dx) with reflection
// (|dy| < H, |dx| < W), then mirrored when asked.
void shifted_view(OnCpu, const Tensor& images, int64_t dy, int64_t dx, Mirror mirror,
                  const Tensor& out);
void shifted_view(OnCuda, const Tensor& images, int64_t dy, int64_t dx, Mirror mirror,
                  const Tensor& out);

}  // namespace detail
}  // namespace rg::data
