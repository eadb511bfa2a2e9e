#pragma once
// The packed layouts of the tile convolutions (conv2d_tiles.h), their packers, and the
// per-ISA kernels that read them. Internal to ops/conv/conv2d.
//
// Sizes (letters used below): Cp = C rounded up to 32, Op = O rounded up to 32, T = kH·kW taps,
// KB = Cp / 32 channel blocks; a chunk holds `images` images, Q = images·Hs·Ws positions,
// Qpad = Q rounded up to 32; a plane holds `plane` positions (Q plus the taps' reach, a
// multiple of 32, rounded so that consecutive staging planes start an odd number of cache
// lines apart: the 16 rows a transpose reads then fall in 16 different L1 sets).

#include <cstdint>
#include <vector>

#include "ops/conv/conv2d/conv2d_tiles.h"

namespace rg::detail::tiles {

constexpr int64_t kChannelBlock = 32;   // channels per A/B tile row, output channels per pair
constexpr int64_t kPositionBlock = 32;  // positions per pair of tiles

inline int64_t round_up(int64_t n, int64_t m) {
  return (n + m - 1) / m * m;
}

struct Layout {
  int64_t Cp = 0, Op = 0, T = 0, KB = 0;
  int64_t phases_h = 1, phases_w = 1;
  int64_t Hs = 0, Ws = 0;  // rows per image in a phase plane, and the row width
  int64_t images = 0;      // per chunk
  int64_t Q = 0, Qpad = 0;
  int64_t plane = 0;
  std::vector<int64_t> tap_phase;  // per tap t = i·kW + j: the phase plane it reads
  std::vector<int64_t> tap_shift;  // ... and the shift, in positions, within it

