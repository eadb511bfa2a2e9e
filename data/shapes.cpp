#include "data/shapes.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/philox.h"

namespace rg::data {
namespace {

// Philox streams of one sample: the counter's low word is the sample index, the high word a
// stream tag and a position in it; the key is the seed. The tags sit in the top bits, far from
// the loader's SampleRng (high word epoch << 20 | draw), so a data set and a loader given the
// same seed still draw independent numbers.
constexpr uint64_t kLayoutStream = uint64_t{1} << 63;
constexpr uint64_t kBackgroundStream = uint64_t{1} << 62;
constexpr uint64_t kNoiseStream = uint64_t{1} << 61;

class Draws {
 public:
  Draws(uint64_t seed, uint64_t index, uint64_t stream)
      : seed_(seed), index_(index), stream_(stream) {}
  double uniform() {  // [0, 1), 53 bits
    const Philox4 r = philox4x32_10(index_, stream_ | next_++, seed_);
    return static_cast<double>((static_cast<uint64_t>(r.v[0]) << 32 | r.v[1]) >> 11) * 0x1.0p-53;
  }
  double between(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  int64_t below(int64_t n) {
    return std::min<int64_t>(n - 1, static_cast<int64_t>(uniform() * static_cast<double>(n)));
  }

 private:
  uint64_t seed_, index_, stream_, next_ = 0;
};

// Two standard normals (Box-Muller) for noise values 2k and 2k + 1 of a sample.
std::array<double, 2> noise_pair(uint64_t seed, uint64_t index, uint64_t k) {
  const Philox4 r = philox4x32_10(index, kNoiseStream | k, seed);
  const uint64_t a = (static_cast<uint64_t>(r.v[0]) << 32 | r.v[1]) >> 11;
  const uint64_t b = (static_cast<uint64_t>(r.v[2]) << 32 | r.v[3]) >> 11;
  const double u1 = (static_cast<double>(a) + 1.0) * 0x1.0p-53;  // (0, 1]: log stays finite
  const double u2 = static_cast<double>(b) * 0x1.0p-53;
  const double rad = std::sqrt(-2.0 * std::log(u1)), angle = 2.0 * std::numbers::pi * u2;
  return {rad * std::cos(angle), rad * std::sin(angle)};
}

// (b - a) x (p - a): positive when p is left of the edge a -> b.
double cross(const std::array<double, 2>& a, const std::array<double, 2>& b, double y, double x) {
  return (b[1] - a[1]) * (y - a[0]) - (b[0] - a[0]) * (x - a[1]);
}

uint8_t to_u8(double v) {
  return static_cast<uint8_t>(std::lround(std::clamp(v, 0.0, 1.0) * 255.0));
}

}  // namespace

Shapes::Shapes(ShapesOptions options) : options_(std::move(options)) {
  const auto& s = options_.image_size;
  RG_CHECK(options_.size >= 1 && options_.size <= (int64_t{1} << 60),
           "Shapes: size must be in [1, 2^60], got ", options_.size);
  RG_CHECK(s.size() == 2 || s.size() == 3, "Shapes: image_size must be {H, W} or {D, H, W}, got ",
           s.size(), " values");
  int64_t voxels = 1;
  for (int64_t v : s) {
    RG_CHECK(v >= 4 && v <= kMaxShapesSide, "Shapes: every side of image_size must be in [4, ",
             kMaxShapesSide, "], got ", v);
    voxels *= v;  // at most 4096^3 = 2^36: no overflow
  }
  RG_CHECK(voxels <= kMaxShapesVoxels, "Shapes: image_size of ", voxels,
           " pixels is over the limit of ", kMaxShapesVoxels);
  RG_CHECK(options_.channels >= 1 && options_.channels <= kMaxShapesChannels,
           "Shapes: channels must be in [1, ", kMaxShapesChannels, "], got ", options_.channels);
  RG_CHECK(options_.max_shapes >= 1 && options_.max_shapes <= kMaxShapesPerSample,
           "Shapes: max_shapes must be in [1, ", kMaxShapesPerSample, "], got ",
           options_.max_shapes);
  RG_CHECK(options_.noise >= 0 && options_.noise <= 1, "Shapes: noise must be in [0, 1], got ",
           options_.noise);
  RG_CHECK(options_.gradient >= 0 && options_.gradient <= 1,
           "Shapes: gradient must be in [0, 1], got ", options_.gradient);
}

int64_t Shapes::num_classes() const {
  if (options_.classes == ShapeClasses::binary) return 2;
  return volume() ? 3 : 4;
}

std::vector<std::string> Shapes::class_names() const {
  if (options_.classes == ShapeClasses::binary) return {"background", "shape"};
  if (volume()) return {"background", "sphere", "box"};
  return {"background", "disc", "box", "triangle"};
}

std::string Shapes::describe() const {
  std::string size;
  for (std::size_t i = 0; i < options_.image_size.size(); ++i)
    size += (i ? "x" : "") + std::to_string(options_.image_size[i]);
  return std::string("shapes ") + (volume() ? "3-D " : "2-D ") + size + ", " +
         std::to_string(options_.channels) + " channel(s), " +
         (options_.classes == ShapeClasses::binary ? "binary" : "one class per kind") + ", seed " +
         std::to_string(options_.seed) + ", " + std::to_string(options_.size) + " samples";
}

std::vector<DrawnShape> Shapes::layout(int64_t index) const {
  check_index(index);
  Draws draw(options_.seed, static_cast<uint64_t>(index), kLayoutStream);
  const bool vol = volume();
  const int64_t count = 1 + draw.below(options_.max_shapes);
  std::vector<DrawnShape> shapes;
  for (int64_t n = 0; n < count; ++n) {
    DrawnShape s{};
    const int64_t kind = draw.below(vol ? 2 : 3);
    s.kind = vol ? (kind == 0 ? ShapeKind::sphere : ShapeKind::box)
                 : (kind == 0   ? ShapeKind::disc
                    : kind == 1 ? ShapeKind::box
                                : ShapeKind::triangle);
    s.label = options_.classes == ShapeClasses::binary ? 1 : static_cast<uint8_t>(kind + 1);
    // Centres away from the border, so most of every shape is in view.
    for (int a = vol ? 0 : 1; a < 3; ++a) s.center[a] = draw.between(0.2, 0.8);
    switch (s.kind) {
      case ShapeKind::disc:
      case ShapeKind::sphere: {
        const double r = draw.between(0.08, 0.22);  // the same in every axis: round
        s.extent = {vol ? r : 0.0, r, r};
        break;
      }
      case ShapeKind::box:
        for (int a = vol ? 0 : 1; a < 3; ++a) s.extent[a] = draw.between(0.06, 0.2);
        break;
      case ShapeKind::triangle: {
        // Corners around the centre at roughly equal angles: never a sliver.
        const double r = draw.between(0.12, 0.28), turn = draw.between(0, 2 * std::numbers::pi);
        for (int k = 0; k < 3; ++k) {
          const double angle = turn + 2 * std::numbers::pi * k / 3 + draw.between(-0.4, 0.4);
          s.vertices[k] = {s.center[1] + r * std::sin(angle), s.center[2] + r * std::cos(angle)};
        }
        s.extent = {0.0, r, r};  // a bound, for the bounding-box test
        break;
      }
    }
    // Brighter than any background (at most 0.3 + gradient), so shapes stand out through the
    // noise; their own contrast varies.
    for (int64_t c = 0; c < options_.channels; ++c) s.intensity.push_back(draw.between(0.6, 0.95));
    shapes.push_back(std::move(s));
  }
  return shapes;
}

bool Shapes::contains(const DrawnShape& s, double z, double y, double x) {
  const double dz = z - s.center[0], dy = y - s.center[1], dx = x - s.center[2];
  switch (s.kind) {
    case ShapeKind::disc:
      return dy * dy + dx * dx <= s.extent[1] * s.extent[1];
    case ShapeKind::sphere:
      return (dz * dz) / (s.extent[0] * s.extent[0]) + (dy * dy) / (s.extent[1] * s.extent[1]) +
                 (dx * dx) / (s.extent[2] * s.extent[2]) <=
             1.0;
    case ShapeKind::box:
      return std::abs(dz) <= s.extent[0] && std::abs(dy) <= s.extent[1] &&
             std::abs(dx) <= s.extent[2];
    case ShapeKind::triangle: {
      const auto& v = s.vertices;
      const double c0 = cross(v[0], v[1], y, x), c1 = cross(v[1], v[2], y, x),
                   c2 = cross(v[2], v[0], y, x);
      // Either winding: inside when the three agree in sign.
      return (c0 >= 0 && c1 >= 0 && c2 >= 0) || (c0 <= 0 && c1 <= 0 && c2 <= 0);
    }
  }
  return false;
}

SegmentationExample Shapes::get(int64_t index) const {
  const std::vector<DrawnShape> shapes = layout(index);
  const bool vol = volume();
  const auto& sz = options_.image_size;
  const int64_t D = vol ? sz[0] : 1, H = sz[sz.size() - 2], W = sz.back();
  const int64_t C = options_.channels, V = D * H * W;

  // Background: a base level per channel and a linear ramp along a random direction.
  Draws draw(options_.seed, static_cast<uint64_t>(index), kBackgroundStream);
  std::vector<double> base(static_cast<std::size_t>(C));
  for (auto& b : base) b = draw.between(0.05, 0.3);
  std::array<double, 3> dir{vol ? draw.between(-1, 1) : 0.0, draw.between(-1, 1),
                            draw.between(-1, 1)};
  const double norm = std::abs(dir[0]) + std::abs(dir[1]) + std::abs(dir[2]) + 1e-12;
  const double amplitude = options_.gradient * draw.uniform();

  std::vector<uint8_t> label(static_cast<std::size_t>(V), 0);
  std::vector<int> owner(static_cast<std::size_t>(V), -1);  // index of the shape shown, or -1
  for (int k = 0; k < static_cast<int>(shapes.size()); ++k) {
    const DrawnShape& s = shapes[static_cast<std::size_t>(k)];
    // Only the voxels of the shape's bounding box can be inside it.
    auto range = [&](int a, int64_t n) {
      const double lo = s.center[a] - s.extent[a], hi = s.center[a] + s.extent[a];
      return std::pair<int64_t, int64_t>{
          std::clamp<int64_t>(static_cast<int64_t>(std::floor(lo * n - 0.5)), 0, n),
          std::clamp<int64_t>(static_cast<int64_t>(std::ceil(hi * n - 0.5)) + 1, 0, n)};
    };
    const auto [z0, z1] = vol ? range(0, D) : std::pair<int64_t, int64_t>{0, 1};
    const auto [y0, y1] = range(1, H);
    const auto [x0, x1] = range(2, W);
    for (int64_t z = z0; z < z1; ++z)
      for (int64_t y = y0; y < y1; ++y)
        for (int64_t x = x0; x < x1; ++x) {
          const double nz = vol ? (z + 0.5) / D : 0.0, ny = (y + 0.5) / H, nx = (x + 0.5) / W;
          if (!contains(s, nz, ny, nx)) continue;
          const int64_t v = (z * H + y) * W + x;
          owner[v] = k;
          label[v] = s.label;
        }
  }

  Tensor image = empty(vol ? Shape{C, D, H, W} : Shape{C, H, W}, {DType::u8});
  Tensor mask = empty(vol ? Shape{D, H, W} : Shape{H, W}, {DType::u8});
  std::copy(label.begin(), label.end(), mask.data<uint8_t>());
  uint8_t* px = image.data<uint8_t>();
  const uint64_t idx = static_cast<uint64_t>(index);
  std::array<double, 2> noise{};  // values e and e + 1 (e even) of the sample's noise stream
  for (int64_t c = 0; c < C; ++c)
    for (int64_t v = 0; v < V; ++v) {
      const int64_t z = v / (H * W), y = v / W % H, x = v % W;
      double value;
      if (owner[v] >= 0) {
        value = shapes[static_cast<std::size_t>(owner[v])].intensity[c];
      } else {
        const double t = (dir[0] * ((z + 0.5) / D - 0.5) + dir[1] * ((y + 0.5) / H - 0.5) +
                          dir[2] * ((x + 0.5) / W - 0.5)) /
                             norm +
                         0.5;  // in [0, 1]
        value = base[c] + amplitude * t;
      }
      if (options_.noise > 0) {
        const int64_t e = c * V + v;  // elements are visited in order: one Philox call per pair
        if (e % 2 == 0) noise = noise_pair(options_.seed, idx, static_cast<uint64_t>(e / 2));
        value += options_.noise * noise[e % 2];
      }
      px[c * V + v] = to_u8(value);
    }
  return {image, mask};
}

}  // namespace rg::data
