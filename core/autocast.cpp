#include "core/autocast.h"

#include <map>
#include <utility>

#include "core/autograd.h"

namespace rg {
namespace {

thread_local std::optional<DType> tls_dtype;
thread_local int tls_enabled_depth = 0;  // enabled guards currently open on this thread

struct CachedCast {
  std::shared_ptr<TensorImpl> source;  // kept alive: its address is the key, never reused
  Tensor cast;
};
// Keyed by the weight's impl (a weight is one TensorImpl for the whole step, whatever handles
// point at it) and the target dtype (a nested guard may ask for the other 16-bit type).
// Cleared when the outermost enabled guard exits.
thread_local std::map<std::pair<const TensorImpl*, DType>, CachedCast> tls_cache;

bool is_half(DType d) {
  return d == DType::f16 || d == DType::bf16;
}

}  // namespace

std::optional<DType> autocast_dtype() {
  return tls_dtype;
}

AutocastGuard::AutocastGuard(std::optional<DType> dtype) : previous_(tls_dtype) {
  RG_CHECK(!dtype || is_half(*dtype), "autocast: dtype must be f16 or bf16, got ", *dtype);
  tls_dtype = dtype;
  if (dtype) ++tls_enabled_depth;
}

AutocastGuard::~AutocastGuard() {
  if (tls_dtype && --tls_enabled_depth == 0) tls_cache.clear();
  tls_dtype = previous_;
}

Tensor autocast_to(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  // What PyTorch caches: f32 leaves that require grad (the model's weights) cast to the
  // autocast dtype. Activations change every call, and a cast that records no graph (grad mode
  // off) would serve a later call that needs one, so neither is cached.
  const bool cacheable = tls_dtype && dtype == *tls_dtype && x.dtype() == DType::f32 &&
                         x.is_leaf() && x.requires_grad() && GradMode::is_enabled();
  if (!cacheable) return x.to(dtype);
  const auto key = std::make_pair(static_cast<const TensorImpl*>(x.impl()), dtype);
  auto it = tls_cache.find(key);
  if (it != tls_cache.end()) return it->second.cast;
  Tensor cast = x.to(dtype);
  tls_cache.emplace(key, CachedCast{x.impl_ptr(), cast});
  return cast;
}

std::size_t autocast_cache_size() {
  return tls_cache.size();
}

}  // namespace rg