  int64_t phases() const { return phases_h * phases_w; }
  // Whether the image's padding rows and columns are shared with its neighbours.
  bool shared = false;
  // Whether some tap reads phase p (a 1×1 kernel of stride 2 reads one of four): the others
  // are never packed.
  std::vector<uint8_t> phase_used;
  // Folded taps: a convolution of few channels (C·T <= 32: ResNet's and airbench's
  // 3-channel first layers) runs as a 1×1 convolution of C·T channels, channel c·T + t being
  // channel c's plane shifted by tap t: one block of 32 channels instead of T mostly empty
  // ones. `channels` is what the kernels see: C, or C·T when folded.
  bool folded = false;
  int64_t channels = 0;
};

// Which planes a layout is for: the forward's pair planes (4 bytes per position) or the
// backward-weight's plain planes (2 bytes); the plane stride is rounded for each.
enum class PlaneKind { pairs, plain };
// The layout of g for chunks of `images` images (the last chunk may hold fewer).
Layout make_layout(const TileConv& g, int64_t images, PlaneKind kind);
// Whether g's taps fold into its channels (see Layout::folded).
bool taps_fold(const TileConv& g);
// The folded layout of g over the positions of `source` (its unfolded layout, which the
// packers fill first).
Layout fold_taps(const TileConv& g, const Layout& source, PlaneKind kind);
// Images per chunk such that `bytes_per_image(images)`-sized working sets stay near `budget`.
int64_t chunk_images(const TileConv& g, int64_t bytes_per_image, int64_t budget);

// Packers (conv2d_tiles_pack.cpp). The kernels read their operands channels-last, so that
// every row of a tile is 64 aligned bytes (a row straddling two cache lines halved the tile
// loads' rate: 0.55-0.63 of the aligned loop's speed on ResNet18's layers); the packers first
// lay a chunk out in staging planes, one channel (or pair of channels) per plane, then
// transpose blocks of 16 × 16 32-bit pairs.
//
// Staging: pair planes of images [n0, n0 + b): out[((phase·Cp/2 + c/2)·plane + pos)·2 + c%2],
// zeros in the padding, the padded channels and past the data; plain planes:
// out[(phase·Cp + c)·plane + pos], channels [0, channels) only.
void pack_pair_planes(const TileConv& g, const Layout& l, const uint16_t* x, int64_t n0, int64_t b,
                      uint16_t* out);
void pack_plain_planes(const TileConv& g, const Layout& l, const uint16_t* x, int64_t n0, int64_t b,
                       int64_t channels, uint16_t* out);
// The same planes of a folded layout l, from the plain planes of its unfolded source layout
// (channels [0, C) packed) of a chunk of b images.
void pack_folded_pairs(const Layout& source, const Layout& l, const uint16_t* planes, int64_t b,
                       uint16_t* out);
void pack_folded_plain(const Layout& source, const Layout& l, const uint16_t* planes, int64_t b,
                       uint16_t* out);

// The forward's input, channels-last, from its pair planes: out[(phase·plane + pos)·Cp + c]
// for the positions [0, plane) of the used phases. out holds phases·plane·Cp values.
void transpose_pair_planes(const Layout& l, const uint16_t* pairs, uint16_t* out);
// The backward-weight's input as pairs of positions, channels-last, from its plain planes:
// even[((phase·plane/2 + P)·Cp + c)·2 + e] = x[c, 2P + e] and odd[...] = x[c, 2P + 1 + e], so
// that a tap's shift, even or odd, reads whole pairs. Each holds phases·plane·Cp values; odd
// may be null where no tap's shift is odd.
void transpose_plain_planes(const Layout& l, const uint16_t* plain, uint16_t* even, uint16_t* odd);
// gy of images [n0, n0 + b) on the plane's positions, zero at junk ones and padded output
// channels: out[o·Qb + q], Qb = b·Hs·Ws rounded up to 32; out holds Op·Qb values.
void pack_gy_plain(const TileConv& g, const Layout& l, const uint16_t* gy, int64_t n0, int64_t b,
                   uint16_t* out);
// The forward's B tiles, pairs of channels side by side (VNNI):
// out[((ob·T + t)·KB + kb)·512 + kp·32 + o·2 + e] = W[ob·16 + o, kb·32 + 2·kp + e, tap t]
// (folded: W[o, c·T + t] = the weight of channel c, tap t), with W read from w as `order`
// says; zeros past O and C. out holds Op·T·Cp values, staging T·O·C.
void pack_weights(const TileConv& g, const Layout& l, const uint16_t* w, WeightOrder order,
                  uint16_t* staging, uint16_t* out);

// Where the valid outputs of one block of kPositionBlock positions go: the positions of one
// image in the block (bits of `mask`), written to `count` consecutive elements starting at
// element `dst` of that image's output channel planes (rows of an image's output are
// consecutive in memory, so they are one run however many rows the block spans).
struct OutSegment {
  int64_t image = 0, dst = 0;
  uint32_t mask = 0;
  int32_t count = 0;
};
struct OutMap {
  std::vector<int64_t> begin;  // segments of block k: [begin[k], begin[k + 1])
  std::vector<OutSegment> segments;
};
OutMap make_out_map(const TileConv& g, const Layout& l);

// The weights of a one-tap layout (1×1 kernels, folded taps) as A tiles, rows of output
// channels: out[(ob·KB + kb)·512 + o·32 + cc] = W[ob·16 + o, kb·32 + cc], from pack_weights'
// staging (filled by pack_weights first). out holds Op·Cp values.
void pack_weight_rows(const TileConv& g, const Layout& l, const uint16_t* staging, uint16_t* out);

// Whether the forward of layout l runs the one-tap kernels: with a single tap (1×1 kernels,
// folded taps) the pair planes' rows are aligned as they are, and the sums come out as (output
// channel, position) with no transpose; the channels-last kernels' transpose of every 32 × 32
// block outweighed their one tile step there (ResNet18's 1×1 stride-2 layer 2.6 → 6.1 ms).
inline bool one_tap(const Layout& l) {
  return l.T == 1;
}

// One chunk's forward: y[image, o, :] for the chunk's images, from its channels-last input
// (one tap: from its pair planes, against pack_weight_rows' tiles).
struct ForwardChunk {
  const TileConv* g;
  const Layout* l;
  const uint16_t* input;    // transpose_pair_planes (one tap: the pair planes)
  const uint16_t* weights;  // pack_weights (one tap: pack_weight_rows)
  const float* bias;        // Op values (zeros when the conv has no bias)
  const OutMap* out;
  int64_t images;  // in this chunk (<= l->images)
  uint16_t* y;     // the chunk's first image
};
void forward_chunk_amx(const ForwardChunk& c);
void forward_chunk_avx512_bf16(const ForwardChunk& c);

// One chunk's backward-weight: acc[(t·Op + o)·Cp + c] += Σ_q gy[o, q] · x[c, q + shift(t)].
struct WeightChunk {
  const TileConv* g;
  const Layout* l;
  const uint16_t* even;  // transpose_plain_planes
  const uint16_t* odd;
  const uint16_t* gy;  // pack_gy_plain
  int64_t images;      // in this chunk (<= l->images)
  // The chunk's sums start acc's (false: acc holds earlier chunks' sums, which it adds to).
  bool first;
  float* acc;
};
// The pairs tap t reads: its phase, and the even or odd pairs as its shift is, from the pair
// holding position shift(t).
inline const uint16_t* tap_pairs(const WeightChunk& c, int64_t t) {
  const Layout& l = *c.l;
  const int64_t shift = l.tap_shift[static_cast<std::size_t>(t)], odd = shift & 1;
  const int64_t pair = l.tap_phase[static_cast<std::size_t>(t)] * (l.plane / 2) + (shift - odd) / 2;
  return (odd ? c.odd : c.even) + pair * l.Cp * 2;
}
void backward_weight_chunk_amx(const WeightChunk& c);
void backward_weight_chunk_avx512_bf16(const WeightChunk& c);

}  // namespace rg::detail::tiles
