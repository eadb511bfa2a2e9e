#pragma once
// Reading files that come from strangers' data sets: only regular files, and only up to a
// size fixed in advance, so that a path such as /dev/zero, a FIFO or a 50 GB file named like an
// image ends in a named error instead of an endless read or an exhausted memory.

#include <cstdint>
#include <string>

namespace rg::data {

// The whole of the regular file `path`, at most `max_bytes` long. `what` names the file's role
// in messages ("image", "CSV list", "CIFAR-10 batch").
std::string read_bounded_file(const std::string& path, int64_t max_bytes, const std::string& what);

// `text` cut to at most `max_chars` bytes (at a UTF-8 character boundary) with a note of the
// full length, for messages that quote a file's contents.
std::string clip_for_message(const std::string& text, std::size_t max_chars = 80);

}  // namespace rg::data
