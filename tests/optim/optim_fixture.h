#pragma once
// Replays an optimizer fixture (tools/fixtures/optim_sgd.py, optim_adamw.py): three parameters,
// the fixture's gradients before each of 5 steps, every parameter compared after every step and
// the state compared after the last.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "optim/optim.h"
#include "tests/support/fixtures.h"

namespace rg::testing {

inline constexpr int kFixtureParams = 3;
inline constexpr int kFixtureSteps = 5;

using MakeOptimizer = std::function<std::unique_ptr<Optimizer>(const std::vector<Tensor>&)>;

inline std::vector<Tensor> fixture_params(const Fixture& f, const std::string& c) {
  std::vector<Tensor> params;
  for (int i = 0; i < kFixtureParams; ++i) {
    Tensor p = f[c + ".p" + std::to_string(i)].clone();
    p.set_requires_grad(true);
    params.push_back(p);
  }
  return params;
}

// Sets the gradients of step k (none where the fixture has none).
inline void set_fixture_grads(const Fixture& f, const std::string& c, int k,
                              std::vector<Tensor>& params) {
  for (int i = 0; i < kFixtureParams; ++i) {
    const std::string key = c + ".g" + std::to_string(i) + ".s" + std::to_string(k);
    if (f.has(key))
      params[i].set_grad(f[key].clone());
    else
      params[i].zero_grad();
  }
}

inline void check_optimizer_case(const std::string& fixture, const std::string& c,
                                 const MakeOptimizer& make, const std::vector<std::string>& buffers,
                                 double atol = 1e-6, double rtol = 1e-5) {
  SCOPED_TRACE("case " + c);
  Fixture f(fixture);
  std::vector<Tensor> params = fixture_params(f, c);
  std::unique_ptr<Optimizer> opt = make(params);
  for (int k = 0; k < kFixtureSteps; ++k) {
    set_fixture_grads(f, c, k, params);
    opt->step();
    for (int i = 0; i < kFixtureParams; ++i)
      EXPECT_TRUE(all_close(params[i], f[c + ".p" + std::to_string(i) + ".s" + std::to_string(k)],
                            atol, rtol))
          << "parameter " << i << " after step " << k;
  }
  const StateDict sd = opt->state_dict();
  for (int i = 0; i < kFixtureParams; ++i) {
    for (const std::string& b : buffers) {
      const std::string ours = "optim.state." + std::to_string(i) + "." + b;
      const std::string theirs = c + ".state" + std::to_string(i) + "." + b;
      ASSERT_EQ(sd.tensors.count(ours), f.has(theirs) ? 1u : 0u) << ours;
      if (f.has(theirs)) {
        EXPECT_TRUE(all_close(sd.tensors.at(ours), f[theirs], atol, rtol)) << ours;
      }
    }
  }
}

}  // namespace rg::testing
