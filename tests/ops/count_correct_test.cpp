// count_correct (ops/count_correct): PyTorch parity, the rules of its argmax, the cases that are
// never correct, and what it records (nothing). Its emulated kernel and bad inputs are in its spec.
#include <gtest/gtest.h>

#include <cmath>

#include "core/autograd.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

TEST(CountCorrect, MatchesPyTorch) {
  Fixture f("count_correct");
  for (const char* name : {"batch", "ties"}) {
    SCOPED_TRACE(name);
    const std::string p = std::string(name) + ".";
    const Tensor y = count_correct(f[p + "logits"], f[p + "labels"]);
    EXPECT_EQ(y.dtype(), DType::f64);
    EXPECT_EQ(y.dim(), 0);
    EXPECT_TRUE(all_close(y, f[p + "y"], 0, 0));
  }
}

// The argmax is max(logits, 1)'s: the first of equal maxima, a NaN above every number; a label
// outside [0, K) is wrong, never an index; an empty batch counts 0.
TEST(CountCorrect, FollowsMaxAndRefusesNothingItCannotCheck) {
  const Tensor logits = from_vector<float>({1, 3, 3,              //
                                            2, 1, 0,              //
                                            0, std::nanf(""), 5,  //
                                            4, 4, 4},
                                           {4, 3});
  const Tensor labels = from_vector<int64_t>({1, 0, 1, 0}, {4}, {DType::i64});
  EXPECT_EQ(count_correct(logits, labels).item(), 4.0);
  const Tensor wrong = from_vector<int64_t>({2, 3, -1, 2}, {4}, {DType::i64});
  EXPECT_EQ(count_correct(logits, wrong).item(), 0.0);
  const Tensor as_max = max(logits, 1).indices;
  EXPECT_EQ(count_correct(logits, as_max).item(), 4.0);
  EXPECT_EQ(count_correct(empty({0, 10}), empty({0}, {DType::i64})).item(), 0.0);
}

// The count as the ops it replaces computed it (train_cifar's count before: max, casts,
// (predicted − label)², relu(1 − d²), sum), on strided logits, in every dtype; no autograd
// history even for logits that require grad.
TEST(CountCorrect, EqualsTheComposition) {
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    const Tensor logits = randn({10, 33}).to(dtype).transpose(0, 1).set_requires_grad(true);
    std::vector<int64_t> v(33);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i * 7 % 10);
    const Tensor labels = from_vector(v, {33}, {DType::i64});
    const Tensor predicted = max(logits.detach(), 1).indices.to(DType::f64);
    const Tensor d = sub(predicted, labels.to(DType::f64));
    const Tensor before = sum(relu(add(neg(mul(d, d)), 1.0)));
    const Tensor y = count_correct(logits, labels);
    EXPECT_EQ(y.item(), before.item()) << dtype_name(dtype);
    EXPECT_FALSE(y.requires_grad());
  }
}

}  // namespace
}  // namespace rg
