#include <gtest/gtest.h>

#include "core/autograd.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The bad inputs of split are in its spec (ops/split/split_spec.cpp).

TEST(Split, GradcheckThroughSeveralPiecesSomeUnused) {
  // Uneven split_size: pieces 2, 2, 1 along dim 1; recombined out of order, piece 1 unused.
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        std::vector<Tensor> p = split(in[0], 2, 1);
        EXPECT_EQ(p.size(), 3u);
        return cat({p[2], p[0]}, 1);
      },
      {grad_input({2, 5})}));
  // Sizes along the last dim; the same input feeds two pieces that are added.
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        std::vector<Tensor> p = split(in[0], std::vector<int64_t>{2, 1, 2}, -1);
        return p[0] + p[2];
      },
      {grad_input({3, 5})}));
  // All pieces used, along dim 0.
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        std::vector<Tensor> p = split(in[0], std::vector<int64_t>{1, 0, 2}, 0);
        return cat({p[2], p[1], p[0]}, 0);
      },
      {grad_input({3, 2})}));
}

TEST(Split, MatchesPyTorch) {
  Fixture f("split");
  {
    Tensor x = f["size2.x"].set_requires_grad(true);
    std::vector<Tensor> p = split(x, 2, 1);
    ASSERT_EQ(p.size(), 4u);
    for (int k = 0; k < 4; ++k)
      EXPECT_TRUE(all_close(p[k], f["size2.y" + std::to_string(k)], 0, 0));
    // Only pieces 0 and 3 get a gradient.
    run_backward({p[0], p[3]}, {f["size2.gy0"], f["size2.gy3"]}, false);
    EXPECT_TRUE(all_close(x.grad(), f["size2.gx"], 0, 0));
  }
  {
    Tensor x = f["sizes.x"].set_requires_grad(true);
    std::vector<Tensor> p = split(x, std::vector<int64_t>{1, 3, 1}, 0);
    ASSERT_EQ(p.size(), 3u);
    std::vector<Tensor> gys;
    for (int k = 0; k < 3; ++k) {
      EXPECT_TRUE(all_close(p[k], f["sizes.y" + std::to_string(k)], 0, 0));
      gys.push_back(f["sizes.gy" + std::to_string(k)]);
    }
    run_backward(p, gys, false);
    EXPECT_TRUE(all_close(x.grad(), f["sizes.gx"], 0, 0));
  }
}

TEST(Split, PiecesAreViewsAndEmptyDims) {
  Tensor x = arange(0, 6).reshape({2, 3});
  std::vector<Tensor> p = split(x, 2, 1);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[1].shape(), (Shape{2, 1}));
  EXPECT_EQ(p[1].to_vector<float>(), (std::vector<float>{2, 5}));
  EXPECT_EQ(p[0].storage().data(), x.storage().data());
  EXPECT_EQ(split(empty({0, 3}), 2, 0).size(), 1u);
  EXPECT_EQ(split(x, 5, 0).size(), 1u);  // split_size beyond the dim: one piece
}

}  // namespace
}  // namespace rg
