// ZeRO-1 on MPI processes (CTest: 1-4 ranks) against DDP with the plain optimizer: bit for bit
// with 1 and 2 ranks, to rounding with 3 and 4 (tests/parallel/zero_bodies.h).
#include <gtest/gtest.h>

#include "parallel/world.h"
#include "tests/parallel/zero_bodies.h"

namespace rg::parallel {
namespace {
using namespace rg::parallel::testing;

TEST(MpiZero, SgdAndAdamWMatchDdp) {
  const Match match = size() <= 2 ? Match::bits : Match::tolerance;
  const DType dtype = size() <= 2 ? DType::f32 : DType::f64;
  ASSERT_NO_FATAL_FAILURE(zero_matches_ddp(world_ptr(), Kind::sgd, dtype, match));
  ASSERT_NO_FATAL_FAILURE(zero_matches_ddp(world_ptr(), Kind::adamw, dtype, match));
}

}  // namespace
}  // namespace rg::parallel
