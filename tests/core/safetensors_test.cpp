#include "core/safetensors.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

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

// The hook before the rename sees the new file complete under its temporary name while the
// old one is still in place; if it throws (a crash there, as a test injects it), the old file
// is untouched and the temporary gone.
TEST(Safetensors, BeforeRenameSeesTheCompleteTemporaryAndTheOldFile) {
  const std::string dir = rg::testing::temp_path("before_rename");
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/ckpt.safetensors";
  save_safetensors(path, {{"a", ones({2})}});
  int calls = 0;
  save_safetensors(path, {{"a", zeros({3})}}, {{"epoch", "2"}}, [&](const std::string& tmp) {
    ++calls;
    EXPECT_EQ(std::filesystem::path(tmp).parent_path(), std::filesystem::path(dir));
    EXPECT_TRUE(
        std::filesystem::path(tmp).filename().string().starts_with(".ckpt.safetensors.tmp."))
        << tmp;
    const SafetensorsFile next = load_safetensors(tmp);  // complete
    EXPECT_EQ(next.tensors.at("a").numel(), 3);
    EXPECT_EQ(next.metadata.at("epoch"), "2");
    EXPECT_EQ(load_safetensors(path).tensors.at("a").numel(), 2);  // the old file, whole
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(load_safetensors(path).tensors.at("a").numel(), 3);

  EXPECT_TRUE(throws_error(
      [&] {
        save_safetensors(path, {{"a", zeros({4})}}, {},
                         [](const std::string&) { fail("a crash before the rename"); });
      },
      {"a crash before the rename"}));
  EXPECT_EQ(load_safetensors(path).tensors.at("a").numel(), 3);
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);  // no temporary left
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

// Shape [2^62] of F32 needs 2^64 bytes, which wraps to 0 and would match data_offsets [0, 0].
TEST(Safetensors, RejectsByteCountsThatWrap) {
  const std::string data(16, '\0');
  EXPECT_TRUE(throws_error(
      [&] {
        parse_safetensors(
            with_header(
                R"({"a": {"dtype": "F32", "shape": [4611686018427387904], "data_offsets": [0, 0]}})",
                data),
            "t");
      },
      {"'a'", "overflows a 64-bit byte count"}));
  EXPECT_TRUE(throws_error(
      [&] {
        parse_safetensors(
            with_header(
                R"({"a": {"dtype": "F64", "shape": [2305843009213693952, 2], "data_offsets": [0, 0]}})",
                data),
            "t");
      },
      {"'a'", "overflows"}));
}

// Nesting 300,000 lists deep used to overflow the stack while the error message dumped the
// value; a safetensors header is flat, so depth is refused while parsing.
TEST(Safetensors, RejectsDeeplyNestedHeaders) {
  const int depth = 300000;
  const std::string deep = std::string(depth, '[') + std::string(depth, ']');
  const std::string data(16, '\0');
  for (const std::string& json :
       {R"({"a": {"dtype": )" + deep + R"(, "shape": [2], "data_offsets": [0, 8]}})",
        R"({"a": {"dtype": "F32", "shape": )" + deep + R"(, "data_offsets": [0, 8]}})",
        R"({"__metadata__": {"k": )" + deep + "}}", deep}) {
    EXPECT_TRUE(
        throws_error([&] { parse_safetensors(with_header(json, data), "t"); }, {"nests", "flat"}))
        << json.substr(0, 40);
  }
  // A shape list is as deep as a valid header goes.
  EXPECT_EQ(parse_safetensors(
                with_header(R"({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}})",
                            std::string(2, '\0')),
                "t")
                .tensors.at("a")
                .numel(),
            2);
}

// Names and values from the file are cut short in messages: a megabyte name or dtype must not
// become a megabyte message.
TEST(Safetensors, MessagesClipLongValues) {
  const std::string long_name(1 << 20, 'n');
  const std::string data(16, '\0');
  for (const std::string& json :
       {R"({")" + long_name + R"(": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})",
        R"({"a": {"dtype": ")" + long_name + R"(", "shape": [2], "data_offsets": [0, 8]}})",
        R"({"a": {"dtype": "F32", "shape": [)" + std::string(1 << 20, '1') +
            R"(], "data_offsets": [0, 8]}})"}) {
    try {
      parse_safetensors(with_header(json, data), "t");
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_LT(std::string(e.what()).size(), 400u) << std::string(e.what()).substr(0, 200);
      EXPECT_NE(std::string(e.what()).find("bytes)"), std::string::npos)
          << std::string(e.what()).substr(0, 200);
    }
  }
}

// A clipped name is cut between characters, never inside a UTF-8 sequence: errors travel
// between ranks as JSON, which refuses broken UTF-8.
TEST(Safetensors, ClippedNamesStayValidUtf8) {
  std::string name = "x";  // so that byte 80, where the clip falls, is inside an é
  for (int i = 0; i < 100; ++i) name += "\xc3\xa9";  // é, 2 bytes
  const std::string json =
      R"({")" + name + R"(": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})";
  try {
    parse_safetensors(with_header(json, std::string(16, '\0')), "t");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NO_THROW(nlohmann::json(std::string(e.what())).dump()) << e.what();
    EXPECT_NE(std::string(e.what()).find("(201 bytes)"), std::string::npos) << e.what();
  }
}

// mkstemp made checkpoints 0600 while every other output was 0644: the temporary is now
// created with 0666 and the umask decides.
TEST(Safetensors, SavedFilesGetTheUmasksPermissions) {
  const std::string path = rg::testing::temp_path("mode.safetensors");
  for (mode_t mask : {mode_t{022}, mode_t{027}}) {
    const mode_t old = ::umask(mask);
    save_safetensors(path, {{"a", ones({2})}});
    ::umask(old);
    const auto perms = std::filesystem::status(path).permissions();
    EXPECT_EQ(static_cast<mode_t>(perms) & 0777, 0666 & ~mask) << std::oct << mask;
  }
}

TEST(Safetensors, RemovesStaleTemporariesOfOneFileOnly) {
  const std::string dir = rg::testing::temp_path("stale");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const char* name : {".last.safetensors.tmp.Ab12Cd", ".last.safetensors.tmp.123.4",
                           ".best.safetensors.tmp.123.5", "last.safetensors"})
    std::ofstream(dir + "/" + name) << "x";
  EXPECT_EQ(remove_stale_temporaries(dir + "/last.safetensors"), 2);
  EXPECT_TRUE(std::filesystem::exists(dir + "/last.safetensors"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/.best.safetensors.tmp.123.5"));
  EXPECT_EQ(remove_stale_temporaries(dir + "/last.safetensors"), 0);
}

// /dev/zero would be read without end.
TEST(Safetensors, ReadsOnlyRegularFiles) {
  EXPECT_TRUE(
      throws_error([] { load_safetensors("/dev/zero"); }, {"/dev/zero", "not a regular file"}));
}

TEST(Safetensors, MissingFileNamesThePath) {
  EXPECT_TRUE(throws_error([] { load_safetensors("/no/such/file.safetensors"); },
                           {"/no/such/file.safetensors"}));
}

}  // namespace
}  // namespace rg
