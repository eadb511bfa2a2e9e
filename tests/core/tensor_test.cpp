#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/allocator.h"
#include "core/tensor.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using testing::throws_error;

TEST(Tensor, FactoriesAndReadBack) {
  Tensor z = zeros({2, 3});
  EXPECT_EQ(z.shape(), (Shape{2, 3}));
  EXPECT_EQ(z.strides(), (Shape{3, 1}));
  EXPECT_EQ(z.to_vector<float>(), std::vector<float>(6, 0.f));
  EXPECT_EQ(ones({4}, {DType::f64}).to_vector<double>(), std::vector<double>(4, 1.0));
  EXPECT_EQ(full({2}, 2.5, {DType::f16}).to_vector<float>(), (std::vector<float>{2.5f, 2.5f}));
  EXPECT_EQ(arange(0, 5).to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4}));
  EXPECT_EQ(arange(1, 0, -0.25, {DType::f64}).to_vector<double>(),
            (std::vector<double>{1, 0.75, 0.5, 0.25}));
  EXPECT_EQ(from_vector<int64_t>({1, 2, 3, 4}, {2, 2}, {DType::i64}).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_DOUBLE_EQ(scalar_tensor(3.0).item(), 3.0);
  EXPECT_EQ(empty({0, 3}).numel(), 0);
}

TEST(Tensor, BadFactoryInput) {
  EXPECT_TRUE(throws_error([] { zeros({2, -1}); }, {"empty", "negative", "[2, -1]"}));
  EXPECT_TRUE(throws_error(
      [] {
        from_vector<float>({1, 2, 3}, {2, 2});
      },
      {"from_vector", "3", "[2, 2]"}));
  EXPECT_TRUE(throws_error([] { ones({2}).item(); }, {"item", "[2]"}));
  EXPECT_TRUE(throws_error([] { arange(0, 1, 0); }, {"arange", "step"}));
  EXPECT_TRUE(throws_error([] { zeros({2}, {DType::f32, Device::cuda(0)}); }, {"cuda:0"}));
}

// A byte count that wraps 2^64 would allocate a tiny buffer for a huge shape, and the first
// kernel would write past it.
TEST(Tensor, FactoriesRefuseSizesThatWrap) {
  EXPECT_TRUE(throws_error([] { empty({int64_t{1} << 62}); }, {"empty", "2^63 bytes", "f32"}));
  EXPECT_TRUE(throws_error(
      [] {
        empty({int64_t{1} << 32, int64_t{1} << 32}, {DType::u8});
      },
      {"empty", "2^63 bytes"}));
  float x = 0;
  EXPECT_TRUE(throws_error([&] { from_blob(&x, {int64_t{1} << 61}, {DType::f64}); },
                           {"from_blob", "2^63 bytes"}));
  EXPECT_EQ(empty({int64_t{1} << 40, 0}).nbytes(), 0u);  // empty tensors stay fine
}

// Views take their shape from the caller: a product that wrapped to 0 once let an empty tensor
// be viewed as 2^64 elements, and an element count of 2^64 reads as 0.
TEST(Tensor, ViewsRefuseShapesThatWrap) {
  const int64_t big = int64_t{1} << 32;
  Tensor none = empty({0});
  EXPECT_TRUE(throws_error([&] { none.reshape({big, big}); }, {"2^63 elements"}));
  EXPECT_TRUE(throws_error([&] { none.view({big, big, -1}); }, {"view", "2^63 elements"}));
  EXPECT_EQ(none.reshape({big, 0}).numel(), 0);  // a zero size makes the product 0, not a wrap
  Tensor one = ones({1});
  EXPECT_TRUE(throws_error([&] { one.expand({big, big}); }, {"2^63 elements"}));
  EXPECT_TRUE(throws_error([&] { one.expand({-5}); }, {"expand", "invalid size", "[-5]"}));
  EXPECT_TRUE(throws_error([&] { one.expand({-3, 1}); }, {"expand", "invalid size"}));
  EXPECT_TRUE(throws_error(
      [] {
        empty({int64_t{1} << 40, int64_t{1} << 40, 0});
      },
      {"2^63 bytes"}));  // its strides would wrap
  EXPECT_TRUE(throws_error([] { arange(0, 1e300); }, {"arange", "too many"}));
  EXPECT_TRUE(throws_error([] { arange(0, INFINITY); }, {"arange", "too many"}));
}

