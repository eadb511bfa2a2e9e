#include <gtest/gtest.h>

#include "core/autograd.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// clone's gradchecks and PyTorch parity, and copy_'s bad inputs, are in their spec
// (ops/copy/copy_spec.cpp).
TEST(Clone, FreshContiguousStorage) {
  Tensor x = ones({2, 2});
  Tensor c = clone(x.transpose(0, 1));
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_FALSE(c.storage().same_as(x.storage()));
  fill_(c, 5);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1, 1, 1, 1}));
}

TEST(Copy, MatchesPyTorch) {
  Fixture f("copy");
  // Broadcast (3, 1) -> (2, 3, 4) with f32 -> f64.
  Tensor dst = zeros({2, 3, 4}, {DType::f64});
  Tensor ret = copy_(dst, f["bcast.src"]);
  EXPECT_TRUE(ret.same_as(dst));
  EXPECT_TRUE(all_close(dst, f["bcast.dst"], 0, 0));
  EXPECT_EQ(dst.dtype(), DType::f64);
  // Into a transposed f16 view: the base tensor sees the values transposed and rounded.
  Tensor base = zeros({3, 4}, {DType::f16});
  copy_(base.transpose(0, 1), f["strided.src"]);
  EXPECT_TRUE(all_close(base, f["strided.base"], 0, 0));
  // Float into i64: truncation toward zero.
  Tensor di = zeros({2, 5}, {DType::i64});
  copy_(di, f["int.src"]);
  EXPECT_TRUE(all_close(di, f["int.dst"], 0, 0));
}

TEST(Copy, OverlappingSourceIsReadBeforeWriting) {
  Tensor x = arange(0, 9).view({3, 3});
  copy_(x, x.transpose(0, 1));
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 3, 6, 1, 4, 7, 2, 5, 8}));
}

TEST(Copy, InitialisesParametersUnderNoGrad) {
  Tensor w = zeros({2, 2}).set_requires_grad(true);
  Tensor src = ones({2}).set_requires_grad(true);
  {
    NoGradGuard no_grad;
    copy_(w, src * 3.0);
  }
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{3, 3, 3, 3}));
  EXPECT_TRUE(w.is_leaf());
  EXPECT_TRUE(w.requires_grad());
}

}  // namespace
}  // namespace rg
