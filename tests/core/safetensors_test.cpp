#include "core/safetensors.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/support/fixtures.h"

namespace rg {
namespace {
using testing::throws_error;

std::string with_header(const std::string& json, const std::string& data) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((json.size() >> (8 * i)) & 0xFF);
  return bytes + json + data;
}

TEST(Safetensors, RoundTripAllDtypesAndMetadata) {
  std::map<std::string, Tensor> tensors = {
      {"w", arange(0, 6).reshape({2, 3}).transpose(0, 1)},  // non-contiguous: written contiguous
      {"d", full({2}, 1.5, {DType::f64})},
      {"h", full({3}, -2, {DType::f16})},
      {"b", full({1}, 3, {DType::bf16})},
      {"i", arange(0, 4, 1, {DType::i64})},
      {"u", full({2, 2}, 7, {DType::u8})},
      {"empty", zeros({0, 3})}};
  const std::string path = rg::testing::temp_path("roundtrip.safetensors");
  save_safetensors(path, tensors, {{"epoch", "3"}, {"note", "{\"json\": true}"}});
  SafetensorsFile f = load_safetensors(path);
  ASSERT_EQ(f.tensors.size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    EXPECT_EQ(f.tensors[name].dtype(), t.dtype()) << name;
    EXPECT_TRUE(testing::all_close(f.tensors[name], t, 0, 0)) << name;
  }
  EXPECT_EQ(f.metadata["epoch"], "3");
  EXPECT_EQ(f.metadata["note"], "{\"json\": true}");
  // The header is padded so the data starts 8-byte aligned.
  std::ifstream in(path, std::ios::binary);
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  EXPECT_EQ(n % 8, 0u);
}

TEST(Safetensors, SaveReplacesAtomicallyAndLeavesNoTemporaries) {
  const std::string dir = rg::testing::temp_path("atomic");
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/ckpt.safetensors";
  save_safetensors(path, {{"a", ones({2})}});
  save_safetensors(path, {{"a", zeros({3})}});
  EXPECT_EQ(load_safetensors(path).tensors["a"].numel(), 3);
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
  EXPECT_TRUE(throws_error([] { save_safetensors("/nonexistent-dir/x.safetensors", {}); },
                           {"/nonexistent-dir"}));
}

TEST(Safetensors, RejectsTruncatedFiles) {
  EXPECT_TRUE(throws_error([] { parse_safetensors("abc", "t"); }, {"truncated", "3 bytes"}));
  const std::string good = serialize_safetensors({{"a", ones({4})}}, {});
  EXPECT_TRUE(
      throws_error([&] { parse_safetensors(good.substr(0, 20), "t"); }, {"truncated", "header"}));
  EXPECT_TRUE(throws_error([&] { parse_safetensors(good.substr(0, good.size() - 1), "t"); },
                           {"'a'", "out of range"}));
}

TEST(Safetensors, RejectsOversizedHeader) {
  std::string bytes(16, '\0');
  const uint64_t huge = kMaxSafetensorsHeader + 1;
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((huge >> (8 * i)) & 0xFF);
  EXPECT_TRUE(throws_error([&] { parse_safetensors(bytes, "t"); }, {"exceeds the limit"}));
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(0xFF);
  EXPECT_TRUE(throws_error([&] { parse_safetensors(bytes, "t"); }, {"header length"}));
}

TEST(Safetensors, RejectsCorruptHeaders) {
  const std::string data(16, '\0');
  auto rejects = [&](const std::string& json, std::vector<std::string> parts) {
    EXPECT_TRUE(throws_error([&] { parse_safetensors(with_header(json, data), "t"); }, parts))
        << json;
  };
  rejects("{not json", {"not valid JSON"});
  rejects("[1, 2]", {"JSON object"});
  rejects(R"({"a": {"dtype": "F32", "shape": [2]}})", {"'a'", "data_offsets"});
  rejects(R"({"a": {"dtype": "C64", "shape": [2], "data_offsets": [0, 8]}})",
          {"unsupported dtype", "C64"});
  rejects(R"({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", {"non-negative"});
  rejects(R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})",
          {"'a'", "8 bytes", "needs 12"});
  rejects(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})", {"out of range"});
  rejects(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [12, 20]}})",
          {"out of range", "16 bytes"});
  rejects(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
              "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
          {"overlap", "'a'", "'b'"});
  rejects(R"({"__metadata__": {"k": 1}})", {"__metadata__", "string"});
  rejects(
      R"({"a": {"dtype": "F32", "shape": [4294967296, 4294967296, 4294967296], "data_offsets": [0, 8]}})",
      {"overflows"});
}

TEST(Safetensors, MissingFileNamesThePath) {
  EXPECT_TRUE(throws_error([] { load_safetensors("/no/such/file.safetensors"); },
                           {"/no/such/file.safetensors"}));
}

}  // namespace
}  // namespace rg