TEST(Tensor, ViewsShareStorage) {
  Tensor x = arange(0, 24).reshape({2, 3, 4});
  Tensor t = x.transpose(0, 2);
  EXPECT_EQ(t.shape(), (Shape{4, 3, 2}));
  EXPECT_TRUE(t.storage().same_as(x.storage()));
  EXPECT_FALSE(t.is_contiguous());
  Tensor c = t.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.to_vector<float>()[1], 12.f);  // t[0][0][1] = x[1][0][0]
  Tensor n = x.narrow(1, 1, 2);
  EXPECT_EQ(n.shape(), (Shape{2, 2, 4}));
  EXPECT_EQ(n.offset(), 4);
  EXPECT_EQ(n.to_vector<float>()[0], 4.f);
  EXPECT_EQ(x.narrow(2, 3, 1).squeeze(2).to_vector<float>(),
            (std::vector<float>{3, 7, 11, 15, 19, 23}));
  EXPECT_EQ(x.unsqueeze(0).shape(), (Shape{1, 2, 3, 4}));
  EXPECT_EQ(x.unsqueeze(-1).shape(), (Shape{2, 3, 4, 1}));
  EXPECT_EQ(x.view({6, -1}).shape(), (Shape{6, 4}));
  EXPECT_EQ(x.select(0, 1).to_vector<float>()[0], 12.f);
  EXPECT_EQ(x.flatten(1).shape(), (Shape{2, 12}));
  Tensor e = from_vector<float>({1, 2}, {2, 1}).expand({2, 3});
  EXPECT_EQ(e.to_vector<float>(), (std::vector<float>{1, 1, 1, 2, 2, 2}));
  EXPECT_TRUE(throws_error([&] { t.view({24}); }, {"view", "reshape"}));
  EXPECT_EQ(t.reshape({24}).to_vector<float>()[1], 12.f);
  EXPECT_TRUE(throws_error([&] { x.view({5, -1}); }, {"view", "[5, -1]"}));
  EXPECT_TRUE(throws_error([&] { x.narrow(1, 2, 2); }, {"narrow", "out of bounds"}));
  EXPECT_TRUE(throws_error([&] { x.transpose(0, 3); }, {"transpose", "dim 3"}));
}

TEST(Tensor, DtypeConversionsRoundToNearestEven) {
  // 1 + 2^-11 is halfway between two f16 values: ties go to the even one (1.0).
  Tensor h = from_vector<double>(
      {1.0 + std::ldexp(1.0, -11), 1.0 + 3 * std::ldexp(1.0, -11), 65520.0, 1e-8, -2.5}, {5},
      {DType::f16});
  std::vector<double> back = h.to_vector<double>();
  EXPECT_EQ(back[0], 1.0);
  EXPECT_EQ(back[1], 1.0 + 4 * std::ldexp(1.0, -11));
  EXPECT_TRUE(std::isinf(back[2]));              // rounds past the largest half (65504)
  EXPECT_EQ(back[3], std::ldexp(1.0, -24) * 0);  // below half the smallest subnormal
  EXPECT_EQ(back[4], -2.5);
  // bf16 keeps 8 mantissa bits; 1 + 2^-8 ties to even (1.0), 1 + 3·2^-8 up to 1 + 2^-6.
  Tensor b = from_vector<double>({1.0 + std::ldexp(1.0, -8), 1.0 + 3 * std::ldexp(1.0, -8)}, {2},
                                 {DType::bf16});
  EXPECT_EQ(b.to_vector<double>(), (std::vector<double>{1.0, 1.0 + std::ldexp(1.0, -6)}));
  // Double rounding trap: just above a tie in double, but the f32 rounding lands on the tie.
  const double above_tie = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(from_vector<double>({above_tie}, {1}, {DType::f16}).to_vector<double>()[0],
            1.0 + std::ldexp(1.0, -10));
  EXPECT_EQ(ones({3}).to(DType::i64).dtype(), DType::i64);
}

