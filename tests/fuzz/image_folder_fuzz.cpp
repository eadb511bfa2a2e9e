// Fuzz target: image-folder listing. Each input line is a path under a fresh root —
// "train/cat/0.bmp" makes a file holding a 2x2 BMP, "test/dog/" a folder — then the train
// split is opened as CIFAR-10 in the image-folder layout (class lists, empty classes, the
// train/test comparison, sizes).
//
// The tree is made and unmade with plain mkdir/link/unlink/rmdir on fixed buffers: with
// std::filesystem (remove_all, create_directories, path objects) under AddressSanitizer, the
// harness took over half of each execution and the reader under test a fifth.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "core/error.h"
#include "data/cifar10.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

constexpr int kMaxLines = 64;
constexpr std::size_t kMaxPart = 63;
constexpr int kMaxParts = 3;

// What one execution created, newest last, so that undoing it in reverse empties every folder
// before it is removed (a path that already existed is not recorded: its creator owns it).
struct Made {
  char path[PATH_MAX];
  bool is_dir;
};
Made made[kMaxLines * kMaxParts];
int made_count = 0;

void record(const char* path, bool is_dir) {
  std::strcpy(made[made_count].path, path);
  made[made_count++].is_dir = is_dir;
}

void undo_all() {
  while (made_count > 0) {
    const Made& m = made[--made_count];
    if (m.is_dir)
      ::rmdir(m.path);
    else
      ::unlink(m.path);
  }
}

// Makes `line` under `root` (a folder when it ends in '/', else a tiny BMP, with its parents)
// if it is a plain relative path of 1 to 3 parts, none "." or ".." or longer than 63 bytes;
// repeated slashes count as one, as in a path. Returns whether the line was plain.
bool make_path(std::string_view root, std::string_view line) {
  if (line.empty() || line.front() == '/' || line.find('\0') != std::string_view::npos)
    return false;
  const bool is_dir = line.back() == '/';
  std::string_view parts[kMaxParts];
  int n = 0;
  for (std::size_t start = 0; start < line.size();) {
    const std::size_t end = std::min(line.find('/', start), line.size());
    const std::string_view part = line.substr(start, end - start);
    start = end + 1;
    if (part.empty()) continue;
    if (part == "." || part == ".." || part.size() > kMaxPart || n == kMaxParts) return false;
    parts[n++] = part;
  }
  if (n == 0) return false;

  char path[PATH_MAX];
  std::size_t len = root.copy(path, root.size());
  for (int i = 0; i < n; ++i) {
    path[len++] = '/';
    len += parts[i].copy(path + len, parts[i].size());
    path[len] = '\0';
    if (i + 1 < n || is_dir) {
      if (::mkdir(path, 0755) == 0)
        record(path, true);
      else if (errno != EEXIST)
        return true;  // e.g. a parent that is a file: nothing more can be made under it
    } else if (rg::fuzz::link_tiny_bmp(path)) {
      record(path, false);
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const std::string root = [] {
    const std::string r = rg::fuzz::scratch("folder");
    std::filesystem::remove_all(r);  // left by an earlier process with this pid
    std::filesystem::create_directories(r);
    return r;
  }();
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  int lines = 0;
  for (std::size_t start = 0; start < input.size() && lines < kMaxLines;) {
    const std::size_t end = std::min(input.find('\n', start), input.size());
    lines += make_path(root, input.substr(start, end - start));
    start = end + 1;
  }
  try {
    auto set =
        rg::data::open_cifar10(root, rg::data::Split::train, rg::data::DataFormat::image_folder);
    for (int64_t i = 0; i < set->size(); ++i)
      if (set->get(i).label >= set->num_classes()) __builtin_trap();
  } catch (const rg::Error&) {
  }
  undo_all();
  // The reader must not write into the data set; if it ever did, the next input would not
  // start from an empty root.
  if (::rmdir(root.c_str()) != 0 || ::mkdir(root.c_str(), 0755) != 0) __builtin_trap();
  return 0;
}
