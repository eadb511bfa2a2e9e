#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks, PyTorch parity and bad inputs of add_relu are in its spec
// (ops/add_relu/add_relu_spec.cpp).
// The fused op and relu(a + b) round the sum once each, so they agree bit for bit, forward and
// backward, in every dtype (16-bit types computed in f32 and rounded once).
TEST(AddRelu, BitIdenticalToTheUnfusedComposition) {
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor a0 = randn({4, 8, 5, 5}).to(dtype), b0 = randn({4, 8, 5, 5}).to(dtype);
    const Tensor gy = randn({4, 8, 5, 5}).to(dtype);
    Tensor a1 = a0.clone().set_requires_grad(true), b1 = b0.clone().set_requires_grad(true);
    Tensor a2 = a0.clone().set_requires_grad(true), b2 = b0.clone().set_requires_grad(true);
    Tensor fused = add_relu(a1, b1), plain = relu(a2 + b2);
    EXPECT_TRUE(all_close(fused, plain, 0, 0));
    fused.backward(gy);
    plain.backward(gy);
    EXPECT_TRUE(all_close(a1.grad(), a2.grad(), 0, 0));
    EXPECT_TRUE(all_close(b1.grad(), b2.grad(), 0, 0));
  }
}

}  // namespace
}  // namespace rg
