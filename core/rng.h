#pragma once
// Counter-based random numbers (Philox4x32-10). The value for element i of a draw depends only
// on (seed, draw offset, i), never on how elements are split across threads or devices.

#include <cstdint>

#include "core/philox.h"  // philox4x32_10, philox_uniform_f32 (host/device)

namespace rg {

struct PhiloxState {
  uint64_t seed = 0;
  uint64_t offset = 0;  // advanced by one per draw (each draw gets its own counter space)
};

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) { state_.seed = seed; }
  void manual_seed(uint64_t seed) { state_ = {seed, 0}; }
  PhiloxState state() const { return state_; }
  void set_state(PhiloxState state) { state_ = state; }
  // Reserves the counter space of one draw and returns its offset.
  uint64_t next_offset() { return state_.offset++; }
  uint64_t seed() const { return state_.seed; }

 private:
  PhiloxState state_;
};

Generator& default_generator();
void manual_seed(uint64_t seed);

// Element i of a draw at `offset`: uniform in [0, 1) with 53 random bits (philox_uniform_f32,
// 24 bits, is in core/philox.h), and a standard normal (Box-Muller on two uniforms).
double philox_uniform_f64(uint64_t seed, uint64_t offset, uint64_t i);
double philox_normal(uint64_t seed, uint64_t offset, uint64_t i);

}  // namespace rg
