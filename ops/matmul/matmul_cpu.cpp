// CPU GEMM (Eigen) and the batched matrix product behind matmul, linear and their gradients.
// GCC 12 with -march=native (AVX-512) warns "__Y may be used uninitialized" inside its own
// avx512fintrin.h when Eigen's GEMM kernels are instantiated — a known false positive (GCC
// bug 105593); under -Werror it would stop the build. Silenced for this file only.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cmath>
#include <type_traits>
#include <vector>

#include "core/cpu_features.h"
#include "core/dispatch.h"
#include "core/kernel_log.h"
#include "core/strided_loop.h"
#include "core/thread_pool.h"
#include "ops/elementwise/elementwise.h"
#include "ops/matmul/gemm.h"
#include "ops/matmul/gemm_tiles.h"

namespace rg::detail {
namespace {

template <class T, bool ColMajor>
using ConstMap = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic,
                                                ColMajor ? Eigen::ColMajor : Eigen::RowMajor>,
                            Eigen::Unaligned, Eigen::OuterStride<>>;
template <class T>
using OutMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>,
                          Eigen::Unaligned, Eigen::OuterStride<>>;

// c[r0:r1, c0:c1] (+)= a[r0:r1, :] · b[:, c0:c1] on the calling thread. Eigen reads the
// transposed layouts in place (its GEMM packs panels anyway), so no operand is copied.
template <class T, bool ColA, bool ColB>
void gemm_part(const MatRef<const T>& a, const MatRef<const T>& b, const MatRef<T>& c, int64_t r0,
               int64_t r1, int64_t c0, int64_t c1, bool accumulate) {
  ConstMap<T, ColA> A(a.data, a.rows, a.cols, Eigen::OuterStride<>(a.outer));
  ConstMap<T, ColB> B(b.data, b.rows, b.cols, Eigen::OuterStride<>(b.outer));
  OutMap<T> C(c.data, c.rows, c.cols, Eigen::OuterStride<>(c.outer));
  auto block = C.block(r0, c0, r1 - r0, c1 - c0);
  if (accumulate)
    block.noalias() += A.middleRows(r0, r1 - r0) * B.middleCols(c0, c1 - c0);
  else
    block.noalias() = A.middleRows(r0, r1 - r0) * B.middleCols(c0, c1 - c0);
}

template <class T>
using PartFn = void (*)(const MatRef<const T>&, const MatRef<const T>&, const MatRef<T>&, int64_t,
                        int64_t, int64_t, int64_t, bool);

template <class T>
PartFn<T> pick_part(bool col_a, bool col_b) {
  if (col_a) return col_b ? &gemm_part<T, true, true> : &gemm_part<T, true, false>;
  return col_b ? &gemm_part<T, false, true> : &gemm_part<T, false, false>;
}

// The in-memory layout of the last two dims of t, or false when neither stride is 1.
// Eigen reads an OuterStride of 0 as "dense", so a zero stride (an expanded dim) must never
// reach it: such matrices are copied by the caller.
bool matrix_layout(const Tensor& t, int64_t& outer, bool& col_major) {
  const int64_t rows = t.size(-2), cols = t.size(-1);
  const int64_t rs = t.strides()[t.dim() - 2], cs = t.strides()[t.dim() - 1];
  if ((cols == 1 || cs == 1) && (rows == 1 || rs >= 1)) {
    outer = rows == 1 ? std::max<int64_t>(cols, 1) : rs;
    col_major = false;
    return true;
  }
  if ((rows == 1 || rs == 1) && (cols == 1 || cs >= 1)) {
    outer = cols == 1 ? std::max<int64_t>(rows, 1) : cs;
    col_major = true;
    return true;
  }
  return false;
}

// Strides of a batch shape's dims seen from the broadcast batch `full`: 0 on dims the tensor
// lacks or has size 1 (broadcast reads for operands, accumulation for the output).
Shape batch_strides(const Shape& batch, const Shape& strides, const Shape& full) {
  Shape out(full.size(), 0);
  const std::size_t lead = full.size() - batch.size();
  for (std::size_t d = 0; d < batch.size(); ++d)
    if (batch[d] != 1) out[d + lead] = strides[d];
  return out;
}

}  // namespace

bool gemm_layout_ok(const Tensor& t) {
  int64_t outer;
  bool col_major;
  return t.dim() >= 2 && matrix_layout(t, outer, col_major);
}

Tensor gemm_ready(const Tensor& t) {
  return gemm_layout_ok(t) ? t : t.contiguous();
}

template <class T>
MatRef<const T> mat_ref(const Tensor& t, int64_t element_offset) {
  MatRef<const T> m;
  RG_CHECK(t.dim() >= 2 && matrix_layout(t, m.outer, m.col_major), "gemm: tensor ", t.describe(),
           " with strides ", shape_str(t.strides()), " is not a GEMM operand");
  m.data = static_cast<const T*>(t.data_ptr()) + element_offset;
  m.rows = t.size(-2);
  m.cols = t.size(-1);
  return m;
}

template MatRef<const float> mat_ref<float>(const Tensor&, int64_t);
template MatRef<const double> mat_ref<double>(const Tensor&, int64_t);
template MatRef<const BFloat16> mat_ref<BFloat16>(const Tensor&, int64_t);

template <class T>
void gemm(const MatRef<const T>& a, const MatRef<const T>& b, const MatRef<T>& c, bool accumulate) {
  const int64_t n = a.rows, k = a.cols, m = b.cols;
  RG_CHECK(b.rows == k && c.rows == n && c.cols == m, "gemm: inner shapes do not match");
  if (n == 0 || m == 0) return;
  if (k == 0) {  // an empty sum: zeros (Eigen's lazy path would leave c untouched)
    if (!accumulate)
      for (int64_t i = 0; i < n; ++i) std::fill_n(c.data + i * c.outer, m, T(0));
    return;
  }
  const PartFn<T> part = pick_part<T>(a.col_major, b.col_major);
  const double flops = double(n) * double(m) * double(k);
  if (flops < kGemmParallelMinFlops || num_threads() == 1) {
    part(a, b, c, 0, n, 0, m, accumulate);
    return;
  }
  // Split the longer side of the output so every thread gets a panel of at least half the
  // threshold (smaller panels would lose more to packing than they gain).
  if (n >= m) {
    const auto grain = static_cast<int64_t>(std::ceil(kGemmParallelMinFlops / 2 / double(m * k)));
    parallel_for(n, grain,
                 [&](int64_t r0, int64_t r1) { part(a, b, c, r0, r1, 0, m, accumulate); });
  } else {
    const auto grain = static_cast<int64_t>(std::ceil(kGemmParallelMinFlops / 2 / double(n * k)));
    parallel_for(m, grain,
                 [&](int64_t c0, int64_t c1) { part(a, b, c, 0, n, c0, c1, accumulate); });
  }
}

template void gemm<float>(const MatRef<const float>&, const MatRef<const float>&,
                          const MatRef<float>&, bool);
template void gemm<double>(const MatRef<const double>&, const MatRef<const double>&,
                           const MatRef<double>&, bool);

namespace {

// The batch items of out[β] = Σ a[b'] · b[b''] (see gemm.h): element offsets of each item's
// matrices in a, b and out, and whether several items add into one output matrix.
struct BatchItems {
  std::vector<std::array<int64_t, 3>> offsets;
  bool reduce = false;
};

BatchItems batch_items(const Tensor& a, const Tensor& b, const Tensor& out,
                       const Shape& out_batch) {
  const Shape a_batch(a.shape().begin(), a.shape().end() - 2);
  const Shape b_batch(b.shape().begin(), b.shape().end() - 2);
  const Shape full = broadcast_shapes(a_batch, b_batch, "matmul");
  const Shape sa = batch_strides(a_batch, a.strides(), full);
  const Shape sb = batch_strides(b_batch, b.strides(), full);
  const Shape sc = batch_strides(out_batch, out.strides(), full);
  BatchItems items;
  for (std::size_t d = 0; d < full.size(); ++d) {
    const std::size_t lead = full.size() - out_batch.size();
    RG_CHECK(d < lead || out_batch[d - lead] == full[d] || out_batch[d - lead] == 1,
             "matmul: cannot reduce batch ", shape_str(full), " to ", shape_str(out_batch));
    items.reduce = items.reduce || (full[d] > 1 && sc[d] == 0);
  }
  // A few offsets per item: cheap, and it keeps the batch loop free of index arithmetic.
  const int64_t count = numel_of(full);
  items.offsets.reserve(static_cast<std::size_t>(count));
  strided_loop<3>(full, {&sa, &sb, &sc}, 0, count,
                  [&](const std::array<int64_t, 3>& o) { items.offsets.push_back(o); });
  return items;
}

// Runs gemm_item(i, accumulate) for every item: in order into a zeroed out where items reduce
// (deterministic sums, each GEMM split across threads inside); else whole items to threads
// (one single-threaded GEMM each — the fast split on small matrices) when they divide evenly
// or are many, or the items in turn, each GEMM split.
template <class GemmItem>
void run_items(const BatchItems& items, double flops, const Tensor& out, GemmItem&& gemm_item) {
  const auto count = static_cast<int64_t>(items.offsets.size());
  if (items.reduce) {
    fill_(out, 0.0);
    for (int64_t i = 0; i < count; ++i) gemm_item(i, true);
    return;
  }
  const int threads = num_threads();
  const bool split_batch = count >= threads && (count % threads == 0 || count >= 4 * threads ||
                                                flops < kGemmParallelMinFlops);
  if (split_batch) {
    const auto grain =
        std::max<int64_t>(1, static_cast<int64_t>(std::ceil(kGemmParallelMinFlops / flops)));
    parallel_for(count, grain, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) gemm_item(i, false);
    });
  } else {
    for (int64_t i = 0; i < count; ++i) gemm_item(i, false);
  }
}

}  // namespace

