#include "ops/autocast/autocast_policy.h"

namespace rg {
namespace {

bool is_half(DType d) {
  return d == DType::f16 || d == DType::bf16;
}

// f16 and bf16 rank the same: neither holds the other, so their promotion is f32.
int width(DType d) {
  return d == DType::f64 ? 3 : d == DType::f32 ? 2 : 1;
}

DType promote(DType a, DType b) {
  if (a == b) return a;
  if (width(a) == width(b)) return DType::f32;  // f16 with bf16
  return width(a) > width(b) ? a : b;
}

}  // namespace

DType autocast_target(AutocastPolicy policy, DType input, DType autocast, DType widest) {
  switch (policy) {
    case AutocastPolicy::lower_precision:
      // PyTorch leaves f64 alone: a double computation was asked for explicitly.
      return input == DType::f64 ? input : autocast;
    case AutocastPolicy::float32:
      return is_half(input) ? DType::f32 : input;
    case AutocastPolicy::promote:
      return widest;
  }
  return input;
}

std::vector<Tensor> autocast_inputs(AutocastPolicy policy, std::vector<Tensor> inputs) {
  const std::optional<DType> autocast = autocast_dtype();
  if (!autocast) return inputs;
  auto eligible = [](const Tensor& t) { return t.defined() && is_floating(t.dtype()); };
  std::optional<DType> widest;
  for (const Tensor& t : inputs)
    if (eligible(t)) widest = widest ? promote(*widest, t.dtype()) : t.dtype();
  for (Tensor& t : inputs) {
    if (!eligible(t)) continue;
    const DType target = autocast_target(policy, t.dtype(), *autocast, *widest);
    if (target != t.dtype()) t = autocast_to(t, target);
  }
  return inputs;
}

}  // namespace rg
