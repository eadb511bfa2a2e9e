// Drivers of the tile convolutions (conv2d_tiles.h): chunks of images over the threads, the
// packing of each chunk, and the kernel of the machine's ISA.
//
// Chunk sizes (measured on ResNet18's and airbench94's layers, AMX, see ops/conv/conv2d/README.md):
// the forward packs a chunk's input within kForwardBudget (staging and channels-last planes),
// so that it stays in L2 while every group of output channels reads it; the backward-weight
// packs x's pairs and gy within kWeightBudget.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <sys/mman.h>

#include "core/error.h"
#include "core/thread_pool.h"
#include "ops/conv/conv2d/conv2d_tiles_layout.h"

namespace rg::detail::tiles {
namespace {

constexpr int64_t kForwardBudget = 512 << 10;
constexpr int64_t kWeightBudget = 768 << 10;
constexpr int64_t kLargeSumsBudget = 2 << 20;
// Values past the staging planes that transpose_plain_planes may read.
constexpr int64_t kSlack = 64;

// A 64-byte-aligned buffer that grows and is kept: the kernels' scratch lives per thread and is
// reused from call to call instead of being page-faulted in every time (MBs per call).
template <class T>
class Scratch {
 public:
  T* get(int64_t n) {
    if (n > size_) {
      // Whole 2 MB pages, offered to the kernel as transparent huge pages: a tile's 16 rows
      // lie in 16 planes, kilobytes apart, and with 4 KB pages every tile load needed 16 TLB
      // entries.
      constexpr std::size_t kHuge = std::size_t{2} << 20;
      const std::size_t bytes =
          (static_cast<std::size_t>(n) * sizeof(T) + kHuge - 1) / kHuge * kHuge;
      data_.reset(static_cast<T*>(std::aligned_alloc(kHuge, bytes)));
      RG_CHECK(data_, "conv2d (bf16 tiles): cannot allocate ", bytes, " bytes of scratch");
      madvise(data_.get(), bytes, MADV_HUGEPAGE);  // advice only: fine if refused
      size_ = static_cast<int64_t>(bytes / sizeof(T));
    }
    return data_.get();
  }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data_;
  int64_t size_ = 0;
};

// Per thread: one buffer per role.
Scratch<uint16_t>& planes_scratch() {
  thread_local Scratch<uint16_t> s;
  return s;
}
Scratch<uint16_t>& gy_scratch() {
  thread_local Scratch<uint16_t> s;
  return s;
}
Scratch<uint16_t>& weight_scratch() {
  thread_local Scratch<uint16_t> s;
  return s;
}
Scratch<uint16_t>& staging_scratch() {
  thread_local Scratch<uint16_t> s;
  return s;
}
Scratch<uint16_t>& input_scratch() {
  thread_local Scratch<uint16_t> s;
  return s;
}
Scratch<float>& sums_scratch() {
  thread_local Scratch<float> s;
  return s;
}

const uint16_t* bits(const BFloat16* p) {
  return reinterpret_cast<const uint16_t*>(p);
}
uint16_t* bits(BFloat16* p) {
  return reinterpret_cast<uint16_t*>(p);
}

}  // namespace

bool tile_isa_available(TileIsa& isa) {
  if (cpu_has(CpuIsa::amx)) {
    isa = TileIsa::amx;
    return true;
  }
  if (cpu_has(CpuIsa::avx512_bf16)) {
    isa = TileIsa::avx512_bf16;
    return true;
  }
  return false;
}

std::string_view tile_isa_name(TileIsa isa) {
  return isa == TileIsa::amx ? "amx" : "avx512_bf16";
}

namespace {
// The layouts of one call: `kernel` is what the kernels read; `source` the unfolded layout
// that the packers fill first when the taps fold (else the same).
struct Layouts {
  Layout source, kernel;
  // Values of the staging planes: the kernel's layout's, and the unfolded source's.
  int64_t staging_values() const {
    return kernel.phases() * kernel.Cp * kernel.plane +
           (kernel.folded ? source.phases() * source.Cp * source.plane : 0);
  }
};
Layouts make_layouts(const TileConv& g, int64_t images, PlaneKind kind) {
  Layout source = make_layout(g, images, PlaneKind::plain);
  if (taps_fold(g)) return {source, fold_taps(g, source, kind)};
  Layout kernel = make_layout(g, images, kind);
  return {kernel, kernel};
}
// The kernels' input values per image (channels-last planes; the backward-weight's even and
// odd pairs are twice that).
int64_t input_values_per_image(const TileConv& g, PlaneKind kind) {
  const Layout l = make_layouts(g, 1, kind).kernel;
  return l.phases() * l.Cp * l.plane;
}
// Fills `staging` with the chunk's staging planes (pair or plain, as the kernel layout's kind
// is), folding taps through the source planes where the layouts fold.
void pack_staging(const TileConv& g, const Layouts& ls, PlaneKind kind, const uint16_t* x,
                  int64_t n0, int64_t b, uint16_t* staging) {
  const Layout& l = ls.kernel;
  if (l.folded) {
    uint16_t* source = staging + l.phases() * l.Cp * l.plane;
    pack_plain_planes(g, ls.source, x, n0, b, g.C, source);
    if (kind == PlaneKind::pairs)
      pack_folded_pairs(ls.source, l, source, b, staging);
    else
      pack_folded_plain(ls.source, l, source, b, staging);
  } else if (kind == PlaneKind::pairs) {
    pack_pair_planes(g, l, x, n0, b, staging);
  } else {
    pack_plain_planes(g, l, x, n0, b, l.Cp, staging);
  }
}
}  // namespace

void tile_conv_forward(const TileConv& g, const BFloat16* x, const BFloat16* w, WeightOrder order,
                       const BFloat16* bias, BFloat16* y, TileIsa isa) {
  if (g.N == 0) return;
  const int64_t images =
      chunk_images(g, input_values_per_image(g, PlaneKind::pairs) * 2, kForwardBudget);
  const Layouts ls = make_layouts(g, images, PlaneKind::pairs);
  const Layout& l = ls.kernel;
  const OutMap out = make_out_map(g, l);
  uint16_t* weights = weight_scratch().get(l.Op * l.T * l.Cp);
  pack_weights(g, l, bits(w), order, staging_scratch().get(l.T * g.O * l.channels), weights);
  std::vector<float> bias_f32(static_cast<std::size_t>(l.Op), 0.0f);
  if (bias)
    for (int64_t o = 0; o < g.O; ++o) bias_f32[static_cast<std::size_t>(o)] = float(bias[o]);
  const int64_t chunks = (g.N + images - 1) / images;
  const int64_t input_values = l.phases() * l.plane * l.Cp;
  struct Buffers {
    uint16_t *staging, *input;
  };
  parallel_claim(
      chunks,
      [&] {
        return Buffers{planes_scratch().get(ls.staging_values()),
                       input_scratch().get(input_values)};
      },
      [&](int64_t chunk, Buffers& buffers) {
        const int64_t n0 = chunk * images, b = std::min(images, g.N - n0);
        pack_staging(g, ls, PlaneKind::pairs, bits(x), n0, b, buffers.staging);
        if (!one_tap(l)) transpose_pair_planes(l, buffers.staging, buffers.input);
        const ForwardChunk c{.g = &g,
                             .l = &l,
                             .input = one_tap(l) ? buffers.staging : buffers.input,
                             .weights = weights,
                             .bias = bias_f32.data(),
                             .out = &out,
                             .images = b,
                             .y = bits(y) + n0 * g.O * g.Ho * g.Wo};
        if (isa == TileIsa::amx)
          forward_chunk_amx(c);
        else
          forward_chunk_avx512_bf16(c);
      });
}

void tile_conv_backward_weight(const TileConv& g, const BFloat16* gy, const BFloat16* x,
                               BFloat16* gw, TileIsa isa) {
  const Layout one = make_layouts(g, 1, PlaneKind::plain).kernel;
  const int64_t per_image =
      (2 * input_values_per_image(g, PlaneKind::plain) + one.Qpad * one.Op) * 2;
  // Every chunk loads and stores all of a part's sums once: where they are large (ResNet18's
  // 512-channel layers: 9.4 MB) larger chunks pay, though they outgrow L2 (0.62 of the time
  // there, single thread; no gain below 4 MB).
  const int64_t sums_bytes = one.T * one.Cp * one.Op * 4;
  const int64_t images = std::min(
      g.N, std::max<int64_t>(
               1, (sums_bytes > (4 << 20) ? kLargeSumsBudget : kWeightBudget) / per_image));
  const Layouts ls = make_layouts(g, images, PlaneKind::plain);
  const Layout& l = ls.kernel;
  // Fixed parts of the batch, each summing into its own acc, the parts added in order: the
  // result does not depend on thread timing. Four parts per thread, claimed as the threads
  // finish (one slow core does not hold up the others), where the sums are small; one where
  // each part's sums take megabytes.
  const int64_t sums = l.T * l.Op * l.Cp;
  const int64_t per_thread = sums * 4 <= (1 << 20) ? 4 : 1;
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(num_threads() * per_thread, g.N));
  float* acc = sums_scratch().get(parts * sums);
  const int64_t pair_values = l.phases() * l.plane * l.Cp;
  const bool odd_shifts =
      std::any_of(l.tap_shift.begin(), l.tap_shift.end(), [](int64_t s) { return s % 2 != 0; });
  struct Buffers {
    uint16_t *staging, *pairs, *gy;
  };
  parallel_claim(
      parts,
      [&] {
        // The staging planes, then x's even and odd pairs; the last odd pair of the last
        // plane reads one value past the staging planes (kSlack).
        return Buffers{planes_scratch().get(ls.staging_values() + kSlack),
                       input_scratch().get(2 * pair_values), gy_scratch().get(l.Qpad * l.Op)};
      },
      [&](int64_t part, Buffers& buffers) {
        const int64_t lo = part * g.N / parts, hi = (part + 1) * g.N / parts;
        float* part_acc = acc + part * sums;
        if (lo == hi) {
          std::fill(part_acc, part_acc + sums, 0.0f);
          return;
        }
        uint16_t *staging = buffers.staging, *pairs = buffers.pairs, *gyp = buffers.gy;
        for (int64_t n0 = lo; n0 < hi; n0 += images) {
          const int64_t b = std::min(images, hi - n0);
          pack_staging(g, ls, PlaneKind::plain, bits(x), n0, b, staging);
          transpose_plain_planes(l, staging, pairs, odd_shifts ? pairs + pair_values : nullptr);
          pack_gy_plain(g, l, bits(gy), n0, b, gyp);
          const WeightChunk c{.g = &g,
                              .l = &l,
                              .even = pairs,
                              .odd = pairs + pair_values,
                              .gy = gyp,
                              .images = b,
                              .first = n0 == lo,
                              .acc = part_acc};
          if (isa == TileIsa::amx)
            backward_weight_chunk_amx(c);
          else
            backward_weight_chunk_avx512_bf16(c);
        }
      });
  // gw[o, c, t] = Σ_part acc[part][(t·Op + o)·Cp + c], rounded once (folded: c runs over
  // channel·taps, t over one tap: the same memory order). For one o, the T rows of sums are
  // read in order, and gw's row is written in order.
  const int64_t T = l.T, C = l.channels, CT = C * T;
  parallel_for(g.O, 1, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t t = 0; t < T; ++t) {
          const float* a = acc + (t * l.Op + o) * l.Cp + c;
          float s = a[0];
          for (int64_t part = 1; part < parts; ++part) s += a[part * sums];
          gw[o * CT + c * T + t] = BFloat16(s);
        }
  });
}

}  // namespace rg::detail::tiles