// Contiguous f32 <-> f16 copies take a vectorised path (F16C instructions where the CPU has
// them); it must round exactly like the scalar conversion of core/half.h.
TEST(Tensor, VectorisedHalfConversionsMatchTheScalarOnes) {
  auto is_nan_half = [](uint16_t b) { return (b & 0x7C00u) == 0x7C00u && (b & 0x3FFu) != 0; };
  // Every one of the 65536 halves to float.
  std::vector<uint16_t> all(1 << 16);
  for (uint32_t b = 0; b < all.size(); ++b) all[b] = static_cast<uint16_t>(b);
  Tensor halves = empty({static_cast<int64_t>(all.size())}, {DType::f16});
  std::memcpy(halves.data_ptr(), all.data(), all.size() * 2);
  const std::vector<float> widened = halves.to(DType::f32).to_vector<float>();
  for (uint32_t b = 0; b < all.size(); ++b) {
    const float want = detail::half_bits_to_float(static_cast<uint16_t>(b));
    if (std::isnan(want))
      ASSERT_TRUE(std::isnan(widened[b])) << b;
    else
      ASSERT_EQ(detail::float_bits(widened[b]), detail::float_bits(want)) << b;
  }
  // Floats to half: every exact midpoint between neighbouring halves and its two float
  // neighbours (the rounding cases), plus a sweep of bit patterns across the whole range
  // (subnormals, overflow to infinity, NaN).
  std::vector<float> floats;
  for (uint32_t b = 0; b < 0x7C00u; ++b) {
    const float lo = detail::half_bits_to_float(static_cast<uint16_t>(b));
    const float hi = detail::half_bits_to_float(static_cast<uint16_t>(b + 1));
    const float mid = lo + (hi - lo) / 2;  // exact in f32
    for (float f : {mid, std::nextafter(mid, 0.f), std::nextafter(mid, 1e9f)})
      floats.insert(floats.end(), {f, -f});
  }
  for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 65521)
    floats.push_back(detail::bits_float(uint32_t(b)));
  Tensor f32 = from_vector(floats, {static_cast<int64_t>(floats.size())});
  Tensor narrowed = f32.to(DType::f16);
  const auto* got = static_cast<const uint16_t*>(narrowed.data_ptr());
  for (std::size_t i = 0; i < floats.size(); ++i) {
    const uint16_t want = detail::float_to_half_bits(floats[i]);
    if (is_nan_half(want))
      ASSERT_TRUE(is_nan_half(got[i])) << floats[i];
    else
      ASSERT_EQ(got[i], want) << floats[i] << " (bits " << detail::float_bits(floats[i]) << ")";
  }
}

TEST(Tensor, PrintingIsReadable) {
  Tensor x = arange(0, 4).reshape({2, 2});
  EXPECT_EQ(x.str(),
            "tensor([[0.0000, 1.0000], [2.0000, 3.0000]], shape=[2, 2], dtype=f32, device=cpu)");
  std::string big = zeros({2000}).str();
  EXPECT_NE(big.find("..."), std::string::npos);
  EXPECT_LT(big.size(), 200u);
}

TEST(Memory, AccountingTracksCurrentAndPeak) {
  const MemoryStats before = memory_stats(Device::cpu());
  reset_peak_memory(Device::cpu());
  {
    Tensor t = empty({1024, 1024});  // 4 MiB
    EXPECT_EQ(memory_stats(Device::cpu()).current_bytes, before.current_bytes + 4 * 1024 * 1024);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64, 0u);
  }
  const MemoryStats after = memory_stats(Device::cpu());
  EXPECT_EQ(after.current_bytes, before.current_bytes);
  EXPECT_GE(after.peak_bytes, before.current_bytes + 4 * 1024 * 1024);
}

TEST(Device, ParseAndAvailability) {
  EXPECT_EQ(Device::parse("cpu"), Device::cpu());
  EXPECT_EQ(Device::parse("cuda:3"), Device::cuda(3));
  EXPECT_EQ(Device::parse("cuda").str(), "cuda:0");
  EXPECT_TRUE(throws_error([] { Device::parse("gpu"); }, {"invalid device 'gpu'"}));
  EXPECT_TRUE(throws_error([] { Device::parse("cuda:x"); }, {"cuda:x"}));
  if (cuda_device_count() == 0) {
    EXPECT_TRUE(throws_error([] { check_device_available(Device::cuda(0)); }, {"cuda:0"}));
  }
}

}  // namespace
}  // namespace rg
