// Copies between layouts, dtypes and devices: the kernel behind contiguous(), clone(), to(),
// fill_ and gradient accumulation.
#include <cstring>
#include <type_traits>

#include "core/autograd.h"
#include "core/config.h"
#include "core/deferred_checks.h"
#include "core/dispatch.h"
#include "core/half_runs.h"
#include "core/strided_loop.h"
#include "core/tensor.h"
#include "core/thread_pool.h"

namespace rg {

// Defined in core/cuda/cuda_memory.cu, compiled only into CUDA builds. cuda_copy_bytes waits
// for copies that involve the host or two GPUs, not for those on one GPU (stream-ordered).
void cuda_copy_bytes(void* dst, const Device& dst_device, const void* src, const Device& src_device,
                     std::size_t nbytes);
void cuda_fill(void* dst, const Device& device, DType dtype, int64_t n, double value);
void cuda_copy_to_device_async(void* dst, const Device& dst_device, const void* pinned_src,
                               std::size_t nbytes);
// dst = src converted, any strides, both on one GPU (core/cuda/copy_kernels.cuh).
void cuda_copy_on_device(const Tensor& dst, const Tensor& src);

namespace {

constexpr int64_t kCopyGrain = 1 << 15;

// out[i] = in[i] converted, for contiguous runs: a loop the compiler can vectorise, and the
// vectorised 16-bit conversions of core/half_runs.h (mixed precision converts every activation
// and weight this way).
template <class D, class S>
void convert_run(D* out, const S* in, int64_t n) {
  constexpr bool half_or_bf16_out = std::is_same_v<D, Half> || std::is_same_v<D, BFloat16>;
  constexpr bool half_or_bf16_in = std::is_same_v<S, Half> || std::is_same_v<S, BFloat16>;
  if constexpr (half_or_bf16_out && std::is_same_v<S, float>)
    narrow(in, out, n);
  else if constexpr (half_or_bf16_in && std::is_same_v<D, float>)
    widen(in, out, n);
  else
    for (int64_t i = 0; i < n; ++i) out[i] = convert<D>(in[i]);
}

void copy_cpu(const Tensor& dst, const Tensor& src) {
  // One dense layout on both sides (NCHW or channels-last alike): a flat run.
  const bool contiguous = same_dense_layout(dst, src);
  if (dst.dtype() == src.dtype() && contiguous) {
    std::memcpy(dst.data_ptr(), src.data_ptr(), dst.nbytes());
    return;
  }
  dispatch_all(dst.dtype(), [&](auto dst_tag) {
    using D = decltype(dst_tag);
    dispatch_all(src.dtype(), [&](auto src_tag) {
      using S = decltype(src_tag);
      D* out = static_cast<D*>(dst.data_ptr());
      const S* in = static_cast<const S*>(src.data_ptr());
      const Shape& shape = dst.shape();
      const Shape& ds = dst.strides();
      const Shape& ss = src.strides();
      parallel_for(dst.numel(), kCopyGrain, [&](int64_t begin, int64_t end) {
        if (contiguous) return convert_run(out + begin, in + begin, end - begin);
        strided_loop<2>(shape, {&ds, &ss}, begin, end,
                        [&](const std::array<int64_t, 2>& o) { out[o[0]] = convert<D>(in[o[1]]); });
      });
    });
  });
}

// The backward of a copy that keeps dtype and device (clone, pin_memory): the gradient itself.
Tensor pass_gradient(const Tensor& g) {
  return g;
}

}  // namespace

namespace {

// copy_strided where a GPU is involved (CUDA builds).
void copy_with_gpu(const Tensor& dst, const Tensor& src) {
  if constexpr (kWithCuda) {
    if (dst.dtype() == src.dtype() && same_dense_layout(dst, src)) {
      cuda_copy_bytes(dst.data_ptr(), dst.device(), src.data_ptr(), src.device(), dst.nbytes());
      return;
    }
    // A converting or strided copy: on one GPU, one kernel. Between devices the bytes cross
    // contiguous and in the source dtype; the conversion and the layout happen on a GPU where
    // one is involved (the kernel), else on the host.
    if (dst.device() == src.device()) return cuda_copy_on_device(dst, src);
    const auto stage = [&](const Tensor& t, const Device& device) {
      Tensor staged = empty(t.shape(), {t.dtype(), device});
      copy_strided(staged, t);
      return staged;
    };
    const Tensor contiguous_src = src.is_contiguous() ? src : stage(src, src.device());
    if (dst.device().is_cpu()) {
      Tensor host = empty(src.shape(), {src.dtype(), dst.device()});
      cuda_copy_bytes(host.data_ptr(), host.device(), contiguous_src.data_ptr(), src.device(),
                      host.nbytes());
      return copy_cpu(dst, host);
    }
    Tensor on_dst = empty(src.shape(), {src.dtype(), dst.device()});
    cuda_copy_bytes(on_dst.data_ptr(), on_dst.device(), contiguous_src.data_ptr(), src.device(),
                    on_dst.nbytes());
    cuda_copy_on_device(dst, on_dst);
  } else {
    fail("copy: ", dst.describe(), " <- ", src.describe(), ": this build has no CUDA backend");
  }
}

}  // namespace

void copy_strided(const Tensor& dst, const Tensor& src) {
  RG_CHECK(dst.shape() == src.shape(), "copy: shape mismatch, destination ", dst.describe(),
           " and source ", src.describe());
  if (dst.numel() == 0) return;
  if (dst.device().is_cpu() && src.device().is_cpu()) return copy_cpu(dst, src);
  copy_with_gpu(dst, src);
  // The host has just waited for the GPU: the checks its kernels answered can run for free.
  if (dst.device().is_cpu()) run_deferred_checks(src.device());
}

void fill_(const Tensor& dst, double value) {
  if (dst.numel() == 0) return;
  if (dst.device().is_cuda()) {
    if constexpr (kWithCuda) {
      RG_CHECK(dst.is_contiguous(), "fill_: strided tensors on CUDA are not supported yet, got ",
               dst.describe());
      return cuda_fill(dst.data_ptr(), dst.device(), dst.dtype(), dst.numel(), value);
    }
    fail("fill_: ", dst.describe(), ": this build has no CUDA backend");
  }
  dispatch_all(dst.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T v = convert<T>(value);
    T* out = static_cast<T*>(dst.data_ptr());
    const Shape& shape = dst.shape();
    const Shape& st = dst.strides();
    if (dst.is_contiguous()) {
      parallel_for(dst.numel(), kCopyGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) out[i] = v;
      });
    } else {
      parallel_for(dst.numel(), kCopyGrain, [&](int64_t b, int64_t e) {
        strided_loop<1>(shape, {&st}, b, e,
                        [&](const std::array<int64_t, 1>& o) { out[o[0]] = v; });
      });
    }
  });
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::contiguous(MemoryFormat format) const {
  if (is_contiguous(format)) return *this;
  Tensor out = empty(shape(), {dtype(), device()}, format);
  {
    NoGradGuard no_grad;
    copy_strided(out, *this);
  }
  if (needs_grad({*this}))
    record_backward(
        "ToMemoryFormatBackward", {*this}, out,
        [back = suggest_memory_format()](const Tensor& g) { return g.contiguous(back); });
  return out;
}

