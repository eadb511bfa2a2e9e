// The specs of batch_norm, batch_norm_relu and batch_norm_gelu (tests/support/op_spec.h): what
// the generic suites and bench_ops run on them. Their gradchecks, PyTorch parity and bad inputs
// (running statistics, modes, the SyncBatchNorm pieces) are in tests/ops/batch_norm_test.cpp,
// batch_norm_relu_test.cpp and batch_norm_gelu_test.cpp.
#include "ops/batch_norm/batch_norm.h"
#include "ops/gelu/gelu.h"
#include "ops/relu/relu.h"
#include "tests/support/op_spec.h"

namespace rg::testing {

namespace {

Tensor channels_last(const Tensor& x) {
  return to_memory_format(x, MemoryFormat::channels_last);
}

Tensor train(const Inputs& x) {
  return batch_norm(x[0], x[1], x[2], Tensor(), Tensor(), BatchNormMode::train);
}

// BatchNorm (train) then an activation on an (N, C, H, W) activation: inputs x, a positive weight
// and a bias. Bytes: the least the pair must move, x and y forward; gy, x and gx backward (the
// per-channel tensors are negligible).
Bench norm_act_bench(std::string name, Call call) {
  return {
      std::move(name),
      {128, 64, 32, 32},
      Cost::bytes,
      [](const Shape& s) {
        if (s.size() != 4) fail("bench_ops: a batch norm's --shape is N,C,H,W (4 sizes)");
        return Inputs{uniform(s, kAnyValues), uniform({s[1]}, kPositiveValues),
                      uniform({s[1]}, kAnyValues)};
      },
      std::move(call),
      [](const Inputs& in, const Tensor& y) {
        return static_cast<double>(in[0].nbytes() + y.nbytes());
      },
      [](const Inputs& in, const Tensor&) { return 3.0 * static_cast<double>(in[0].nbytes()); }};
}

}  // namespace

RG_OP_SPECS(batch_norm) {
  const Call train_relu = [](const Inputs& x) {
    return batch_norm_relu(x[0], x[1], x[2], Tensor(), Tensor(), BatchNormMode::train);
  };
  const Call train_gelu = [](const Inputs& x) {
    return batch_norm_gelu(x[0], x[1], x[2], Tensor(), Tensor(), BatchNormMode::train);
  };
  const auto none = [] { return Tensor(); };
  return {
      {
          .name = "batch_norm",
          .devices = {{"train",
                       [=] {
                         batch_norm(on_gpu({2, 3, 4, 4}), none(), none(), none(), none(),
                                    BatchNormMode::train);
                       },
                       Stop::no_gpu},
                      {"batch_norm_stats",
                       [] {
                         batch_norm_stats(on_gpu({2, 3, 4, 4}));
                       },
                       Stop::no_gpu},
                      {"weight on cuda:0",
                       [=] {
                         batch_norm(ones({2, 3, 4, 4}), on_gpu({3}), none(), none(), none(),
                                    BatchNormMode::train);
                       }}},
          .samples = {{"train", {{4, 3, 5, 5}, {3}, {3}}, train, kSignedUnitValues},
                      // Enough values per channel that each channel's sums split over several
                      // blocks on a GPU.
                      {"train, large", {{64, 8, 16, 16}, {8}, {8}}, train, kSignedUnitValues},
                      // Its (N·H·W, C) rows (batch_norm_channels_last.h): the row kernels.
                      {"train, channels-last",
                       {{4, 6, 5, 5}, {6}, {6}},
                       [](const Inputs& x) {
                         return train({channels_last(x[0]), x[1], x[2]});
                       },
                       kSignedUnitValues},
                      {"eval",
                       {{4, 3, 5}, {3}},
                       [](const Inputs& x) {
                         const Tensor rm = full({3}, 0.25, {x[0].dtype(), x[0].device()});
                         const Tensor rv = full({3}, 1.5, {x[0].dtype(), x[0].device()});
                         return batch_norm(x[0], x[1], Tensor(), rm, rv, BatchNormMode::eval);
                       },
                       kSignedUnitValues}},
      },
      {
          .name = "batch_norm_relu",
          .samples = {{"train", {{4, 3, 5, 5}, {3}, {3}}, train_relu, kSignedUnitValues},
                      {"train, channels-last",
                       {{4, 6, 5, 5}, {6}, {6}},
                       [=](const Inputs& x) {
                         return train_relu({channels_last(x[0]), x[1], x[2]});
                       },
                       kSignedUnitValues}},
          .benches = {norm_act_bench("batch_norm_relu", train_relu),
                      norm_act_bench("batch_norm_relu_unfused",
                                     [](const Inputs& x) { return relu(train(x)); })},
      },
      {
          .name = "batch_norm_gelu",
          .devices = {{"train",
                       [=] {
                         batch_norm_gelu(on_gpu({2, 3, 4, 4}), none(), none(), none(), none(),
                                         BatchNormMode::train);
                       },
                       Stop::no_gpu}},
          .samples = {{"train", {{4, 3, 5, 5}, {3}, {3}}, train_gelu, kSignedUnitValues},
                      {"train, large", {{64, 8, 16, 16}, {8}, {8}}, train_gelu, kSignedUnitValues},
                      {"train, channels-last",
                       {{4, 6, 5, 5}, {6}, {6}},
                       [=](const Inputs& x) {
                         return train_gelu({channels_last(x[0]), x[1], x[2]});
                       },
                       kSignedUnitValues}},
          .benches = {norm_act_bench("batch_norm_gelu", train_gelu),
                      norm_act_bench("batch_norm_gelu_unfused",
                                     [](const Inputs& x) { return gelu(train(x)); })},
      }};
}

}  // namespace rg::testing
