// The bf16 tile GEMM (gemm_tiles.h): packing in C++ along each operand's contiguous direction
// (rows of b interleaved in pairs with AVX-512) into per-thread buffers kept between calls, the
// block loops compiled for AMX or AVX512-BF16 by target attributes and called only where
// cpu_isa() has them.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 warns "__Y may be used uninitialized" inside avx512fintrin.h (GCC bug 105593), and in
// portable builds (RG_NATIVE=OFF: the package, TSan) says "is used uninitialized" of it.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include "ops/matmul/gemm_tiles.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/cpu_features.h"
#include "core/thread_pool.h"

namespace rg::detail {
namespace {

// Both operands packed: a as [nb][kb] tiles of 16 rows × 32 k, b as [mb][kb] VNNI tiles.
struct Packed {
  std::vector<uint16_t> a, b;
  int64_t n = 0, m = 0, NB = 0, MB = 0, KB = 0;  // NB, MB even (blocks of 16)
};

static_assert(sizeof(BFloat16) == 2, "bf16 operands are read as their 16-bit patterns");

// One VNNI tile row: dst[2·j] = r0[j], dst[2·j + 1] = r1[j] for j < 16.
RG_TARGET_AVX512 void interleave_pairs(const uint16_t* r0, const uint16_t* r1, uint16_t* dst) {
  const __m512i both = _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r0))),
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r1)), 1);
  const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24,
                                         8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  _mm512_storeu_si512(dst, _mm512_permutexvar_epi16(order, both));
}

// The packed operands of the calling thread, kept between calls (no allocation, no page faults
// for each GEMM of a convolution's tiles).
Packed& thread_packed() {
  thread_local Packed p;
  return p;
}

// The rows of b (row-major) for column blocks [b0, b1): pairs of rows interleaved. Block by
// block, so that the writes run in order and each block reads a strip of 16 columns (whose
// cache lines the next block reads the rest of).
void pack_b_rows(const MatRef<const BFloat16>& b, Packed& p, int64_t k, int64_t b0, int64_t b1) {
  const uint16_t* bd = reinterpret_cast<const uint16_t*>(b.data);
  for (int64_t mb = b0; mb < b1; ++mb) {
    const int64_t j0 = mb * 16, jn = std::min<int64_t>(16, p.m - j0);
    for (int64_t kk = 0; kk < k; kk += 2) {
      const uint16_t* r0 = bd + kk * b.outer + j0;
      const uint16_t* r1 = kk + 1 < k ? r0 + b.outer : nullptr;
      uint16_t* dst = p.b.data() + (mb * p.KB + kk / 32) * 512 + (kk % 32 / 2) * 32;
      if (r1 && jn == 16) {
        interleave_pairs(r0, r1, dst);
      } else {
        for (int64_t j = 0; j < jn; ++j) {
          dst[2 * j] = r0[j];
          dst[2 * j + 1] = r1 ? r1[j] : uint16_t{0};
        }
      }
    }
  }
}

// The columns of b (column-major) for column blocks [b0, b1): a pair of k is two adjacent
// values of one column, copied as one 32-bit word.
void pack_b_columns(const MatRef<const BFloat16>& b, Packed& p, int64_t k, int64_t b0, int64_t b1) {
  const uint16_t* bd = reinterpret_cast<const uint16_t*>(b.data);
  for (int64_t mb = b0; mb < b1; ++mb) {
    const int64_t jn = std::min<int64_t>(16, p.m - mb * 16);
    const uint16_t* col[16];
    for (int64_t j = 0; j < jn; ++j) col[j] = bd + (mb * 16 + j) * b.outer;
    for (int64_t kk = 0; kk < k; kk += 2) {
      uint32_t* dst = reinterpret_cast<uint32_t*>(p.b.data() + (mb * p.KB + kk / 32) * 512 +
                                                  (kk % 32 / 2) * 32);
      if (kk + 1 < k) {
        for (int64_t j = 0; j < jn; ++j) std::memcpy(dst + j, col[j] + kk, 4);
      } else {
        for (int64_t j = 0; j < jn; ++j) dst[j] = col[j][kk];  // the low half; the high half is 0
      }
    }
  }
}