Tensor batched_matmul(OnCpu on, const Tensor& a_in, const Tensor& b_in, const Shape& out_batch) {
  const DType dtype = a_in.dtype();
  // bf16 GEMMs run on the bf16 dot products where the CPU has them (gemm_tiles.h); other
  // 16-bit GEMMs go through f32. Either way each product accumulates in f32, as cuBLAS does for
  // AMP, and a batch reduction sums the f32 products before the one rounding.
  const bool tiles = dtype == DType::bf16 && tile_gemm_available();
  if ((dtype == DType::f16 || dtype == DType::bf16) && !tiles) {
    return batched_matmul(on, a_in.detach().to(DType::f32), b_in.detach().to(DType::f32), out_batch)
        .to(dtype);
  }
  Tensor a = a_in.detach(), b = b_in.detach();
  a = gemm_ready(a);
  b = gemm_ready(b);
  const int64_t n = a.size(-2), k = a.size(-1), m = b.size(-1);
  const Shape a_batch(a.shape().begin(), a.shape().end() - 2);
  const Shape b_batch(b.shape().begin(), b.shape().end() - 2);
  const Shape full = broadcast_shapes(a_batch, b_batch, "matmul");
  RG_CHECK(out_batch.size() <= full.size(), "matmul: cannot reduce batch ", shape_str(full), " to ",
           shape_str(out_batch));
  Shape out_shape = out_batch;
  out_shape.push_back(n);
  out_shape.push_back(m);
  Tensor out = empty(out_shape, {tiles ? DType::f32 : dtype, a.device()});
  if (out.numel() == 0) return tiles ? out.to(dtype) : out;
  const BatchItems items = batch_items(a, b, out, out_batch);
  if (items.offsets.empty() || k == 0) {
    fill_(out, 0.0);
    return tiles ? out.to(dtype) : out;
  }
  const double flops = double(n) * double(m) * double(k);
  if (tiles) {
    note_kernel("matmul", shape_str(a.shape()) + " x " + shape_str(b.shape()) + " bf16",
                cpu_has(CpuIsa::amx) ? "bf16 tiles (amx)" : "bf16 tiles (avx512_bf16)");
    float* c_base = out.data<float>();
    run_items(items, flops, out, [&](int64_t i, bool accumulate) {
      const auto& o = items.offsets[static_cast<std::size_t>(i)];
      tile_gemm(mat_ref<BFloat16>(a, o[0]), mat_ref<BFloat16>(b, o[1]),
                MatRef<float>{c_base + o[2], n, m, m, false}, accumulate);
    });
    return out.to(dtype);
  }
  dispatch_f32_f64(dtype, "matmul", [&](auto tag) {
    using T = decltype(tag);
    T* c_base = static_cast<T*>(out.data_ptr());
    run_items(items, flops, out, [&](int64_t i, bool accumulate) {
      const auto& o = items.offsets[static_cast<std::size_t>(i)];
      gemm<T>(mat_ref<T>(a, o[0]), mat_ref<T>(b, o[1]), MatRef<T>{c_base + o[2], n, m, m, false},
              accumulate);
    });
  });
  return out;
}

}  // namespace rg::detail
