// The AMX kernels of the tile convolutions (conv2d_tiles.h): eight tile registers of 16 rows ×
// 64 bytes, used as a 2 × 2 block of f32 accumulators (tiles 0-3), two A tiles (4, 5) and two
// B tiles (6, 7), so that each loaded tile feeds two _tile_dpbf16ps.
//   forward          A: 16 positions × 32 channels of the channels-last input (a tap's shift
//                    moves whole rows: every row 64 aligned bytes); B: the weights' VNNI
//                    tile; C: positions × output channels, transposed on the way out.
//   backward-weight  A: 16 output channels × 32 positions of gy; B: 16 pairs of positions ×
//                    16 channels of x (the even or odd pairs, by the tap's shift); C: output
//                    channels × channels, summed over the chunk's positions.
// Every function here is compiled for AMX by its target attribute and runs only where
// cpu_isa() >= CpuIsa::amx (which also means the OS granted the tile state).
#include <vector>

#include "ops/conv/conv2d/conv2d_tiles_vector.h"

namespace rg::detail::tiles {
namespace {

// LDTILECFG's 64-byte operand (palette 1).
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Every tile is 16 rows of 64 bytes: 16 × 16 f32 or 16 × 32 bf16.
RG_TARGET_AMX void configure_tiles() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  _tile_loadconfig(&cfg);
}

// Weights of one o-pair: 2·T·KB tiles of 1 KB. Groups of o-pairs whose weights fit this stay
// in L2 while the positions of a chunk stream past.
constexpr int64_t kWeightGroupBytes = 256 << 10;

}  // namespace

namespace {
// The one-tap forward (see one_tap): A = 16 output channels × 32 channels (pack_weight_rows),
// B = 16 pairs of channels × 16 positions of the pair planes, C = (output channels,
// positions): stored as they are.
RG_TARGET_AMX void forward_one_tap_amx(const ForwardChunk& c) {
  const TileConv& g = *c.g;
  const Layout& l = *c.l;
  const int64_t KB = l.KB, per_o_block = KB * 512, b_stride = l.plane * 4;
  const int64_t blocks = (c.images * l.Hs * l.Ws + kPositionBlock - 1) / kPositionBlock;
  const int64_t opairs = l.Op / 32;
  const int64_t group = std::max<int64_t>(1, kWeightGroupBytes / (2 * per_o_block * 2));
  alignas(64) float stage[32 * 32];
  configure_tiles();
  for (int64_t og = 0; og < opairs; og += group) {
    const int64_t og_end = std::min(opairs, og + group);
    for (int64_t k = 0; k < blocks; ++k) {
      const OutSegment* seg = c.out->segments.data() + c.out->begin[k];
      const OutSegment* seg_end = c.out->segments.data() + c.out->begin[k + 1];
      if (seg == seg_end) continue;
      const uint16_t* bk = c.input + k * kPositionBlock * 2;
      for (int64_t op = og; op < og_end; ++op) {
        const uint16_t* a0 = c.weights + 2 * op * per_o_block;
        const uint16_t* a1 = a0 + per_o_block;
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        for (int64_t kb = 0; kb < KB; ++kb) {
          const uint16_t* b = bk + kb * 16 * l.plane * 2;
          _tile_loadd(4, a0 + kb * 512, 64);
          _tile_loadd(5, a1 + kb * 512, 64);
          _tile_loadd(6, b, b_stride);
          _tile_loadd(7, b + 32, b_stride);
          _tile_dpbf16ps(0, 4, 6);
          _tile_dpbf16ps(1, 4, 7);
          _tile_dpbf16ps(2, 5, 6);
          _tile_dpbf16ps(3, 5, 7);
        }
        _tile_stored(0, stage, 128);
        _tile_stored(1, stage + 16, 128);
        _tile_stored(2, stage + 16 * 32, 128);
        _tile_stored(3, stage + 16 * 32 + 16, 128);
        const int64_t o0 = op * 32;
        store_block(stage, std::min<int64_t>(32, g.O - o0), c.bias + o0, seg, seg_end, c.images,
                    g.O, o0, g.Ho * g.Wo, c.y);
      }
    }
  }
  _tile_release();
}
}  // namespace

