// The bf16 tile GEMM (gemm_tiles.h): packing in plain C++, the block loops compiled for AMX or
// AVX512-BF16 by target attributes and called only where cpu_isa() has them.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 warns "__Y may be used uninitialized" inside avx512fintrin.h (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
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

uint16_t at(const MatRef<const BFloat16>& x, int64_t i, int64_t j) {
  return (x.col_major ? x.data[j * x.outer + i] : x.data[i * x.outer + j]).bits;
}

Packed pack(const MatRef<const BFloat16>& a, const MatRef<const BFloat16>& b) {
  Packed p;
  p.n = a.rows;
  p.m = b.cols;
  const int64_t k = a.cols;
  p.NB = (p.n + 31) / 32 * 2;
  p.MB = (p.m + 31) / 32 * 2;
  p.KB = (k + 31) / 32;
  p.a.assign(static_cast<std::size_t>(p.NB * p.KB * 512), 0);
  p.b.assign(static_cast<std::size_t>(p.MB * p.KB * 512), 0);
  parallel_for(p.NB, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t nb = b0; nb < b1; ++nb)
      for (int64_t r = 0; r < 16 && nb * 16 + r < p.n; ++r)
        for (int64_t kk = 0; kk < k; ++kk)
          p.a[static_cast<std::size_t>((nb * p.KB + kk / 32) * 512 + r * 32 + kk % 32)] =
              at(a, nb * 16 + r, kk);
  });
  // b tile (mb, kb), row kp: columns j of k = 2·kp and 2·kp + 1 side by side.
  parallel_for(p.MB, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t mb = b0; mb < b1; ++mb)
      for (int64_t kk = 0; kk < k; ++kk)
        for (int64_t j = 0; j < 16 && mb * 16 + j < p.m; ++j)
          p.b[static_cast<std::size_t>((mb * p.KB + kk / 32) * 512 + (kk % 32 / 2) * 32 + j * 2 +
                                       kk % 2)] = at(b, kk, mb * 16 + j);
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
  const Packed p = pack(a, b);
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