Tensor to_memory_format(const Tensor& x, MemoryFormat format) {
  return x.contiguous(format);
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape(), {dtype(), device()});
  {
    NoGradGuard no_grad;
    copy_strided(out, *this);
  }
  if (needs_grad({*this})) record_backward("CloneBackward", {*this}, out, pass_gradient);
  return out;
}

Tensor Tensor::to(DType target) const {
  if (target == dtype()) return *this;
  // Mixed precision casts every activation: a channels-last one stays channels-last.
  Tensor out = empty(shape(), {target, device()}, suggest_memory_format());
  copy_strided(out, *this);
  if (needs_grad({*this}) && is_floating(target))
    record_backward("ToDTypeBackward", {*this}, out,
                    [src = dtype()](const Tensor& g) { return g.to(src); });
  return out;
}

Tensor Tensor::to(Device target, NonBlocking non_blocking) const {
  if (target == device()) return *this;
  // A dense layout crosses as it is (channels-last stays channels-last); any other strides are
  // made contiguous first, and a strided source is pageable memory: a synchronous copy.
  const MemoryFormat format = suggest_memory_format();
  Tensor out = empty(shape(), {dtype(), target}, format);
  const Tensor src = contiguous(format);
  bool queued = false;
  if constexpr (kWithCuda) {
    // Only pinned memory can be read by the GPU's copy engine while the host runs on; from
    // pageable memory the driver would stage the copy synchronously anyway.
    if (non_blocking == NonBlocking::yes && src.is_pinned() && target.is_cuda() &&
        src.numel() > 0) {
      cuda_copy_to_device_async(out.data_ptr(), target, src.data_ptr(), src.nbytes());
      queued = true;
    }
  }
  if (!queued) copy_strided(out, src);
  if (needs_grad({*this}))
    record_backward("ToDeviceBackward", {*this}, out,
                    [src = device()](const Tensor& g) { return g.to(src); });
  return out;
}

Tensor Tensor::pin_memory() const {
  RG_CHECK(device().is_cpu(), "pin_memory: only cpu tensors can be pinned, got ", describe());
  if (is_pinned() || cuda_device_count() == 0) return *this;
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage(nbytes(), device(), HostMemory::pinned);  // cpu, or a logical cpu:N
  impl->shape = shape();
  impl->strides = contiguous_strides(shape());
  impl->dtype = dtype();
  Tensor out(std::move(impl));
  {
    NoGradGuard no_grad;
    copy_strided(out, *this);
  }
  if (needs_grad({*this})) record_backward("CloneBackward", {*this}, out, pass_gradient);
  return out;
}

}  // namespace rg
