// Guards against a miscompile of GCC 12.2 with AVX-512 (see CMakeLists.txt): designated
// initialisers of structs of std::array members with constant values wrote the designated value
// into the next member too, so ConvTranspose3dOptions{.stride = {2, 2, 2}} came out with padding
// {2, 2, 2}. Without -fno-tree-slp-vectorize this test fails on such a machine.
#include <gtest/gtest.h>

#include "nn/layers.h"
#include "nn/layers3d.h"
#include "ops/conv/conv.h"

namespace rg {
namespace {

// Out of line, so the options are built in memory and passed by value, as to a constructor.
template <class Options>
[[gnu::noinline]] Options passed(Options o) {
  return o;
}

TEST(Compiler, DesignatedInitialisersKeepTheOtherMembers) {
  const auto o2 = passed<nn::Conv2dOptions>({.stride = {2, 2}});
  EXPECT_EQ(o2.padding, (nn::Size2{0, 0}));
  EXPECT_EQ(o2.dilation, (nn::Size2{1, 1}));
  const auto o3 = passed<nn::ConvTranspose3dOptions>({.stride = {2, 2, 2}});
  EXPECT_EQ(o3.stride, (nn::Size3{2, 2, 2}));
  EXPECT_EQ(o3.padding, (nn::Size3{0, 0, 0}));
  EXPECT_EQ(o3.output_padding, (nn::Size3{0, 0, 0}));
  const auto p = passed<Conv3dParams>({.stride = {2, 2, 2}});
  EXPECT_EQ(p.padding, (Conv3dTriple{0, 0, 0}));
}

}  // namespace
}  // namespace rg
