#include <gtest/gtest.h>

#include "data/mask_decode.h"
#include "data/npy.h"
#include "tests/data/image_writers.h"
#include "tests/support/fixtures.h"

// The .npy fixtures in tests/data/npy are written by NumPy (tools/make_segmentation_fixtures.py):
// a (2, 3, 4) array of i - 8 in each dtype (i * 10 for u1, i % 3 == 0 for b1).
namespace rg::data {
namespace {
using rg::testing::throws_error;

std::string fixture(const std::string& name) {
  return std::string(RG_SOURCE_DIR) + "/tests/data/npy/" + name;
}

// A .npy file of format `major`.0 with this header dict and data.
std::string npy(const std::string& dict, const std::string& data = "", int major = 1) {
  std::string header = dict + "\n";
  std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
  const uint32_t n = static_cast<uint32_t>(header.size());
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i) out += static_cast<char>(n >> (8 * i));
  return out + header + data;
}

const char* kF4Dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";

TEST(Npy, ReadsEveryDtypeAsNumpyWroteIt) {
  struct Case {
    const char* file;
    DType dtype;
  } cases[] = {{"i1.npy", DType::i64}, {"i2.npy", DType::i64},    {"i4.npy", DType::i64},
               {"i8.npy", DType::i64}, {"f2.npy", DType::f16},    {"f4.npy", DType::f32},
               {"f8.npy", DType::f64}, {"f4_v2.npy", DType::f32}, {"f4_v3.npy", DType::f32}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    const Tensor t = read_npy(fixture(c.file));
    EXPECT_EQ(t.dtype(), c.dtype);
    EXPECT_EQ(t.shape(), (Shape{2, 3, 4}));
    const auto v = t.to(DType::f64).to_vector<double>();
    for (int i = 0; i < 24; ++i) EXPECT_EQ(v[i], i - 8);
  }
  const auto u1 = read_npy(fixture("u1.npy"));
  EXPECT_EQ(u1.dtype(), DType::u8);
  EXPECT_EQ(u1.to_vector<int64_t>()[23], 230);
  const auto b1 = read_npy(fixture("b1.npy")).to_vector<int64_t>();
  for (int i = 0; i < 24; ++i) EXPECT_EQ(b1[i], i % 3 == 0);
}

TEST(Npy, ScalarsAndEmptyArrays) {
  const Tensor s = read_npy(fixture("scalar.npy"));
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.to_vector<double>()[0], 3.5);
  EXPECT_EQ(read_npy(fixture("empty.npy")).shape(), (Shape{0, 3}));
}