Packed& pack(const MatRef<const BFloat16>& a, const MatRef<const BFloat16>& b) {
  Packed& p = thread_packed();
  p.n = a.rows;
  p.m = b.cols;
  const int64_t k = a.cols;
  p.NB = (p.n + 31) / 32 * 2;
  p.MB = (p.m + 31) / 32 * 2;
  p.KB = (k + 31) / 32;
  p.a.resize(static_cast<std::size_t>(p.NB * p.KB * 512));
  p.b.resize(static_cast<std::size_t>(p.MB * p.KB * 512));
  // Zeros where the operands do not reach: the whole of a block with rows (columns) missing,
  // else its last tile when k is not a multiple of 32; the copies below write the rest.
  const auto zero_tails = [&](std::vector<uint16_t>& v, int64_t block, int64_t extent) {
    uint16_t* base = v.data() + block * p.KB * 512;
    if (block * 16 + 16 > extent)
      std::fill(base, base + p.KB * 512, uint16_t{0});
    else if (k % 32 != 0)
      std::fill(base + (p.KB - 1) * 512, base + p.KB * 512, uint16_t{0});
  };
  // Each layout copies along its contiguous direction (the element-wise `at` of the first
  // version made packing a flat conv3d column matrix take half of its GEMM's time).
  const uint16_t* ad = reinterpret_cast<const uint16_t*>(a.data);
  parallel_for(p.NB, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t nb = b0; nb < b1; ++nb) zero_tails(p.a, nb, p.n);
    for (int64_t nb = b0; nb < b1; ++nb)
      for (int64_t r = 0; r < 16 && nb * 16 + r < p.n; ++r) {
        const int64_t i = nb * 16 + r;
        uint16_t* dst = p.a.data() + nb * p.KB * 512 + r * 32;
        if (!a.col_major) {  // a row: k contiguous values, 32 per tile
          const uint16_t* src = ad + i * a.outer;
          for (int64_t kb = 0; kb < p.KB; ++kb)
            std::memcpy(dst + kb * 512, src + kb * 32,
                        static_cast<std::size_t>(std::min<int64_t>(32, k - kb * 32)) * 2);
        } else {
          for (int64_t kk = 0; kk < k; ++kk) dst[(kk / 32) * 512 + kk % 32] = ad[kk * a.outer + i];
        }
      }
  });
  // b tile (mb, kb), row kp: columns j of k = 2·kp and 2·kp + 1 side by side.
  parallel_for(p.MB, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t mb = b0; mb < b1; ++mb) zero_tails(p.b, mb, p.m);
    if (b.col_major)
      pack_b_columns(b, p, k, b0, b1);
    else
      pack_b_rows(b, p, k, b0, b1);
  });
  return p;
}

