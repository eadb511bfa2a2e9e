// The specs of batch_norm, batch_norm_relu and batch_norm_gelu (tests/support/op_spec.h): what
// the generic suites and bench_ops run on them — gradchecks in train and eval mode, PyTorch parity
// with the running statistics after the update, bad inputs, the GPU samples. What fits no generic
// part (the SyncBatchNorm pieces, thread-count invariance, the fused ops against the unfused
// compositions, large means) is in tests/ops/batch_norm_test.cpp, batch_norm_relu_test.cpp and
// batch_norm_gelu_test.cpp.
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

// batch_norm, batch_norm_relu or batch_norm_gelu, as one signature.
using NormFn = Tensor (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                          BatchNormMode, double, double);

Tensor f64(const std::vector<double>& v) {
  return from_vector(v, {static_cast<int64_t>(v.size())}, {DType::f64});
}

// A positive weight and a bias of C channels, for gradchecks.
Tensor grad_weight(int64_t c) {
  return grad_input({c}, 0.5, 1.5, 2);
}
Tensor grad_bias(int64_t c) {
  return grad_input({c}, -1, 1, 3);
}

// Train mode with affine parameters on (2, 3, 2, 2) and (4, 3) inputs (running stats updated
// on every call, never read in train mode), and without them on a transposed (non-contiguous)
// input. Random inputs put no normalised value within the finite difference's step of the
// relu's kink.
std::vector<GradcheckCase> train_gradchecks(NormFn norm) {
  const Call affine = [norm](const Inputs& in) {
    return norm(in[0], in[1], in[2], zeros({in[0].size(1)}, {DType::f64}),
                ones({in[0].size(1)}, {DType::f64}), BatchNormMode::train, 0.1, 1e-5);
  };
  return {{"train, affine, 4-D", affine,
           [] {
             return Inputs{grad_input({2, 3, 2, 2}), grad_weight(3), grad_bias(3)};
           }},
          {"train, affine, 2-D", affine,
           [] {
             return Inputs{grad_input({4, 3}), grad_weight(3), grad_bias(3)};
           }},
          {"train, plain, transposed input",
           [norm](const Inputs& in) {
             return norm(in[0].transpose(0, 1), Tensor(), Tensor(), Tensor(), Tensor(),
                         BatchNormMode::train, 0.1, 1e-5);
           },
           [] {
             return Inputs{grad_input({3, 2, 3})};
           }}};
}

// Eval mode with fixed running statistics, affine on a (2, 3, 2, 2) input.
GradcheckCase eval_gradcheck(NormFn norm) {
  return {"eval, affine, 4-D",
          [norm](const Inputs& in) {
            return norm(in[0], in[1], in[2], f64({0.1, -0.2, 0.3}), f64({0.5, 1.5, 0.8}),
                        BatchNormMode::eval, 0.1, 1e-5);
          },
          [] {
            return Inputs{grad_input({2, 3, 2, 2}), grad_weight(3), grad_bias(3)};
          }};
}

// The PyTorch cases of <file>_fixture.py (every one holds running_mean_in / running_var_in, and
// running_mean / running_var after the update), affine ones with w and b.
struct NormCase {
  std::string name;
  bool affine;
  BatchNormMode mode;
  double momentum, eps;
};
std::vector<FixtureCase> norm_fixtures(const std::string& file, NormFn norm,
                                       const std::vector<NormCase>& cases) {
  std::vector<FixtureCase> out;
  for (const NormCase& c : cases) {
    const Call call = [norm, c](const Inputs& x) {
      return c.affine ? norm(x[0], x[1], x[2], x[3], x[4], c.mode, c.momentum, c.eps)
                      : norm(x[0], Tensor(), Tensor(), x[1], x[2], c.mode, c.momentum, c.eps);
    };
    FixtureCase f{.file = file, .cases = {c.name}, .call = call};
    f.inputs = c.affine
                   ? std::vector<std::string>{"x", "w", "b", "running_mean_in", "running_var_in"}
                   : std::vector<std::string>{"x", "running_mean_in", "running_var_in"};
    f.updated = {{"running_mean_in", "running_mean"}, {"running_var_in", "running_var"}};
    out.push_back(std::move(f));
  }
  return out;
}