TEST(Npy, RefusesWhatItDoesNotRead) {
  EXPECT_TRUE(throws_error([] { read_npy(fixture("fortran.npy")); }, {"fortran.npy", "Fortran"}));
  EXPECT_TRUE(throws_error([] { read_npy(fixture("big_endian.npy")); }, {"big-endian", "'>f4'"}));
  EXPECT_TRUE(throws_error([] { read_npy(fixture("u2.npy")); }, {"'<u2'", "not supported"}));
  EXPECT_TRUE(
      throws_error([] { read_npy(fixture("missing.npy")); }, {"missing.npy", "cannot open"}));
  EXPECT_TRUE(throws_error(
      [] {
        read_npy_bytes(npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': ()}"), "s");
      },
      {"structured"}));
  EXPECT_TRUE(throws_error(
      [] { read_npy_bytes(npy("{'descr': '|f4', 'fortran_order': False, 'shape': ()}"), "o"); },
      {"byte order"}));
}

TEST(Npy, HandWrittenHeaderVariants) {
  // Double quotes, no trailing comma, no spaces, Python 2's long: numpy's parser takes them.
  std::string data(8, '\0');
  const Tensor t = read_npy_bytes(
      npy("{\"shape\":(2L,),\"fortran_order\":False,\"descr\":\"<f4\"}", data), "variant");
  EXPECT_EQ(t.shape(), Shape{2});
  EXPECT_EQ(read_npy_bytes(npy(kF4Dict, data, 2), "v2").shape(), Shape{2});
  EXPECT_EQ(read_npy_bytes(npy(kF4Dict, data, 3), "v3").shape(), Shape{2});
}

TEST(Npy, BadHeadersAreNamedErrors) {
  const std::string data(8, '\0');
  const std::string good = npy(kF4Dict, data);
  auto bad = [](const std::string& bytes, std::vector<std::string> parts) {
    parts.insert(parts.begin(), "'bad.npy'");
    return throws_error([&] { read_npy_bytes(bytes, "bad.npy"); }, parts);
  };
  EXPECT_TRUE(bad("", {"not a .npy file"}));
  EXPECT_TRUE(bad("\x93NUMPX" + good.substr(6), {"not a .npy file"}));
  EXPECT_TRUE(bad(good.substr(0, 9), {"not a .npy file"}));
  EXPECT_TRUE(bad(good.substr(0, 20), {"ends inside its header"}));
  std::string v4 = good;
  v4[6] = 4;
  EXPECT_TRUE(bad(v4, {"version 4.0"}));
  std::string huge = npy(kF4Dict, data, 2);
  huge[10] = 0x7f;  // header length 0x7f00xx: far over the limit
  EXPECT_TRUE(bad(huge, {"header of", "over the limit"}));
  EXPECT_TRUE(bad(npy("{'descr': '<f4', 'shape': (2,)}", data), {"must hold"}));
  EXPECT_TRUE(bad(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", data),
                  {"unknown key"}));
  EXPECT_TRUE(
      bad(npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", data),
          {"twice"}));
  EXPECT_TRUE(
      bad(npy("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}", data), {"True or False"}));
  EXPECT_TRUE(
      bad(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", data), {"non-negative"}));
  EXPECT_TRUE(
      bad(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,", data), {"bad header"}));
  EXPECT_TRUE(bad(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk", data),
                  {"after the dict"}));
  EXPECT_TRUE(
      bad(npy("{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", data), {"bad header"}));
  EXPECT_TRUE(bad(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}"),
                  {"64 bits"}));
  EXPECT_TRUE(
      bad(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}"),
          {"more elements than 64 bits"}));
  EXPECT_TRUE(bad(npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2305843009213693952,)}"),
                  {"more bytes than 64 bits"}));
  // A zero dimension empties the array, but the others must still be countable.
  EXPECT_TRUE(
      bad(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4294967296, 4294967296)}"),
          {"64 bits"}));
  EXPECT_TRUE(
      bad(npy(kF4Dict, data.substr(0, 7)), {"shorter than its shape", "7 bytes", "needs 8"}));
  EXPECT_TRUE(bad(npy(kF4Dict, data + "x"), {"1 bytes follow"}));
  std::string deep = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < 40; ++i) deep += "1,";
  EXPECT_TRUE(bad(npy(deep + ")}", std::string(4, '\0')), {"more than 32 dimensions"}));
}

TEST(MaskPng, ValuesArriveExactlyAsStored) {
  const Tensor m = decode_mask_png(fixture("mask_3x2.png"));
  EXPECT_EQ(m.shape(), (Shape{2, 3}));
  EXPECT_EQ(m.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  // 2-bit grey: values one to a byte, not scaled up to 0..255.
  EXPECT_EQ(decode_mask_png(fixture("mask_2bit_4x1.png")).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 1, 2, 3}));
  // libpng's writer: an 8-bit grey image of 10 * 0 + x + 3 * y.
  const Tensor g = decode_mask_png_bytes(testing::png_bytes(4, 2, 1), "grey");
  EXPECT_EQ(g.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 3, 4, 5, 6}));
}

TEST(MaskPng, RefusesColourTruncatedAndOtherFiles) {
  EXPECT_TRUE(throws_error([] { decode_mask_png_bytes(testing::png_bytes(3, 2, 3), "rgb.png"); },
                           {"'rgb.png'", "8-bit RGB", "greyscale"}));
  EXPECT_TRUE(throws_error([] { decode_mask_png_bytes(testing::png_bytes(3, 2, 4), "rgba.png"); },
                           {"RGBA"}));
  const std::string grey = testing::png_bytes(8, 8, 1);
  EXPECT_TRUE(
      throws_error([&] { decode_mask_png_bytes(grey.substr(0, grey.size() - 20), "cut.png"); },
                   {"'cut.png'", "cannot be decoded"}));
  EXPECT_TRUE(
      throws_error([] { decode_mask_png_bytes(testing::jpeg_bytes(4, 4, 1, 2, 3), "m.jpg"); },
                   {"'m.jpg'", "not a PNG"}));
}

}  // namespace
}  // namespace rg::data