namespace {
// The epilogue of a block of the channels-last forward — the 32 × 32 sums from (position,
// output channel) to (output channel, position), then rounded and written by runs — in
// kEpilogueSlices slices, so that it can run between the next block's tile instructions: on a
// 64-channel layer the 18 tile steps of a block took as long as its epilogue did after them
// (3.6 ms each of the 12.4 ms forward of ResNet18's 64-channel layer), and the vector units are
// idle while the tile unit works.
constexpr int kEpilogueSlices = 4 + 8;  // four 16 × 16 transposes, then 4 rows at a time

struct Epilogue {
  const float* by_position = nullptr;  // null: nothing pending
  float* by_channel = nullptr;
  int64_t o0 = 0;
  const OutSegment *seg = nullptr, *seg_end = nullptr;
};

RG_TARGET_AMX inline void epilogue_slice(const ForwardChunk& c, const Epilogue& e, int slice) {
  if (slice < 4) {
    const int bi = slice / 2, bj = slice % 2;
    __m512i rows[16];
    for (int r = 0; r < 16; ++r)
      rows[r] = _mm512_castps_si512(_mm512_loadu_ps(e.by_position + (bi * 16 + r) * 32 + bj * 16));
    transpose_16x16_epi32(rows, reinterpret_cast<uint32_t*>(e.by_channel + bj * 16 * 32 + bi * 16),
                          32);
    return;
  }
  const TileConv& g = *c.g;
  const int64_t r0 = (slice - 4) * 4, rows = std::min<int64_t>(4, g.O - e.o0 - r0);
  if (rows <= 0) return;
  store_block(e.by_channel + r0 * 32, rows, c.bias + e.o0 + r0, e.seg, e.seg_end, c.images, g.O,
              e.o0 + r0, g.Ho * g.Wo, c.y);
}
}  // namespace

RG_TARGET_AMX void forward_chunk_amx(const ForwardChunk& c) {
  if (one_tap(*c.l)) return forward_one_tap_amx(c);
  const Layout& l = *c.l;
  const int64_t Cp = l.Cp, T = l.T, KB = l.KB;
  const int64_t per_o_block = T * KB * 512;  // weight values per block of 16 output channels
  const int64_t a_stride = Cp * 2;           // bytes from one position to the next
  std::vector<const uint16_t*> tap(static_cast<std::size_t>(T));
  for (int64_t t = 0; t < T; ++t)
    tap[static_cast<std::size_t>(t)] = c.input + (l.tap_phase[t] * l.plane + l.tap_shift[t]) * Cp;
  const int64_t blocks = (c.images * l.Hs * l.Ws + kPositionBlock - 1) / kPositionBlock;
  const int64_t opairs = l.Op / 32;
  const int64_t group = std::max<int64_t>(1, kWeightGroupBytes / (2 * per_o_block * 2));
  // Two buffers of sums: the block being computed stores into one while the previous block's
  // epilogue reads the other.
  alignas(64) float by_position[2][32 * 32], by_channel[32 * 32];
  int current = 0;
  Epilogue pending;
  configure_tiles();
  for (int64_t og = 0; og < opairs; og += group) {
    const int64_t og_end = std::min(opairs, og + group);
    for (int64_t k = 0; k < blocks; ++k) {
      const OutSegment* seg = c.out->segments.data() + c.out->begin[k];
      const OutSegment* seg_end = c.out->segments.data() + c.out->begin[k + 1];
      if (seg == seg_end) continue;  // junk positions only
      const int64_t q0 = k * kPositionBlock;
      for (int64_t op = og; op < og_end; ++op) {
        const uint16_t* b0 = c.weights + 2 * op * per_o_block;
        const uint16_t* b1 = b0 + per_o_block;
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        int slice = 0;
        for (int64_t t = 0; t < T; ++t) {
          const uint16_t* at = tap[static_cast<std::size_t>(t)] + q0 * Cp;
          for (int64_t kb = 0; kb < KB; ++kb) {
            const int64_t w = (t * KB + kb) * 512;
            _tile_loadd(4, at + kb * 32, a_stride);
            _tile_loadd(5, at + 16 * Cp + kb * 32, a_stride);
            _tile_loadd(6, b0 + w, 64);
            _tile_loadd(7, b1 + w, 64);
            _tile_dpbf16ps(0, 4, 6);
            _tile_dpbf16ps(1, 4, 7);
            _tile_dpbf16ps(2, 5, 6);
            _tile_dpbf16ps(3, 5, 7);
            if (pending.by_position && slice < kEpilogueSlices) epilogue_slice(c, pending, slice++);
          }
        }
        while (pending.by_position && slice < kEpilogueSlices) epilogue_slice(c, pending, slice++);
        // Tile (positions i, output channels j) at by_position + i·16·32 + j·16.
        float* sums = by_position[current];
        _tile_stored(0, sums, 128);
        _tile_stored(1, sums + 16, 128);
        _tile_stored(2, sums + 16 * 32, 128);
        _tile_stored(3, sums + 16 * 32 + 16, 128);
        pending = {sums, by_channel, op * 32, seg, seg_end};
        current ^= 1;
      }
    }
  }
  for (int slice = 0; pending.by_position && slice < kEpilogueSlices; ++slice)
    epilogue_slice(c, pending, slice);
  _tile_release();
}

