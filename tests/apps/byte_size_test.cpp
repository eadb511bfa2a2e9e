// Byte sizes on the command line (apps/common/byte_size.h): units, exact defaults in --help,
// and an error naming the flag for anything else.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "apps/common/byte_size.h"
#include "tests/support/fixtures.h"

namespace rg::apps {
namespace {
using rg::testing::throws_error;

TEST(ByteSize, NumbersWithUnitsArePowersOf1024) {
  EXPECT_EQ(parse_byte_size("4096", "--n"), 4096);
  EXPECT_EQ(parse_byte_size("0", "--n"), 0);
  for (const char* four_k : {"4KiB", "4KB", "4kb", "4k", "4 KiB", "4K"})
    EXPECT_EQ(parse_byte_size(four_k, "--n"), 4096) << four_k;
  EXPECT_EQ(parse_byte_size("64MB", "--n"), int64_t{64} << 20);
  EXPECT_EQ(parse_byte_size("64MiB", "--n"), int64_t{64} << 20);
  EXPECT_EQ(parse_byte_size("1.5MiB", "--n"), int64_t{3} << 19);
  EXPECT_EQ(parse_byte_size("2GB", "--n"), int64_t{2} << 30);
  EXPECT_EQ(parse_byte_size("1g", "--n"), int64_t{1} << 30);
  EXPECT_EQ(parse_byte_size("512B", "--n"), 512);
}

TEST(ByteSize, AnythingElseIsAnErrorNamingTheFlagAndTheText) {
  EXPECT_TRUE(throws_error([] { parse_byte_size("64XB", "--max-bytes"); },
                           {"--max-bytes", "\"64XB\"", "unknown unit", "KiB", "e.g. 64MB"}));
  EXPECT_TRUE(throws_error([] { parse_byte_size("", "--max-bytes"); }, {"--max-bytes", "empty"}));
  EXPECT_TRUE(throws_error([] { parse_byte_size("-1", "--n"); }, {"--n", "no number"}));
  EXPECT_TRUE(throws_error([] { parse_byte_size("MB", "--n"); }, {"no number"}));
  EXPECT_TRUE(throws_error([] { parse_byte_size("1.2.3", "--n"); }, {"not a number"}));
  EXPECT_TRUE(throws_error([] { parse_byte_size("1.5B", "--n"); }, {"not a whole number"}));
  EXPECT_TRUE(throws_error([] { parse_byte_size("1e6", "--n"); }, {"unknown unit \"e6\""}));
  EXPECT_TRUE(throws_error([] { parse_byte_size("8000000000GiB", "--n"); }, {"2^62"}));
}

TEST(ByteSize, TextIsExactAndReadsBack) {
  EXPECT_EQ(byte_size_text(int64_t{256} << 20), "256MiB");
  EXPECT_EQ(byte_size_text(4096), "4KiB");
  EXPECT_EQ(byte_size_text(1536), "1.5KiB");
  EXPECT_EQ(byte_size_text(1000), "1000B");
  EXPECT_EQ(byte_size_text(0), "0B");
  EXPECT_EQ(byte_size_text(int64_t{3} << 30), "3GiB");
  for (int64_t bytes : {int64_t{0}, int64_t{1}, int64_t{1000}, int64_t{1536}, int64_t{1} << 20,
                        (int64_t{1} << 20) + 1, int64_t{5} << 30})
    EXPECT_EQ(parse_byte_size(byte_size_text(bytes), "--n"), bytes) << bytes;
}

// The flag as an app declares it: units in, the default with its unit in --help, CLI11's error
// (naming the flag) for a bad value.
TEST(ByteSize, AFlagTakesUnitsAndShowsItsDefault) {
  auto parse = [](std::vector<std::string> args, int64_t& bytes) {
    CLI::App app{"test"};
    add_byte_size_option(app, "--max-bytes", bytes, "largest message");
    args.insert(args.begin(), "test");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    app.parse(static_cast<int>(argv.size()), argv.data());
    return app.help();
  };
  int64_t bytes = int64_t{256} << 20;
  const std::string help = parse({}, bytes);
  EXPECT_NE(help.find("256MiB"), std::string::npos) << help;
  EXPECT_EQ(bytes, int64_t{256} << 20);
  parse({"--max-bytes", "64MB"}, bytes);
  EXPECT_EQ(bytes, int64_t{64} << 20);
  parse({"--max-bytes=1KiB"}, bytes);
  EXPECT_EQ(bytes, 1024);
  try {
    parse({"--max-bytes", "64XB"}, bytes);
    ADD_FAILURE() << "64XB was accepted";
  } catch (const CLI::ValidationError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--max-bytes"), std::string::npos) << what;
    EXPECT_NE(what.find("unknown unit"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace rg::apps
