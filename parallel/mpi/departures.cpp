#include "parallel/mpi/departures.h"

#include <dlfcn.h>
#include <execinfo.h>

#include <cstring>
#include <sstream>

#include "core/error.h"

namespace rg::parallel::mpi {

// Three lines: the kind's letter, the completed counts, then the text (which may hold newlines).
std::string encode(const Notice& notice) {
  std::ostringstream out;
  out << static_cast<char>(notice.kind) << "\n";
  for (std::size_t g = 0; g < notice.completed.size(); ++g)
    out << (g > 0 ? " " : "") << notice.completed[g];
  out << "\n" << notice.how;
  return out.str();
}

Notice decode(const std::string& text) {
  const std::size_t first = text.find('\n');
  const std::size_t second = first == std::string::npos ? first : text.find('\n', first + 1);
  RG_CHECK(second != std::string::npos && first == 1, "parallel: a departure notice of ",
           text.size(), " bytes is malformed");
  Notice n;
  const char kind = text[0];
  RG_CHECK(kind == 'L' || kind == 'E' || kind == 'F', "parallel: a departure notice of kind '",
           kind, "' is unknown");
  n.kind = static_cast<NoticeKind>(kind);
  std::istringstream counts(text.substr(first + 1, second - first - 1));
  for (int64_t c = 0; counts >> c;) n.completed.push_back(c);
  RG_CHECK(counts.eof(), "parallel: a departure notice's counts are malformed");
  n.how = text.substr(second + 1);
  return n;
}

namespace {
std::string in_group(int group) {
  return group == 0 ? "" : " of group " + std::to_string(group);
}
}  // namespace

std::string judge(const std::map<int, Notice>& received, const Waiting& waiting, int me) {
  using What = Waiting::What;
  for (const auto& [rank, n] : received) {
    const std::string who = "rank " + std::to_string(rank);
    const auto g = static_cast<std::size_t>(waiting.group);
    switch (waiting.what) {
      case What::other:
        return "";
      case What::collective: {
        if (n.kind == NoticeKind::failed) continue;  // it ends the job itself
        if (g < n.completed.size() && n.completed[g] >= waiting.seq) continue;  // it did its part
        std::ostringstream e;
        e << who << " left the job (" << n.how << ") ";
        if (g < n.completed.size())
          e << "after " << n.completed[g] << " collective" << (n.completed[g] == 1 ? "" : "s")
            << in_group(waiting.group);
        else
          e << "before it created group " << waiting.group;
        e << "; rank " << me << " waits in " << waiting.kind << " #" << waiting.seq;
        return e.str();
      }
      case What::group_creation:
        if (n.kind == NoticeKind::failed || g < n.completed.size()) continue;
        return who + " left the job (" + n.how + ") having created " +
               std::to_string(n.completed.size()) + " group(s); rank " + std::to_string(me) +
               " waits for it to create group " + std::to_string(waiting.group);
      case What::shutdown:
        if (n.kind == NoticeKind::leaving) continue;  // it meets the barrier too
        if (n.kind == NoticeKind::ending)
          return who + " left the job without shutting down (" + n.how +
                 "): it will not meet this rank in the final barrier";
        return who + " stopped on an error while this rank was leaving the job: " + n.how;
    }
  }
  return "";
}

ExitPath exit_path() {
  void* frames[64];
  const int count = backtrace(frames, 64);
  // A return address may point just past a call to a function that does not return, into the
  // next function: look up the byte before it.
  auto where = [&](int i, Dl_info& info) {
    return dladdr(static_cast<char*>(frames[i]) - 1, &info) != 0;
  };
  for (int i = 0; i < count; ++i) {
    Dl_info info{};
    if (!where(i, info) || info.dli_sname == nullptr || std::strcmp(info.dli_sname, "exit") != 0)
      continue;
    Dl_info caller{};
    if (i + 1 >= count || !where(i + 1, caller)) return ExitPath::unknown;
    // main returns into libc's start routine, which calls exit() with its value.
    return caller.dli_fbase == info.dli_fbase ? ExitPath::main_returned : ExitPath::exit_called;
  }
  return ExitPath::unknown;
}

std::string describe_exit(ExitPath path, int status) {
  switch (path) {
    case ExitPath::main_returned:
      return status == 0 ? "its program returned"
                         : "its program returned " + std::to_string(status);
    case ExitPath::exit_called:
      return "its program called exit(" + std::to_string(status) + ")";
    case ExitPath::unknown:
      break;
  }
  return "its program ended (exit status " + std::to_string(status) + ")";
}

}  // namespace rg::parallel::mpi
