#include "parallel/trace_file.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/trace.h"

namespace rg::parallel {

void check_trace_path(const std::string& path) {
  trace::check_path(path);
}

void start_trace(ProcessGroup& group) {
  group.barrier()->wait();
  trace::start();
}

int64_t write_trace(const std::string& path, ProcessGroup& group) {
  trace::stop();
  return write_trace(path, group, trace::take());
}

std::vector<std::string> gather_text(ProcessGroup& group, const std::string& mine) {
  // Two allgathers: every rank's length, then the bytes padded to the longest.
  Tensor lengths = empty({group.size()}, {.dtype = DType::i64});
  group.allgather(lengths, full({1}, static_cast<double>(mine.size()), {.dtype = DType::i64}))
      ->wait();
  const std::vector<int64_t> sizes = lengths.to_vector<int64_t>();
  const int64_t longest = *std::max_element(sizes.begin(), sizes.end());
  if (longest == 0)  // every rank agrees: nothing to send
    return std::vector<std::string>(group.rank() == 0 ? static_cast<std::size_t>(group.size()) : 0);
  Tensor padded = zeros({longest}, {.dtype = DType::u8});
  if (!mine.empty()) std::memcpy(padded.data_ptr(), mine.data(), mine.size());
  Tensor all = empty({longest * group.size()}, {.dtype = DType::u8});
  group.allgather(all, padded)->wait();
  std::vector<std::string> texts;
  if (group.rank() != 0) return texts;
  const char* bytes = static_cast<const char*>(all.data_ptr());
  for (int r = 0; r < group.size(); ++r)
    texts.emplace_back(bytes + r * longest,
                       static_cast<std::size_t>(sizes[static_cast<std::size_t>(r)]));
  return texts;
}

int64_t write_trace(const std::string& path, ProcessGroup& group, const trace::Recorded& recorded) {
  const int rank = group.rank();
  const std::vector<std::string> processes =
      gather_text(group, trace::to_json_objects(recorded, rank, "rank " + std::to_string(rank)));
  if (rank != 0) return 0;
  trace::write_file(path, trace::json_file(processes));
  return static_cast<int64_t>(recorded.events.size());
}

void print_in_rank_order(ProcessGroup& group, const std::string& text, std::FILE* out) {
  for (const std::string& t : gather_text(group, text)) std::fwrite(t.data(), 1, t.size(), out);
  std::fflush(out);
}

void print_explained(ProcessGroup& group, std::FILE* out) {
  std::string mine;
  for (const std::string& line : trace::take_explained())
    mine += "[rank " + std::to_string(group.rank()) + "] " + line + "\n";
  print_in_rank_order(group, mine, out);
}

}  // namespace rg::parallel