// The refusals the three ops share (one check, check_batch_norm), with `op` in every message.
std::vector<BadInput> norm_bad_inputs(const std::string& op, NormFn norm) {
  const auto call = [norm](const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& rm,
                           const Tensor& rv,
                           BatchNormMode mode) { norm(x, w, b, rm, rv, mode, 0.1, 1e-5); };
  const BatchNormMode train = BatchNormMode::train;
  return {
      {[=] { call(ones({4}), Tensor(), Tensor(), Tensor(), Tensor(), train); },
       {op, "(N, C, *)", "[4] f32 cpu"}},
      {[=] {
         call(ones({4, 3}), ones({2}), Tensor(), Tensor(), Tensor(), train);
       },
       {op, "weight", "[3]", "[2] f32 cpu"}},
      {[=] {
         call(ones({4, 3}), Tensor(), ones({2}), Tensor(), Tensor(), train);
       },
       {op, "bias", "[3]", "[2] f32 cpu"}},
      {[=] {
         call(ones({2, 3, 2}), Tensor(), Tensor(), zeros({4}), ones({3}), train);
       },
       {op, "running_mean", "[4] f32 cpu"}},
      {[=] {
         call(ones({1, 3}), Tensor(), Tensor(), Tensor(), Tensor(), train);
       },
       {op, "more than 1 value per channel", "[1, 3] f32 cpu"}},
      {[=] {
         call(ones({2, 3}), Tensor(), Tensor(), Tensor(), Tensor(), BatchNormMode::eval);
       },
       {op, "eval mode needs running_mean", "[2, 3] f32 cpu"}},
      {[=] {
         call(ones({2, 3}, {DType::i64}), Tensor(), Tensor(), Tensor(), Tensor(), train);
       },
       {op, "[2, 3] i64 cpu"}},
      {[=] {
         call(ones({2, 3}), ones({3}, {DType::f64}), Tensor(), Tensor(), Tensor(), train);
       },
       {op, "dtype mismatch", "[2, 3] f32 cpu", "[3] f64 cpu"}},
      {[=] {
         norm(ones({2, 3}), Tensor(), Tensor(), Tensor(), Tensor(), train, 0.1, -1.0);
       },
       {op, "eps must be >= 0"}},
  };
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
  // batch_norm's own gradchecks beyond the shared ones: volumes, no parameters, a weight alone,
  // eval without parameters and on 2-D input.
  std::vector<GradcheckCase> norm_gradchecks = train_gradchecks(&batch_norm);
  const Call plain_train = [](const Inputs& in) {
    return batch_norm(in[0], Tensor(), Tensor(), Tensor(), Tensor(), BatchNormMode::train);
  };
  const auto eval_call = [](bool affine) -> Call {
    return [affine](const Inputs& in) {
      return batch_norm(in[0], affine ? in[1] : Tensor(), affine ? in[2] : Tensor(),
                        f64({0.1, -0.2, 0.3}), f64({0.5, 1.5, 0.8}), BatchNormMode::eval);
    };
  };
  const std::vector<GradcheckCase> more = {
      // Volumes (N, C, D, H, W), as the 3-D UNet normalises them.
      {"train, affine, 5-D volumes", train,
       [] {
         return Inputs{grad_input({2, 2, 2, 3, 2}), grad_weight(2), grad_bias(2)};
       }},
      {"train, plain, 4-D", plain_train,
       [] {
         return Inputs{grad_input({2, 3, 2, 2})};
       }},
      {"train, plain, 2-D", plain_train,
       [] {
         return Inputs{grad_input({4, 2})};
       }},
      {"train, weight only, transposed input",
       [](const Inputs& in) {
         return batch_norm(in[0].transpose(0, 1), in[1], Tensor(), Tensor(), Tensor(),
                           BatchNormMode::train);
       },
       [] {
         return Inputs{grad_input({3, 2, 3}), grad_weight(3)};
       }},
      eval_gradcheck(&batch_norm),
      {"eval, affine, 2-D", eval_call(true),
       [] {
         return Inputs{grad_input({4, 3}), grad_weight(3), grad_bias(3)};
       }},
      {"eval, plain, 4-D", eval_call(false),
       [] {
         return Inputs{grad_input({2, 3, 2, 2})};
       }},
      {"eval, plain, 2-D", eval_call(false), [] {
         return Inputs{grad_input({4, 3})};
       }}};
  norm_gradchecks.insert(norm_gradchecks.end(), more.begin(), more.end());
  std::vector<BadInput> norm_bad = norm_bad_inputs("batch_norm", &batch_norm);
  norm_bad.push_back(
      {[] {
         batch_norm_backward_reduce(ones({2, 3}), ones({3, 3}), zeros({3}), ones({3}));
       },
       {"batch_norm_backward_reduce", "[2, 3] f32 cpu", "[3, 3] f32 cpu"}});
  const BatchNormMode tr = BatchNormMode::train, ev = BatchNormMode::eval;
  std::vector<GradcheckCase> relu_gradchecks = train_gradchecks(&batch_norm_relu);
  relu_gradchecks.push_back(eval_gradcheck(&batch_norm_relu));
  std::vector<GradcheckCase> gelu_gradchecks = train_gradchecks(&batch_norm_gelu);
  gelu_gradchecks.push_back(eval_gradcheck(&batch_norm_gelu));
  return {
      {
          .name = "batch_norm",
          .gradchecks = norm_gradchecks,
          .fixtures = norm_fixtures("batch_norm", &batch_norm,
                                    {{"train4d", true, tr, 0.1, 1e-5},
                                     {"train2d", true, tr, 0.1, 1e-5},
                                     {"train_noaffine", false, tr, 0.3, 1e-5},
                                     {"eval4d", true, ev, 0.1, 1e-5},
                                     {"eval2d_noaffine", false, ev, 0.1, 1e-5}}),
          .bad_inputs = norm_bad,
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
          .gradchecks = relu_gradchecks,
          .fixtures = norm_fixtures("batch_norm_relu", &batch_norm_relu,
                                    {{"train4d", true, tr, 0.1, 1e-5},
                                     {"train2d", true, tr, 0.1, 1e-5},
                                     {"train_noaffine", false, tr, 0.3, 1e-5},
                                     {"eval4d", true, ev, 0.1, 1e-5}}),
          .bad_inputs = norm_bad_inputs("batch_norm_relu", &batch_norm_relu),
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
          .gradchecks = gelu_gradchecks,
          // "airbench": airbench94's BatchNorm (momentum 0.4, eps 1e-12).
          .fixtures = norm_fixtures("batch_norm_gelu", &batch_norm_gelu,
                                    {{"train4d", true, tr, 0.1, 1e-5},
                                     {"train2d", true, tr, 0.1, 1e-5},
                                     {"train_noaffine", false, tr, 0.3, 1e-5},
                                     {"eval4d", true, ev, 0.1, 1e-5},
                                     {"airbench", true, tr, 0.4, 1e-12}}),
          .bad_inputs = norm_bad_inputs("batch_norm_gelu", &batch_norm_gelu),
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
