#pragma once
// Byte sizes on the command line, one reader for every app's flags that take bytes:
// `bench_allreduce --max-bytes 64MB`, `--chunk-bytes 1MiB`, `--min-bytes 4096`.
//
// A size is a number (whole, or with a fraction that lands on a whole byte) and an optional
// unit: B, KB or KiB, MB or MiB, GB or GiB, in any case. KB, MB and GB mean 1024, 1024² and
// 1024³ bytes, as KiB, MiB and GiB do: the sizes these flags take are powers of two, the docs
// write them as "64 KB", and nccl-tests reads "64M" the same way.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <string_view>

namespace rg::apps {

// The bytes `text` says; an rg::Error naming `flag`, the text and the accepted forms otherwise.
int64_t parse_byte_size(std::string_view text, std::string_view flag);

// The shortest exact spelling with a unit: 268435456 -> "256MiB", 1536 -> "1.5KiB", 1000 ->
// "1000B" (what --help shows as the default, and parse_byte_size reads back).
std::string byte_size_text(int64_t bytes);

// A flag that takes a byte size into `bytes`; --help shows its default with a unit. A value
// that is not a size stops the parse with CLI11's error, which names the flag.
CLI::Option* add_byte_size_option(CLI::App& app, const std::string& name, int64_t& bytes,
                                  const std::string& help);

}  // namespace rg::apps
