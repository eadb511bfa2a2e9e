#include "core/deferred_checks.h"

#include <exception>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace rg {
namespace {

using DeviceKey = std::pair<int, int>;  // (type, index)

DeviceKey key(const Device& device) {
  return {static_cast<int>(device.type), device.index};
}

struct Pending {
  std::mutex mutex;
  std::map<DeviceKey, std::vector<std::function<void()>>> checks;
};

Pending& pending() {
  static Pending p;
  return p;
}

}  // namespace

void defer_check(const Device& device, std::function<void()> check) {
  Pending& p = pending();
  std::lock_guard lock(p.mutex);
  p.checks[key(device)].push_back(std::move(check));
}

void run_deferred_checks(const Device& device) {
  std::vector<std::function<void()>> checks;
  {
    Pending& p = pending();
    std::lock_guard lock(p.mutex);
    auto it = p.checks.find(key(device));
    if (it == p.checks.end() || it->second.empty()) return;
    checks.swap(it->second);
  }
  std::exception_ptr first;
  for (const auto& check : checks) {
    try {
      check();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

std::size_t deferred_check_count(const Device& device) {
  Pending& p = pending();
  std::lock_guard lock(p.mutex);
  auto it = p.checks.find(key(device));
  return it == p.checks.end() ? 0 : it->second.size();
}

}  // namespace rg
