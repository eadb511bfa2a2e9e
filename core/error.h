#pragma once
// rg::Error: the one exception type of the library. Messages name the op and the shapes,
// dtypes and devices involved, e.g. "conv2d: weight must be 4-D (out, in/groups, kH, kW), got
// shape [3, 3] (f32, cpu)".

#include <sstream>
#include <stdexcept>
#include <string>

namespace rg {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {
template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}
}  // namespace detail

// Throws rg::Error with the arguments streamed together.
template <class... Args>
[[noreturn]] void fail(const Args&... args) {
  throw Error(detail::concat(args...));
}

}  // namespace rg

// RG_CHECK(cond, parts...): throws rg::Error(parts...) when cond is false. The parts are only
// formatted on failure, so checks on hot paths cost one branch.
#define RG_CHECK(cond, ...)    \
  do {                         \
    if (!(cond)) [[unlikely]]  \
      ::rg::fail(__VA_ARGS__); \
  } while (0)
