#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "data/shapes.h"
#include "tests/support/fixtures.h"

namespace rg::data {
namespace {
using rg::testing::throws_error;

ShapesOptions plain_2d(int64_t max_shapes = 1) {
  return {.size = 50,
          .image_size = {48, 64},
          .max_shapes = max_shapes,
          .seed = 5,
          .noise = 0,
          .gradient = 0};
}

TEST(Shapes, SampleIsAFunctionOfSeedAndIndexOnly) {
  const ShapesOptions opts{.size = 1'000'000'000, .image_size = {40, 40}, .channels = 3, .seed = 9};
  Shapes a(opts), b(opts);  // a billion samples cost nothing until drawn
  for (int64_t i : {int64_t{999'999'999}, int64_t{0}, int64_t{12345}}) {
    const auto x = a.get(i), y = b.get(i);
    EXPECT_EQ(x.image.to_vector<int64_t>(), y.image.to_vector<int64_t>());
    EXPECT_EQ(x.mask.to_vector<int64_t>(), y.mask.to_vector<int64_t>());
  }
  EXPECT_EQ(a.get(7).image.shape(), (Shape{3, 40, 40}));
  EXPECT_EQ(a.get(7).mask.shape(), (Shape{40, 40}));
  EXPECT_NE(a.get(7).image.to_vector<int64_t>(), a.get(8).image.to_vector<int64_t>());
  ShapesOptions other = opts;
  other.seed = 10;
  EXPECT_NE(Shapes(other).get(7).mask.to_vector<int64_t>(), a.get(7).mask.to_vector<int64_t>());
}

// Without noise or gradient, a one-shape image is two flat levels: the mask is exactly the
// pixels whose centres the drawn shape contains, and they alone show the shape's intensity.
TEST(Shapes, MaskIsTheDrawnShape) {
  Shapes ds(plain_2d());
  int kinds_seen[3] = {0, 0, 0};
  for (int64_t i = 0; i < 30; ++i) {
    const auto shapes = ds.layout(i);
    ASSERT_EQ(shapes.size(), 1u);
    const DrawnShape& s = shapes[0];
    kinds_seen[static_cast<int>(s.kind)]++;
    const auto ex = ds.get(i);
    const auto mask = ex.mask.to_vector<int64_t>();
    const auto image = ex.image.to_vector<int64_t>();
    const int64_t shape_level = std::lround(s.intensity[0] * 255);
    int64_t area = 0;
    for (int64_t y = 0; y < 48; ++y)
      for (int64_t x = 0; x < 64; ++x) {
        const bool inside = Shapes::contains(s, 0, (y + 0.5) / 48, (x + 0.5) / 64);
        ASSERT_EQ(mask[y * 64 + x], inside ? 1 : 0) << "sample " << i << " at " << y << "," << x;
        if (inside) {
          EXPECT_EQ(image[y * 64 + x], shape_level);
        } else {
          EXPECT_LT(image[y * 64 + x], shape_level);
        }
        area += inside;
      }
    // The area agrees with the geometry (within the pixels a border can gain or lose) for
    // shapes wholly in view.
    const bool in_view = s.center[1] - s.extent[1] > 0 && s.center[1] + s.extent[1] < 1 &&
                         s.center[2] - s.extent[2] > 0 && s.center[2] + s.extent[2] < 1;
    if (in_view && s.kind == ShapeKind::disc) {
      EXPECT_NEAR(area, std::numbers::pi * s.extent[1] * s.extent[2] * 48 * 64, 0.1 * area);
    }
    if (in_view && s.kind == ShapeKind::box) {
      EXPECT_NEAR(area, 4 * s.extent[1] * 48 * s.extent[2] * 64, 0.15 * area);
    }
  }
  for (int k : kinds_seen) EXPECT_GT(k, 3);  // discs, boxes and triangles all drawn
}

TEST(Shapes, ClassesPerKindAreBalanced) {
  ShapesOptions opts = plain_2d(3);
  opts.size = 400;
  opts.classes = ShapeClasses::per_kind;
  opts.noise = 0.08;
  Shapes ds(opts);
  EXPECT_EQ(ds.num_classes(), 4);
  EXPECT_EQ(ds.class_names()[3], "triangle");
  int64_t shapes_of[4] = {0, 0, 0, 0}, pixels_of[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < 400; ++i) {
    for (const auto& s : ds.layout(i)) shapes_of[s.label]++;
    for (int64_t v : ds.get(i).mask.to_vector<int64_t>()) pixels_of[v]++;
  }
  const int64_t total = shapes_of[1] + shapes_of[2] + shapes_of[3];  // about 400 * 2
  EXPECT_GT(total, 650);
  EXPECT_LT(total, 950);
  for (int k = 1; k <= 3; ++k) {
    EXPECT_NEAR(shapes_of[k], total / 3.0, total * 0.08) << "kind " << k;
    // Every kind covers a real share of the pixels (triangles and boxes are smaller than
    // discs of the same radius, so not an equal share).
    EXPECT_GT(pixels_of[k], 400 * 48 * 64 / 40) << "kind " << k;
  }
  const double foreground = 1.0 - static_cast<double>(pixels_of[0]) / (400 * 48 * 64);
  EXPECT_GT(foreground, 0.08);
  EXPECT_LT(foreground, 0.5);
}

TEST(Shapes, NoiseAndGradientVaryTheBackground) {
  ShapesOptions opts = plain_2d();
  opts.noise = 0.08;
  opts.gradient = 0.25;
  const auto ex = Shapes(opts).get(3);
  const auto image = ex.image.to_vector<int64_t>();
  const auto mask = ex.mask.to_vector<int64_t>();
  double sum = 0, sum2 = 0;
  int64_t n = 0;
  for (std::size_t i = 0; i < image.size(); ++i)
    if (mask[i] == 0) sum += image[i], sum2 += double(image[i]) * image[i], ++n;
  const double sd = std::sqrt(sum2 / n - (sum / n) * (sum / n));
  EXPECT_GT(sd, 0.05 * 255);  // at least the noise
  EXPECT_LT(sd, 0.2 * 255);
}

TEST(Shapes, VolumesOfSpheresAndBoxes) {
  Shapes ds({.size = 4, .image_size = {32, 160, 160}, .max_shapes = 3, .seed = 1});
  EXPECT_EQ(ds.num_classes(), 2);
  EXPECT_NE(ds.describe().find("3-D 32x160x160"), std::string::npos);
  const auto ex = ds.get(2);
  EXPECT_EQ(ex.image.shape(), (Shape{1, 32, 160, 160}));
  EXPECT_EQ(ex.mask.shape(), (Shape{32, 160, 160}));
  const auto mask = ex.mask.to_vector<int64_t>();
  int64_t fg = 0;
  for (int64_t v : mask) {
    ASSERT_TRUE(v == 0 || v == 1);
    fg += v;
  }
  EXPECT_GT(fg, 0);
  for (int64_t i = 0; i < 4; ++i)
    for (const auto& s : ds.layout(i))
      EXPECT_TRUE(s.kind == ShapeKind::sphere || s.kind == ShapeKind::box);
  // The mask is the union of the shapes, voxel by voxel.
  const auto shapes = ds.layout(2);
  for (int64_t z = 0; z < 32; z += 3)
    for (int64_t y = 0; y < 160; y += 7)
      for (int64_t x = 0; x < 160; x += 5) {
        bool inside = false;
        for (const auto& s : shapes)
          inside |= Shapes::contains(s, (z + 0.5) / 32, (y + 0.5) / 160, (x + 0.5) / 160);
        ASSERT_EQ(mask[(z * 160 + y) * 160 + x], inside ? 1 : 0);
      }
  ShapesOptions per_kind{.size = 2, .image_size = {8, 16, 16}, .classes = ShapeClasses::per_kind};
  EXPECT_EQ(Shapes(per_kind).num_classes(), 3);
}

TEST(Shapes, BadParameters) {
  auto bad = [](ShapesOptions o, std::vector<std::string> parts) {
    return throws_error([&] { Shapes s(o); }, parts);
  };
  EXPECT_TRUE(bad({.size = 0}, {"size", "got 0"}));
  EXPECT_TRUE(bad({.image_size = {64}}, {"image_size", "1 values"}));
  EXPECT_TRUE(bad({.image_size = {2, 64}}, {"side", "got 2"}));
  EXPECT_TRUE(bad({.image_size = {64, 5000}}, {"side", "got 5000"}));
  EXPECT_TRUE(bad({.image_size = {4096, 4096, 4096}}, {"over the limit"}));
  EXPECT_TRUE(bad({.channels = 0}, {"channels", "got 0"}));
  EXPECT_TRUE(bad({.max_shapes = 0}, {"max_shapes", "got 0"}));
  EXPECT_TRUE(bad({.noise = -0.1}, {"noise"}));
  EXPECT_TRUE(bad({.gradient = 2}, {"gradient"}));
  Shapes ds(plain_2d());
  EXPECT_TRUE(throws_error([&] { ds.get(50); }, {"index 50", "out of range"}));
  EXPECT_TRUE(throws_error([&] { ds.get(-1); }, {"index -1"}));
}

}  // namespace
}  // namespace rg::data
