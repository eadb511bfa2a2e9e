#include "tests/support/op_spec.h"

#include <algorithm>

#include "ops/ops.h"

namespace rg::testing {

namespace {

std::vector<SpecFactory>& factories() {
  static std::vector<SpecFactory> registered;  // filled by static initialisers, before main
  return registered;
}

double bytes_of(const Tensor& t) {
  return static_cast<double>(t.nbytes());
}

}  // namespace

Tensor uniform(const Shape& shape, Range range) {
  return add(mul(rand(shape, {DType::f64}), range.high - range.low), range.low);
}

Tensor on_gpu(const Shape& shape, DType dtype) {
  auto* buffer =
      new std::vector<double>(static_cast<std::size_t>(std::max<int64_t>(numel_of(shape), 1)));
  return from_blob(buffer->data(), shape, {dtype, Device::cuda(0)},
                   [buffer](void*) { delete buffer; });
}

Sample pointwise_sample(Call call, int arity, Range range) {
  std::vector<Shape> shapes{{3, 37, 5}};
  for (int k = 1; k < arity; ++k) shapes.push_back({3, 1, 5});
  return {"", std::move(shapes), std::move(call), range};
}

Bench bandwidth_bench(std::string name, int arity, Call call, Range range) {
  return {std::move(name),
          {4096, 1024},
          Cost::bytes,
          [=](const Shape& shape) {
            Inputs in;
            for (int k = 0; k < arity; ++k) in.push_back(uniform(shape, range));
            return in;
          },
          std::move(call),
          [](const Inputs& in, const Tensor& y) {
            double b = bytes_of(y);
            for (const Tensor& x : in) b += bytes_of(x);
            return b;
          },
          [](const Inputs& in, const Tensor& y) {
            double b = bytes_of(y);
            for (const Tensor& x : in) b += 2 * bytes_of(x);
            return b;
          }};
}

Bench gemm_bench(std::string name, Call call) {
  const auto flops = [](const Inputs& in, const Tensor&) {
    return 2.0 * static_cast<double>(in[0].shape()[0]) * static_cast<double>(in[0].shape()[1]) *
           static_cast<double>(in[1].shape()[1]);
  };
  return {std::move(name),
          {1024, 1024, 1024},
          Cost::flops,
          [](const Shape& s) {
            if (s.size() != 3) fail("bench_ops: a GEMM's --shape is M,K,N (3 sizes)");
            return Inputs{uniform({s[0], s[1]}, kAnyValues), uniform({s[1], s[2]}, kAnyValues)};
          },
          std::move(call),
          flops,
          [=](const Inputs& in, const Tensor& y) { return 2 * flops(in, y); }};
}

std::vector<GradcheckCase> unary_gradchecks(const std::function<Tensor(const Tensor&)>& f,
                                            double low, double high) {
  return {{"contiguous", [f](const Inputs& x) { return f(x[0]); },
           [=] {
             return Inputs{grad_input({2, 3}, low, high)};
           }},
          {"transposed", [f](const Inputs& x) { return f(x[0].transpose(0, 1)); },
           [=] {
             return Inputs{grad_input({3, 2}, low, high, 3)};
           }}};
}

std::vector<BadInput> integer_inputs(const std::string& op,
                                     const std::function<void(const Tensor&)>& call) {
  return {{[=] { call(ones({2}, {DType::i64})); }, {op, "[2] i64 cpu"}},
          {[=] {
             call(ones({2, 2}, {DType::u8}));
           },
           {op, "[2, 2] u8 cpu"}}};
}

bool register_specs(SpecFactory factory) {
  factories().push_back(factory);
  return true;
}

const std::vector<OpSpec>& all_specs() {
  static const std::vector<OpSpec> specs = [] {
    std::vector<OpSpec> all;
    for (SpecFactory factory : factories())
      for (OpSpec& s : factory()) all.push_back(std::move(s));
    std::sort(all.begin(), all.end(),
              [](const OpSpec& a, const OpSpec& b) { return a.name < b.name; });
    return all;
  }();
  return specs;
}

const OpSpec& spec(std::string_view name) {
  for (const OpSpec& s : all_specs())
    if (s.name == name) return s;
  fail("no op spec named '", name, "' (ops/*/*_spec.cpp)");
}

}  // namespace rg::testing
