// matmul's GEMMs on the GPU: one cuBLAS strided-batched GEMM per product, laid out by
// plan_blas_gemm (gemm_plan.h, tested on the CPU against a reference of cuBLAS's semantics).
#include <cublas_v2.h>

#include <string>

#include "core/autograd.h"
#include "core/cuda/cublas.h"
#include "core/cuda/stream.h"
#include "core/launch_counts.h"
#include "ops/elementwise/elementwise.h"
#include "ops/matmul/gemm.h"
#include "ops/matmul/gemm_plan.h"

namespace rg::detail {
namespace {

cudaDataType blas_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return CUDA_R_32F;
    case DType::f64:
      return CUDA_R_64F;
    case DType::f16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
    default:
      fail("matmul: dtype ", dtype, " has no cuBLAS GEMM (expected f32, f64, f16 or bf16)");
  }
}

bool is_half(DType d) {
  return d == DType::f16 || d == DType::bf16;
}

const char* plan_text(const BlasGemmPlan& p) {
  thread_local std::string text;
  text = "matmul (cuBLAS m=" + std::to_string(p.m) + " n=" + std::to_string(p.n) +
         " k=" + std::to_string(p.k) + " batch=" + std::to_string(p.batch) + ")";
  return text.c_str();
}

}  // namespace

void gemm_into(OnCuda, const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate) {
  const BlasGemmPlan plan = plan_blas_gemm(a, b);
  Shape out_shape = plan.full_batch;
  out_shape.push_back(plan.n);
  out_shape.push_back(plan.m);
  const DType in = a.dtype();
  RG_CHECK(b.dtype() == in && (out.dtype() == in || (is_half(in) && out.dtype() == DType::f32)),
           "matmul: cuBLAS cannot multiply ", a.describe(), " by ", b.describe(), " into ",
           out.describe());
  RG_CHECK(out.shape() == out_shape && out.is_contiguous(), "matmul: the GEMM output ",
           out.describe(), " must be a contiguous ", shape_str(out_shape));
  if (out.numel() == 0) return;
  const int index = out.device().index;
  cuda::DeviceGuard guard(index);
  const cudaStream_t stream = cuda::current_stream(index);
  if (plan.k == 0) {  // an empty sum: cuBLAS is not asked for k = 0
    if (!accumulate) fill_(out, 0.0);
    return;
  }
  // f64 computes in f64; f32 in plain f32 (CUBLAS_COMPUTE_32F: no TF32, as the CPU); f16 and
  // bf16 read 16-bit operands and accumulate in f32.
  const bool f64 = in == DType::f64;
  const cublasComputeType_t compute = f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
  const double alpha64 = 1.0, beta64 = accumulate ? 1.0 : 0.0;
  const float alpha32 = 1.0f, beta32 = accumulate ? 1.0f : 0.0f;
  const void* alpha = f64 ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta = f64 ? static_cast<const void*>(&beta64) : &beta32;
  const cublasHandle_t handle = cuda::cublas_handle(index, stream);
  const auto op = [](bool t) { return t ? CUBLAS_OP_T : CUBLAS_OP_N; };
  count_launch(Launch::library_call);
  RG_CUBLAS_CHECK(
      cublasGemmStridedBatchedEx_64(
          handle, op(plan.first.transpose), op(plan.second.transpose), plan.m, plan.n, plan.k,
          alpha, plan.first.tensor.data_ptr(), blas_type(in), plan.first.ld,
          plan.first.batch_stride, plan.second.tensor.data_ptr(), blas_type(in), plan.second.ld,
          plan.second.batch_stride, beta, out.data_ptr(), blas_type(out.dtype()), plan.m,
          plan.m * plan.n, plan.batch, compute, CUBLAS_GEMM_DEFAULT),
      plan_text(plan));
}

Tensor batched_matmul(OnCuda on, const Tensor& a_in, const Tensor& b_in, const Shape& out_batch) {
  const Tensor a = a_in.detach(), b = b_in.detach();
  const DType dtype = a.dtype();
  const Shape full = broadcast_shapes(Shape(a.shape().begin(), a.shape().end() - 2),
                                      Shape(b.shape().begin(), b.shape().end() - 2), "matmul");
  Shape full_shape = full, out_shape = out_batch;
  for (int64_t size : {a.size(-2), b.size(-1)}) {
    full_shape.push_back(size);
    out_shape.push_back(size);
  }
  if (full_shape == out_shape) {
    Tensor out = empty(out_shape, {dtype, a.device()});
    gemm_into(on, a, b, out, false);
    return out;
  }
  // Batch items that add into one output matrix: their products are summed by the reduction
  // kernel, in f32 for 16-bit inputs (rounded once, as the CPU does).
  Tensor products = empty(full_shape, {is_half(dtype) ? DType::f32 : dtype, a.device()});
  gemm_into(on, a, b, products, false);
  return sum_to_shape(products, out_shape).to(dtype);
}

}  // namespace rg::detail
