#include "core/kernel_log.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <tuple>
#include <utility>

#include "core/cpu_features.h"

namespace rg {
namespace {

struct Log {
  std::mutex mutex;
  std::set<std::tuple<std::string, std::string, std::string>> seen;
  std::vector<KernelChoice> choices;
  const bool print = [] {
    const char* env = std::getenv("RG_LOG_KERNELS");
    return env && *env && std::string_view(env) != "0";
  }();
};

Log& log() {
  static Log l;
  return l;
}

}  // namespace

void note_kernel(std::string_view op, std::string problem, std::string_view kernel) {
  Log& l = log();
  std::lock_guard lock(l.mutex);
  if (!l.seen.emplace(std::string(op), problem, std::string(kernel)).second) return;
  if (l.print) {
    if (l.choices.empty()) std::fprintf(stderr, "[kernels] %s\n", cpu_isa_note().c_str());
    std::fprintf(stderr, "[kernels] %.*s %s: %.*s\n", static_cast<int>(op.size()), op.data(),
                 problem.c_str(), static_cast<int>(kernel.size()), kernel.data());
  }
  l.choices.push_back({std::string(op), std::move(problem), std::string(kernel)});
}

std::vector<KernelChoice> kernel_choices() {
  Log& l = log();
  std::lock_guard lock(l.mutex);
  return l.choices;
}

}  // namespace rg
