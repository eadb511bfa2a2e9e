#include "ops/dropout/dropout.h"

#include <cmath>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "ops/elementwise/elementwise.h"

namespace rg {
namespace {

constexpr int64_t kGrain = 1 << 13;  // Philox costs ~10 multiplies per element

// out = in · mask · scale elementwise; in, mask, out contiguous with the same numel.
void apply_mask(const Tensor& in, const Tensor& mask, double scale, const Tensor& out) {
  dispatch_floating(in.dtype(), "dropout", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* src = static_cast<const T*>(in.data_ptr());
    const uint8_t* m = mask.data<uint8_t>();
    T* dst = static_cast<T*>(out.data_ptr());
    const C s = static_cast<C>(scale);
    parallel_for(in.numel(), kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dst[i] = T(m[i] ? static_cast<C>(src[i]) * s : C(0));
    });
  });
}

class DropoutBackward : public Node {
 public:
  DropoutBackward(Tensor mask, double scale) : mask_(std::move(mask)), scale_(scale) {}
  std::string name() const override { return "DropoutBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    const Tensor gy = g[0].contiguous();
    Tensor gx = empty_like(gy);
    apply_mask(gy, mask_, scale_, gx);
    return {gx};
  }
  void release_saved() override { mask_ = Tensor(); }

 private:
  Tensor mask_;  // u8, the shape of x: 1 = kept
  double scale_;
};

}  // namespace

Tensor dropout(const Tensor& x, double p, DropoutMode mode, Generator& generator) {
  check_same_float("dropout", {x});
  check_cpu("dropout", {x});
  RG_CHECK(p >= 0 && p <= 1, "dropout: probability p must be in [0, 1], got ", p, " (input ",
           x.describe(), ")");
  if (mode == DropoutMode::eval) return x;
  // One draw per call, even for p = 0 or 1, so the generator's stream does not depend on p.
  const uint64_t seed = generator.seed(), offset = generator.next_offset();
  // p = 1 keeps nothing: scale 0 instead of 1/0 (which would turn 0·inf into NaN).
  const double scale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
  const auto threshold = static_cast<float>(p);
  Tensor mask = empty(x.shape(), {DType::u8, x.device()});
  uint8_t* m = mask.data<uint8_t>();
  parallel_for(x.numel(), kGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      m[i] = philox_uniform_f32(seed, offset, static_cast<uint64_t>(i)) >= threshold ? 1 : 0;
  });
  const Tensor xc = x.detach().contiguous();
  Tensor y = empty(x.shape(), {x.dtype(), x.device()});
  apply_mask(xc, mask, scale, y);
  if (needs_grad({x})) record(std::make_shared<DropoutBackward>(mask, scale), {x}, {&y});
  return y;
}

}  // namespace rg