// c[rows, cols] (+)= stage (32 × 32 f32) over the block's valid part.
void store(const float* stage, int64_t rows, int64_t cols, float* c, int64_t ldc, bool accumulate) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j)
      c[r * ldc + j] = accumulate ? c[r * ldc + j] + stage[r * 32 + j] : stage[r * 32 + j];
}

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Blocks of 32 × 32 of c for row pairs [p0, p1), into stage; then store.
RG_TARGET_AMX void rows_amx(const Packed& p, int64_t p0, int64_t p1, const MatRef<float>& c,
                            bool accumulate) {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  _tile_loadconfig(&cfg);
  alignas(64) float stage[32 * 32];
  for (int64_t np = p0; np < p1; ++np)
    for (int64_t mp = 0; mp < p.MB / 2; ++mp) {
      const uint16_t* a0 = p.a.data() + 2 * np * p.KB * 512;
      const uint16_t* a1 = a0 + p.KB * 512;
      const uint16_t* b0 = p.b.data() + 2 * mp * p.KB * 512;
      const uint16_t* b1 = b0 + p.KB * 512;
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (int64_t kb = 0; kb < p.KB; ++kb) {
        _tile_loadd(4, a0 + kb * 512, 64);
        _tile_loadd(5, a1 + kb * 512, 64);
        _tile_loadd(6, b0 + kb * 512, 64);
        _tile_loadd(7, b1 + kb * 512, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
      }
      _tile_stored(0, stage, 128);
      _tile_stored(1, stage + 16, 128);
      _tile_stored(2, stage + 16 * 32, 128);
      _tile_stored(3, stage + 16 * 32 + 16, 128);
      const int64_t r0 = np * 32, j0 = mp * 32;
      store(stage, std::min<int64_t>(32, p.n - r0), std::min<int64_t>(32, p.m - j0),
            c.data + r0 * c.outer + j0, c.outer, accumulate);
    }
  _tile_release();
}

RG_TARGET_AVX512_BF16 void rows_avx512_bf16(const Packed& p, int64_t p0, int64_t p1,
                                            const MatRef<float>& c, bool accumulate) {
  alignas(64) float stage[32 * 32];
  for (int64_t np = p0; np < p1; ++np)
    for (int64_t mp = 0; mp < p.MB / 2; ++mp) {
      const uint16_t* b0 = p.b.data() + 2 * mp * p.KB * 512;
      const uint16_t* b1 = b0 + p.KB * 512;
      for (int64_t sub = 0; sub < 4; ++sub) {   // 8 rows of the 32 at a time
        const int64_t row = np * 32 + sub * 8;  // in blocks of 16: (row / 16, row % 16)
        const uint16_t* a = p.a.data() + (row / 16) * p.KB * 512 + (row % 16) * 32;
        __m512 acc[8][2];
        for (auto& r : acc) r[0] = r[1] = _mm512_setzero_ps();
        for (int64_t kb = 0; kb < p.KB; ++kb)
          for (int kp = 0; kp < 16; ++kp) {
            const __m512i x0 = _mm512_loadu_si512(b0 + kb * 512 + kp * 32);
            const __m512i x1 = _mm512_loadu_si512(b1 + kb * 512 + kp * 32);
#pragma GCC unroll 8
            for (int r = 0; r < 8; ++r) {
              int32_t pair;
              std::memcpy(&pair, a + kb * 512 + r * 32 + 2 * kp, 4);
              const __m512i w = _mm512_set1_epi32(pair);
              acc[r][0] = _mm512_dpbf16_ps(acc[r][0], (__m512bh)x0, (__m512bh)w);
              acc[r][1] = _mm512_dpbf16_ps(acc[r][1], (__m512bh)x1, (__m512bh)w);
            }
          }
        for (int r = 0; r < 8; ++r) {
          _mm512_storeu_ps(stage + (sub * 8 + r) * 32, acc[r][0]);
          _mm512_storeu_ps(stage + (sub * 8 + r) * 32 + 16, acc[r][1]);
        }
      }
      const int64_t r0 = np * 32, j0 = mp * 32;
      store(stage, std::min<int64_t>(32, p.n - r0), std::min<int64_t>(32, p.m - j0),
            c.data + r0 * c.outer + j0, c.outer, accumulate);
    }
}

}  // namespace

bool tile_gemm_available() {
  return cpu_has(CpuIsa::avx512_bf16);
}

void tile_gemm(const MatRef<const BFloat16>& a, const MatRef<const BFloat16>& b,
               const MatRef<float>& c, bool accumulate) {
  RG_CHECK(a.cols == b.rows && c.rows == a.rows && c.cols == b.cols && !c.col_major,
           "tile_gemm: shapes (", a.rows, ", ", a.cols, ") · (", b.rows, ", ", b.cols,
           ") do not give (", c.rows, ", ", c.cols, ")");
  if (c.rows == 0 || c.cols == 0) return;
  const Packed& p = pack(a, b);
  const bool amx = cpu_has(CpuIsa::amx);
  // Each pair of 16-row blocks is 32 · m · k multiply-adds: enough per thread above ~1 MFLOP.
  const int64_t pairs = p.NB / 2;
  const int64_t grain =
      std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(1, 32 * p.MB * 16 * p.KB * 32));
  parallel_for(pairs, grain, [&](int64_t p0, int64_t p1) {
    if (amx)
      rows_amx(p, p0, p1, c, accumulate);
    else
      rows_avx512_bf16(p, p0, p1, c, accumulate);
  });
}

}  // namespace rg::detail
