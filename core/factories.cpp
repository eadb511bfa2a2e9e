// Tensor factories and reading values back.
#include <algorithm>
#include <cmath>

#include "core/dispatch.h"
#include "core/rng.h"
#include "core/tensor.h"
#include "core/thread_pool.h"

namespace rg {

namespace {
void check_shape(const Shape& shape, const char* op) {
  for (int64_t s : shape) RG_CHECK(s >= 0, op, ": negative dimension in shape ", shape_str(shape));
}

// The bytes a contiguous tensor of `shape` needs, refusing a count that would wrap: a wrapped
// product allocates a small buffer that every kernel then overruns. int64 bounds numel (what
// numel() returns) and the byte count (what pointer arithmetic can reach). The product skips
// zero sizes (as contiguous_strides does), so that no stride of an empty tensor wraps either.
std::size_t checked_nbytes(const Shape& shape, DType dtype, const char* op) {
  check_shape(shape, op);
  int64_t bytes = element_size(dtype);
  for (int64_t s : shape)
    RG_CHECK(!__builtin_mul_overflow(bytes, std::max<int64_t>(s, 1), &bytes), op, ": shape ",
             shape_str(shape), " of ", dtype, " needs more than 2^63 bytes");
  return numel_of(shape) == 0 ? 0 : static_cast<std::size_t>(bytes);
}

Tensor finish(Tensor t, const TensorOptions& options) {
  if (options.requires_grad) t.set_requires_grad(true);
  return t;
}

// Fills a cpu tensor from a generator function of the element index, on all threads.
template <class Gen>
void fill_indexed(const Tensor& t, Gen gen) {
  dispatch_all(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* out = static_cast<T*>(t.data_ptr());
    parallel_for(t.numel(), 1 << 14, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) out[i] = convert<T>(gen(i));
    });
  });
}

// Random tensors are generated on the cpu and copied, so a seed gives the same values on
// every device.
template <class Gen>
Tensor random_tensor(const Shape& shape, const TensorOptions& options, const char* op, Gen gen) {
  check_shape(shape, op);
  RG_CHECK(is_floating(options.dtype), op, ": dtype must be floating, got ", options.dtype);
  Tensor host = empty(shape, {options.dtype, Device::cpu()});
  Generator& g = default_generator();
  const uint64_t seed = g.seed(), offset = g.next_offset();
  fill_indexed(host, [&](int64_t i) { return gen(seed, offset, static_cast<uint64_t>(i)); });
  return finish(host.to(options.device), options);
}
}  // namespace

Tensor empty(const Shape& shape, TensorOptions options) {
  const std::size_t nbytes = checked_nbytes(shape, options.dtype, "empty");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage(nbytes, options.device);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = options.dtype;
  return finish(Tensor(std::move(impl)), options);
}

Tensor empty(const Shape& shape, TensorOptions options, MemoryFormat format) {
  Tensor t = empty(shape, options);
  if (format != MemoryFormat::contiguous) t.impl()->strides = strides_for(shape, format, "empty");
  return t;
}

Tensor empty_like(const Tensor& t, MemoryFormat format) {
  return empty(t.shape(), {t.dtype(), t.device()}, format);
}

Tensor from_blob(void* data, const Shape& shape, TensorOptions options,
                 std::function<void(void*)> release) {
  const std::size_t nbytes = checked_nbytes(shape, options.dtype, "from_blob");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::wrap(data, nbytes, options.device, std::move(release));
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = options.dtype;
  return finish(Tensor(std::move(impl)), options);
}

Tensor full(const Shape& shape, double value, TensorOptions options) {
  const bool requires_grad = options.requires_grad;
  options.requires_grad = false;
  Tensor t = empty(shape, options);
  fill_(t, value);
  options.requires_grad = requires_grad;
  return finish(t, options);
}

Tensor zeros(const Shape& shape, TensorOptions options) {
  return full(shape, 0.0, options);
}
Tensor ones(const Shape& shape, TensorOptions options) {
  return full(shape, 1.0, options);
}
Tensor zeros_like(const Tensor& t) {
  return zeros(t.shape(), {t.dtype(), t.device()});
}
Tensor ones_like(const Tensor& t) {
  return ones(t.shape(), {t.dtype(), t.device()});
}
Tensor empty_like(const Tensor& t) {
  return empty(t.shape(), {t.dtype(), t.device()});
}
Tensor scalar_tensor(double value, TensorOptions options) {
  return full({}, value, options);
}

Tensor arange(double start, double end, double step, TensorOptions options) {
  RG_CHECK(step != 0, "arange: step must be non-zero");
  RG_CHECK((end - start) / step >= 0, "arange: range [", start, ", ", end, ") with step ", step,
           " is empty in the wrong direction");
  const double count = std::ceil((end - start) / step);
  // A cast of an infinite or out-of-range count to int64 is undefined; empty() bounds the rest.
  RG_CHECK(std::isfinite(count) && count < 0x1p62, "arange: range [", start, ", ", end,
           ") with step ", step, " has too many elements");
  const auto n = static_cast<int64_t>(count);
  Tensor host = empty({n}, {options.dtype, Device::cpu()});
  fill_indexed(host, [&](int64_t i) { return start + static_cast<double>(i) * step; });
  return finish(host.to(options.device), options);
}

Tensor rand(const Shape& shape, TensorOptions options) {
  if (options.dtype == DType::f64) return random_tensor(shape, options, "rand", philox_uniform_f64);
  return random_tensor(shape, options, "rand", [](uint64_t s, uint64_t o, uint64_t i) {
    return static_cast<double>(philox_uniform_f32(s, o, i));
  });
}

Tensor randn(const Shape& shape, TensorOptions options) {
  return random_tensor(shape, options, "randn", philox_normal);
}

template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, TensorOptions options) {
  check_shape(shape, "from_vector");
  RG_CHECK(numel_of(shape) == static_cast<int64_t>(values.size()), "from_vector: ", values.size(),
           " values do not fill shape ", shape_str(shape), " (", numel_of(shape), " elements)");
  Tensor host = empty(shape, {options.dtype, Device::cpu()});
  dispatch_all(options.dtype, [&](auto tag) {
    using D = decltype(tag);
    D* out = static_cast<D*>(host.data_ptr());
    for (std::size_t i = 0; i < values.size(); ++i) out[i] = convert<D>(values[i]);
  });
  return finish(host.to(options.device), options);
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  Tensor host = device().is_cpu() ? contiguous() : to(Device::cpu()).contiguous();
  std::vector<T> values(static_cast<std::size_t>(numel()));
  dispatch_all(dtype(), [&](auto tag) {
    using S = decltype(tag);
    const S* in = static_cast<const S*>(host.data_ptr());
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = convert<T>(in[i]);
  });
  return values;
}

double Tensor::item() const {
  RG_CHECK(numel() == 1, "item: expected a tensor with one element, got ", describe());
  return to_vector<double>()[0];
}

#define RG_INSTANTIATE(T)                                                             \
  template Tensor from_vector<T>(const std::vector<T>&, const Shape&, TensorOptions); \
  template std::vector<T> Tensor::to_vector<T>() const;
RG_INSTANTIATE(float)
RG_INSTANTIATE(double)
RG_INSTANTIATE(int64_t)
RG_INSTANTIATE(uint8_t)
RG_INSTANTIATE(Half)
RG_INSTANTIATE(BFloat16)
#undef RG_INSTANTIATE
template Tensor from_vector<int>(const std::vector<int>&, const Shape&, TensorOptions);

}  // namespace rg
