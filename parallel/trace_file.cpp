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

int64_t write_trace(const std::string& path, ProcessGroup& group, const trace::Recorded& recorded) {
  const int rank = group.rank();
  const std::string mine = trace::to_json_objects(recorded, rank, "rank " + std::to_string(rank));
  // Two allgathers: every rank's length, then the bytes padded to the longest.
  Tensor lengths = empty({group.size()}, {.dtype = DType::i64});
  group.allgather(lengths, full({1}, static_cast<double>(mine.size()), {.dtype = DType::i64}))
      ->wait();
  const std::vector<int64_t> sizes = lengths.to_vector<int64_t>();
  const int64_t longest = *std::max_element(sizes.begin(), sizes.end());
  Tensor padded = zeros({longest}, {.dtype = DType::u8});
  std::memcpy(padded.data_ptr(), mine.data(), mine.size());
  Tensor all = empty({longest * group.size()}, {.dtype = DType::u8});
  group.allgather(all, padded)->wait();
  if (rank != 0) return 0;
  std::vector<std::string> processes;
  const char* bytes = static_cast<const char*>(all.data_ptr());
  for (int r = 0; r < group.size(); ++r)
    processes.emplace_back(bytes + r * longest,
                           static_cast<std::size_t>(sizes[static_cast<std::size_t>(r)]));
  const std::string text = trace::json_file(processes);

  trace::write_file(path, text);
  return static_cast<int64_t>(recorded.events.size());
}

}  // namespace rg::parallel
