#pragma once
// The ops that `bench_ops --op NAME` can time, one line per op (scripts/new_op.sh writes the line
// of a new op). Each line says how to make the op's inputs from --shape and what one call costs:
//   bandwidth_op(name, inputs, f[, domain]): `inputs` tensors of --shape (default 4096×1024),
//     values uniform in (-2, 2), or (0.5, 2) for Domain::positive. Cost: bytes moved, at least —
//     forward reads each input and writes the output; backward reads gy and each input (or what
//     the node saved, the same size) and writes each input's gradient.
//   gemm_op(name, f): --shape M,K,N; inputs A (M×K) and B (K×N). Cost: 2·M·K·N FLOPs forward,
//     twice that backward (gA = gy·Bᵀ and gB = Aᵀ·gy).

#include <functional>
#include <string>
#include <vector>

#include "ops/ops.h"

namespace rg::bench {

enum class Domain { any, positive };
enum class Cost { bytes, flops };

using Inputs = std::vector<Tensor>;
using V = const Inputs&;

struct BenchOp {
  std::string name;
  Shape default_shape;
  Cost cost;
  // Inputs (f64 values, converted by the caller) made from --shape.
  std::function<Inputs(const Shape&)> make_inputs;
  std::function<Tensor(V)> run;
  // Bytes or FLOPs of one forward and one backward call, from the inputs and the output.
  std::function<double(V, const Tensor&)> forward_work, backward_work;
};

inline Tensor uniform(const Shape& shape, Domain domain) {
  const double low = domain == Domain::positive ? 0.5 : -2.0, high = 2.0;
  return add(mul(rand(shape, {DType::f64}), high - low), low);
}

inline double bytes_of(const Tensor& t) {
  return static_cast<double>(t.nbytes());
}

inline BenchOp bandwidth_op(std::string name, int inputs, std::function<Tensor(V)> run,
                            Domain domain = Domain::any) {
  return {std::move(name),
          {4096, 1024},
          Cost::bytes,
          [=](const Shape& shape) {
            Inputs in;
            for (int k = 0; k < inputs; ++k) in.push_back(uniform(shape, domain));
            return in;
          },
          std::move(run),
          [](V in, const Tensor& y) {
            double b = bytes_of(y);
            for (const Tensor& x : in) b += bytes_of(x);
            return b;
          },
          [](V in, const Tensor& y) {
            double b = bytes_of(y);
            for (const Tensor& x : in) b += 2 * bytes_of(x);
            return b;
          }};
}

// BatchNorm (train) followed by ReLU on an (N, C, H, W) activation, fused or not: inputs x, a
// positive weight and a bias. Bytes: the least the pair must move, x and y forward; gy, x and
// gx backward (the per-channel tensors are negligible).
inline BenchOp norm_relu_op(std::string name, std::function<Tensor(V)> run) {
  return {std::move(name),
          {128, 64, 32, 32},
          Cost::bytes,
          [](const Shape& s) {
            if (s.size() != 4) fail("bench_ops: a batch norm's --shape is N,C,H,W (4 sizes)");
            return Inputs{uniform(s, Domain::any), uniform({s[1]}, Domain::positive),
                          uniform({s[1]}, Domain::any)};
          },
          std::move(run),
          [](V in, const Tensor& y) { return bytes_of(in[0]) + bytes_of(y); },
          [](V in, const Tensor&) { return 3 * bytes_of(in[0]); }};
}

// The 2×2/2 max pool of airbench's blocks on an (N, C, H, W) activation (default: its first,
// 64 channels of 31×31). Bytes: x read, y and its int64 indices written forward; gy and the
// indices read, gx written backward.
inline BenchOp max_pool_op(std::string name) {
  const auto moved = [](V in, const Tensor& y) {
    return bytes_of(in[0]) + bytes_of(y) + 8.0 * static_cast<double>(y.numel());
  };
  return {std::move(name),
          {256, 64, 31, 31},
          Cost::bytes,
          [](const Shape& s) {
            if (s.size() != 4) fail("bench_ops: a max pool's --shape is N,C,H,W (4 sizes)");
            return Inputs{uniform(s, Domain::any)};
          },
          [](V x) { return max_pool2d(x[0], 2).output; },
          moved,
          moved};
}

inline BenchOp gemm_op(std::string name, std::function<Tensor(V)> run) {
  const auto flops = [](V in, const Tensor&) {
    return 2.0 * static_cast<double>(in[0].shape()[0]) * static_cast<double>(in[0].shape()[1]) *
           static_cast<double>(in[1].shape()[1]);
  };
  return {std::move(name),
          {1024, 1024, 1024},
          Cost::flops,
          [](const Shape& s) {
            if (s.size() != 3) fail("bench_ops: a GEMM's --shape is M,K,N (3 sizes)");
            return Inputs{uniform({s[0], s[1]}, Domain::any), uniform({s[1], s[2]}, Domain::any)};
          },
          std::move(run),
          flops,
          [=](V in, const Tensor& y) { return 2 * flops(in, y); }};
}

inline std::vector<BenchOp> registry() {
  const Domain pos = Domain::positive;
  return {
      bandwidth_op("add", 2, [](V x) { return add(x[0], x[1]); }),
      bandwidth_op("add_relu", 2, [](V x) { return add_relu(x[0], x[1]); }),
      bandwidth_op("add_relu_unfused", 2, [](V x) { return relu(add(x[0], x[1])); }),
      norm_relu_op("batch_norm_relu",
                   [](V x) {
                     return batch_norm_relu(x[0], x[1], x[2], Tensor(), Tensor(),
                                            BatchNormMode::train);
                   }),
      norm_relu_op("batch_norm_relu_unfused",
                   [](V x) {
                     return relu(
                         batch_norm(x[0], x[1], x[2], Tensor(), Tensor(), BatchNormMode::train));
                   }),
      bandwidth_op("sub", 2, [](V x) { return sub(x[0], x[1]); }),
      bandwidth_op("mul", 2, [](V x) { return mul(x[0], x[1]); }),
      bandwidth_op(
          "div", 2, [](V x) { return div(x[0], x[1]); }, pos),
      bandwidth_op("neg", 1, [](V x) { return neg(x[0]); }),
      bandwidth_op("exp", 1, [](V x) { return exp(x[0]); }),
      bandwidth_op(
          "log", 1, [](V x) { return log(x[0]); }, pos),
      bandwidth_op(
          "sqrt", 1, [](V x) { return sqrt(x[0]); }, pos),
      bandwidth_op(
          "pow", 2, [](V x) { return pow(x[0], x[1]); }, pos),
      bandwidth_op("relu", 1, [](V x) { return relu(x[0]); }),
      bandwidth_op("leaky_relu", 1, [](V x) { return leaky_relu(x[0]); }),
      bandwidth_op("sigmoid", 1, [](V x) { return sigmoid(x[0]); }),
      bandwidth_op("tanh", 1, [](V x) { return tanh(x[0]); }),
      bandwidth_op("softmax", 1, [](V x) { return softmax(x[0], -1); }),
      bandwidth_op("log_softmax", 1, [](V x) { return log_softmax(x[0], -1); }),
      bandwidth_op("sum", 1, [](V x) { return sum(x[0], {-1}); }),
      bandwidth_op("mean", 1, [](V x) { return mean(x[0], {-1}); }),
      gemm_op("matmul", [](V x) { return matmul(x[0], x[1]); }),
      bandwidth_op("silu", 1, [](V x) { return silu(x[0]); }),
      // silu's composition, for the fused kernel's speed-up (ops/README.md)
      bandwidth_op("silu_unfused", 1, [](V x) { return mul(x[0], sigmoid(x[0])); }),
      bandwidth_op("gelu", 1, [](V x) { return gelu(x[0]); }),
      // airbench's 2×2/2 pool, bytes counted with its indices (max_pool_op)
      max_pool_op("max_pool2d"),
      // new_op.sh adds ops above this line
  };
}

}  // namespace rg::bench