RG_TARGET_AMX void backward_weight_chunk_amx(const WeightChunk& c) {
  const Layout& l = *c.l;
  const int64_t Cp = l.Cp, Op = l.Op;
  const int64_t steps = (c.images * l.Hs * l.Ws + kPositionBlock - 1) / kPositionBlock;
  const int64_t Qb = steps * kPositionBlock;  // gy's row length (pack_gy_plain)
  const int64_t a_stride = Qb * 2, b_stride = Cp * 4, c_stride = Cp * 4;
  configure_tiles();
  for (int64_t t = 0; t < l.T; ++t) {
    const uint16_t* xt = tap_pairs(c, t);
    for (int64_t ob = 0; ob < Op; ob += 32) {
      const uint16_t* a0 = c.gy + ob * Qb;
      const uint16_t* a1 = a0 + 16 * Qb;
      for (int64_t cb = 0; cb < Cp; cb += 32) {
        // Tile (oi, ci): output channels ob + 16·oi.., channels cb + 16·ci...
        float* c00 = c.acc + (t * Op + ob) * Cp + cb;
        float* c10 = c00 + 16 * Cp;
        if (c.first) {
          _tile_zero(0);
          _tile_zero(1);
          _tile_zero(2);
          _tile_zero(3);
        } else {
          _tile_loadd(0, c00, c_stride);
          _tile_loadd(1, c00 + 16, c_stride);
          _tile_loadd(2, c10, c_stride);
          _tile_loadd(3, c10 + 16, c_stride);
        }
        const uint16_t* b0 = xt + cb * 2;
        for (int64_t s = 0; s < steps; ++s) {
          const int64_t q0 = s * kPositionBlock;
          _tile_loadd(4, a0 + q0, a_stride);
          _tile_loadd(5, a1 + q0, a_stride);
          _tile_loadd(6, b0 + q0 * Cp, b_stride);  // pair q0/2: (q0/2)·Cp·2 values on
          _tile_loadd(7, b0 + q0 * Cp + 32, b_stride);
          _tile_dpbf16ps(0, 4, 6);
          _tile_dpbf16ps(1, 4, 7);
          _tile_dpbf16ps(2, 5, 6);
          _tile_dpbf16ps(3, 5, 7);
        }
        _tile_stored(0, c00, c_stride);
        _tile_stored(1, c00 + 16, c_stride);
        _tile_stored(2, c10, c_stride);
        _tile_stored(3, c10 + 16, c_stride);
      }
    }
  }
  _tile_release();
}

}  // namespace rg::detail::tiles
