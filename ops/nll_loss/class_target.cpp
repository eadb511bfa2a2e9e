#include "ops/nll_loss/class_target.h"

#include <string>
#include <utility>

#include "core/deferred_checks.h"

#include "ops/cast/cast.h"
#include "ops/div/div.h"
#include "ops/elementwise/elementwise.h"
#include "ops/sum/sum.h"

namespace rg::detail {
namespace {

[[noreturn]] void fail_out_of_range(std::string_view op, int64_t value, int64_t classes,
                                    int64_t ignore_index) {
  fail(op, ": target ", value, " is out of range for C = ", classes,
       " classes (expected 0 <= target < ", classes, ", or ignore_index ", ignore_index, ")");
}

}  // namespace

Lanes check_class_target(std::string_view op, const Tensor& input, const Tensor& target,
                         const Tensor& weight) {
  RG_CHECK(input.defined() && target.defined(), op, ": input and target must be defined");
  check_same_float(op, {input, weight});
  RG_CHECK(input.dim() >= 1, op, ": input must be (N, C, ...) or (C), got ", input.describe());
  RG_CHECK(target.dtype() == DType::i64, op, ": target must hold i64 class indices, got ",
           target.describe());
  RG_CHECK(target.device() == input.device(), op, ": device mismatch, input ", input.describe(),
           " vs target ", target.describe());
  const int64_t class_dim = input.dim() == 1 ? 0 : 1;
  Shape expected = input.shape();
  expected.erase(expected.begin() + class_dim);
  RG_CHECK(target.shape() == expected, op, ": target ", target.describe(), " does not match input ",
           input.describe(), " (expected target shape ", shape_str(expected), ")");
  const int64_t classes = input.shape()[class_dim];
  if (weight.defined())
    RG_CHECK(weight.dim() == 1 && weight.numel() == classes, op, ": weight must have shape [",
             classes, "] (one per class), got ", weight.describe());
  return lanes_around(input.shape(), class_dim);
}

void check_target_range(std::string_view op, const Tensor& target, int64_t classes,
                        int64_t ignore_index) {
  const Tensor t = target.contiguous();
  const int64_t* pt = t.data<int64_t>();
  for (int64_t n = 0; n < t.numel(); ++n)
    if (pt[n] != ignore_index && (pt[n] < 0 || pt[n] >= classes))
      fail_out_of_range(op, pt[n], classes, ignore_index);
}

void check_bad_lane(std::string_view op, const Tensor& bad_lane, const Tensor& target,
                    int64_t classes, int64_t ignore_index) {
  auto check = [op = std::string(op), bad_lane, target, classes, ignore_index] {
    const int64_t lane = bad_lane.to(Device::cpu()).data<int64_t>()[0];
    if (lane >= target.numel()) return;
    const Tensor value = target.contiguous().reshape({-1}).narrow(0, lane, 1).to(Device::cpu());
    fail_out_of_range(op, value.data<int64_t>()[0], classes, ignore_index);
  };
  // Host memory (the emulator's tests) has nothing to wait for; a GPU's flag is read when the
  // host next waits for that GPU anyway (core/deferred_checks.h).
  if (bad_lane.device().is_cpu()) return check();
  defer_check(bad_lane.device(), std::move(check));
}

ReducedLoss reduce_lane_losses(const Tensor& lane_loss, const Tensor& lane_weight,
                               Reduction reduction, DType dtype) {
  ReducedLoss r;
  r.total_weight = sum(lane_weight);
  if (reduction == Reduction::none) r.loss = cast(lane_loss, dtype);
  if (reduction == Reduction::sum) r.loss = cast(sum(lane_loss), dtype);
  if (reduction == Reduction::mean) r.loss = cast(div(sum(lane_loss), r.total_weight), dtype);
  return r;
}

}  // namespace rg::detail
