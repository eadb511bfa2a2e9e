// log's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/log/log.h"
#include "ops/log/log_functors.h"
#include "tests/support/op_spec_kernels.h"

namespace rg::testing {

RG_OP_SPECS(log) {
  const Call call = [](const Inputs& x) { return log(x[0]); };
  return {{
      .name = "log",
      .gradchecks = unary_gradchecks([](const Tensor& x) { return log(x); }, 0.2, 3),
      .fixtures = {{"log", {"positive", "wide", "domain"}, {"x"}, call}},
      .bad_inputs = integer_inputs("log", [](const Tensor& x) { log(x); }),
      .devices = {{"log",
                   [] {
                     log(on_gpu({2, 3}));
                   },
                   Stop::no_gpu}},
      .samples = {pointwise_sample(call, 1, kPositiveValues)},
      .kernels = {pointwise_kernel<1>("log", LogFn{}, kPositiveValues)},
      .benches = {bandwidth_bench("log", 1, call, kPositiveValues)},
  }};
}

}  // namespace rg::testing
