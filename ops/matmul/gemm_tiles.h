#pragma once
// bf16 GEMMs on the CPU's bf16 dot products (AMX tiles, or AVX512-BF16), for matmul, linear
// and conv3d at O1-O3: c (+)= a · b with bf16 operands read in any layout (MatRef: row- or
// column-major), exact products, f32 sums, into an f32 c that the caller rounds once.
// Internal to ops/.
//
// a is packed into 16 × 32 tiles (rows × k), b into VNNI tiles (16 pairs of k × 16 columns, the
// two k of a pair side by side); c is computed in blocks of 32 × 32 (2 × 2 tiles, each loaded
// tile feeding two _tile_dpbf16ps), K zero-padded to a multiple of 32.

#include <cstdint>

#include "core/half.h"
#include "ops/matmul/gemm.h"

namespace rg::detail {

// Whether this machine runs the bf16 tile GEMM (cpu_isa() >= avx512_bf16).
bool tile_gemm_available();

// c (+)= a · b; a: (n, k), b: (k, m), c: (n, m) row-major f32. accumulate=false overwrites c.
// Split across threads by blocks of 32 rows (a nested call runs on its thread). The packed
// operands live in a buffer of the calling thread, kept (at its largest size) between calls.
void tile_gemm(const MatRef<const BFloat16>& a, const MatRef<const BFloat16>& b,
               const MatRef<float>& c, bool accumulate);

}  // namespace rg::detail
