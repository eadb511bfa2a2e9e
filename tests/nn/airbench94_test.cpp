// airbench94's building block against PyTorch (tests/fixtures/airbench94_group.safetensors,
// tools/fixtures/airbench94_group.py): GELU, BatchNorm's eps 1e-12 and momentum 0.4 with its
// weight frozen, pooling before normalisation — forward, backward, running statistics, eval.

#include <gtest/gtest.h>

#include "core/autograd.h"
#include "nn/models/airbench94.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"

namespace rg::nn {
namespace {
using rg::testing::all_close;
using rg::testing::Fixture;

TEST(Airbench94, GroupMatchesPyTorch) {
  const Fixture f("airbench94_group");
  Airbench94Group group(4, 8);
  group.to(DType::f64, KeepFloat32::never);
  {
    NoGradGuard no_grad;
    for (auto& [name, p] : group.named_parameters()) copy_strided(p, f["p." + name]);
  }
  const Tensor x = f["x"].clone().set_requires_grad(true);
  group.train();
  const Tensor y = group.forward(x);
  EXPECT_TRUE(all_close(y, f["y"], 1e-10, 1e-10));
  sum(mul(y, f["gy"])).backward();
  EXPECT_TRUE(all_close(x.grad(), f["gx"], 1e-10, 1e-10));
  for (auto& [name, p] : group.named_parameters()) {
    SCOPED_TRACE(name);
    if (f.has("g." + name)) {
      EXPECT_TRUE(all_close(p.grad(), f["g." + name], 1e-9, 1e-9));
    } else {
      EXPECT_FALSE(p.grad().defined());  // the frozen BatchNorm weights
      EXPECT_FALSE(p.requires_grad());
    }
  }
  int compared = 0;
  for (auto& [name, b] : group.named_buffers()) {
    if (!f.has("b." + name)) continue;
    SCOPED_TRACE(name);
    EXPECT_TRUE(all_close(b, f["b." + name], 1e-12, 1e-12));  // momentum 0.4
    ++compared;
  }
  EXPECT_EQ(compared, 4);  // running mean and variance of both BatchNorms
  group.eval();
  NoGradGuard no_grad;
  EXPECT_TRUE(all_close(group.forward(f["x"]), f["y_eval"], 1e-9, 1e-9));
}

}  // namespace
}  // namespace rg::nn
