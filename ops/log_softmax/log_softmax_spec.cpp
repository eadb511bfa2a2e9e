// log_softmax's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/log_softmax/log_softmax.h"
#include "tests/support/op_spec.h"

namespace rg::testing {

RG_OP_SPECS(log_softmax) {
  const auto along = [](int64_t dim) -> Call {
    return [=](const Inputs& x) { return log_softmax(x[0], dim); };
  };
  std::vector<GradcheckCase> gradchecks;
  for (int64_t dim : {0, 1, 2, -1})
    gradchecks.push_back({"dim " + std::to_string(dim), along(dim), [] {
                            return Inputs{grad_input({2, 3, 2}, -2, 2)};
                          }});
  gradchecks.push_back({"transposed",
                        [](const Inputs& x) { return log_softmax(x[0].transpose(0, 1), 1); },
                        [] {
                          return Inputs{grad_input({3, 2}, -2, 2)};
                        }});
  return {{
      .name = "log_softmax",
      .gradchecks = gradchecks,
      .fixtures = {{"log_softmax", {"last"}, {"x"}, along(-1)},
                   {"log_softmax", {"d1", "big"}, {"x"}, along(1)},
                   {"log_softmax", {"d0"}, {"x"}, along(0)}},
      .bad_inputs = {{[] {
                        log_softmax(ones({2, 3}), 2);
                      },
                      {"log_softmax", "dim 2", "out of range"}},
                     {[] { log_softmax(ones({2}, {DType::i64}), 0); },
                      {"log_softmax", "[2] i64 cpu"}}},
      .devices = {{"log_softmax",
                   [] {
                     log_softmax(on_gpu({2, 3}), 1);
                   },
                   Stop::no_gpu}},
      .samples = {{"last dim", {{3, 37, 5}}, along(-1)}},
      .benches = {bandwidth_bench("log_softmax", 1, along(-1))},
  }};
}

}  // namespace rg::testing
