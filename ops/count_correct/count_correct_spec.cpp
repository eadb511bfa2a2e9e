// count_correct's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
// No gradient (a count); its PyTorch parity and argmax rules are in
// tests/ops/count_correct_test.cpp.
#include <cmath>

#include "ops/count_correct/count_correct.h"
#include "ops/count_correct/count_correct_kernels.cuh"
#include "tests/support/op_spec.h"

namespace rg::testing {

namespace {

// Labels for logits (N, K): row i's is i mod (K + 1), so some rows hold K (outside [0, K): never
// correct), on the logits' device.
Tensor labels_for(const Tensor& logits) {
  std::vector<int64_t> v(static_cast<std::size_t>(logits.size(0)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i) % (logits.size(1) + 1);
  return from_vector(v, {logits.size(0)}, {DType::i64}).to(logits.device());
}

// The CUDA kernel (emulated) against the CPU loop in every floating dtype: more rows than the
// block's threads, rows of whole numbers (ties: the first maximum wins) and rows with NaN.
std::vector<KernelResult> kernels_against_the_cpu() {
  std::vector<KernelResult> results;
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16})
    for (const Shape& shape : {Shape{1, 3}, Shape{150, 10}, Shape{70, 1}}) {
      const std::string where = std::string(dtype_name(dtype)) + " " + shape_str(shape);
      Tensor logits = uniform(shape, kAnyValues);
      if (shape[0] == 150) {  // whole numbers in half the rows, a NaN in every 7th row
        double* v = logits.data<double>();
        for (int64_t i = 0; i < shape[0]; ++i)
          for (int64_t j = 0; j < shape[1]; ++j) {
            double& x = v[i * shape[1] + j];
            if (i % 2 == 0) x = static_cast<double>(static_cast<int>(x * 2));
            if (i % 7 == 0 && j == i % shape[1]) x = std::nan("");
          }
      }
      logits = logits.to(dtype);
      const Tensor labels = labels_for(logits);
      const Tensor cpu = empty({}, {DType::f64}), emulated = empty({}, {DType::f64});
      count_correct(OnCpu{}, cpu, logits, labels);
      launch_count_correct(emulated, logits, labels, nullptr);
      results.push_back({where, emulated, cpu});
    }
  return results;
}

}  // namespace

RG_OP_SPECS(count_correct) {
  const Call call = [](const Inputs& x) { return count_correct(x[0], labels_for(x[0])); };
  return {{
      .name = "count_correct",
      .bad_inputs = {{[] {
                        count_correct(ones({4, 3}, {DType::i64}), zeros({4}, {DType::i64}));
                      },
                      {"count_correct", "logits", "[4, 3] i64"}},
                     {[] {
                        count_correct(ones({4, 3}), zeros({4}));
                      },
                      {"count_correct", "labels", "[4] f32"}},
                     {[] {
                        count_correct(ones({4, 3}), zeros({5}, {DType::i64}));
                      },
                      {"count_correct", "N = 4", "[5] i64"}},
                     {[] { count_correct(ones({4}), zeros({4}, {DType::i64})); },
                      {"count_correct", "(N, K)", "[4] f32"}}},
      .devices = {{"logits on cuda:0",
                   [] {
                     count_correct(on_gpu({2, 3}), zeros({2}, {DType::i64}));
                   }},
                  {"both on cuda:0",
                   [] {
                     count_correct(on_gpu({2, 3}), on_gpu({2}, DType::i64));
                   },
                   Stop::no_gpu}},
      .samples = {{"batch", {{37, 10}}, call, kAnyValues}},
      .kernels = {{"count", kernels_against_the_cpu}},
  }};
}

}  // namespace rg::testing
