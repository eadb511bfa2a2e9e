// cat's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/cat/cat.h"
#include "tests/support/op_spec.h"

namespace rg::testing {

RG_OP_SPECS(cat) {
  const auto along = [](int64_t dim) -> Call {
    return [=](const Inputs& x) { return cat(x, dim); };
  };
  const auto pieces = [](std::vector<Shape> shapes) {
    return [=] {
      Inputs in;
      for (std::size_t k = 0; k < shapes.size(); ++k)
        in.push_back(grad_input(shapes[k], -1, 1, k + 1));
      return in;
    };
  };
  return {{
      .name = "cat",
      .gradchecks = {{"dim 0, three sizes", along(0), pieces({{2, 3}, {1, 3}, {3, 3}})},
                     {"dim 1", along(1), pieces({{2, 1, 2}, {2, 3, 2}})},
                     {"last dim", along(-1), pieces({{2, 2, 1}, {2, 2, 3}})}},
      // Exact: a copy.
      .fixtures = {{"cat", {"dim0"}, {"x0", "x1", "x2"}, along(0), {}, 0, 0},
                   {"cat", {"dim1"}, {"x0", "x1"}, along(1), {}, 0, 0},
                   {"cat", {"dimlast"}, {"x0", "x1", "x2"}, along(-1), {}, 0, 0}},
      .bad_inputs = {{[] { cat({}, 0); }, {"cat", "non-empty"}},
                     {[] {
                        cat({ones({2, 3}), ones({2, 4})}, 0);
                      },
                      {"cat", "[2, 3] f32 cpu", "[2, 4] f32 cpu", "dim 1"}},
                     {[] {
                        cat({ones({2, 3}), ones({2, 3, 1})}, 0);
                      },
                      {"cat", "number of dims", "[2, 3, 1]"}},
                     {[] {
                        cat({ones({2}), ones({2}, {DType::f64})}, 0);
                      },
                      {"cat", "dtype mismatch", "[2] f32 cpu", "[2] f64 cpu"}},
                     {[] {
                        cat({ones({2}), ones({2})}, 1);
                      },
                      {"dim"}},
                     {[] {
                        cat({scalar_tensor(1), scalar_tensor(2)}, 0);
                      },
                      {"cat", "zero-dimensional"}}},
      .devices = {{"mixed devices",
                   [] {
                     cat({ones({2, 3}), on_gpu({2, 3})}, 0);
                   }},
                  {"on cuda:0",
                   [] {
                     cat({on_gpu({2, 3}), on_gpu({2, 3})}, 1);
                   },
                   Stop::no_gpu}},
      // Pieces of different sizes, one a strided view.
      .samples = {{"",
                   {{3, 37, 5}, {3, 1, 5}},
                   [](const Inputs& x) {
                     return cat({x[0], x[1], x[0].narrow(1, 3, 4)}, 1);
                   }}},
      // cat_channels: two (N, C, H, W) maps joined along channels, as DenseNet, DLA's roots,
      // GoogLeNet, DPN and ShuffleNet join theirs: forward reads both and writes the result;
      // backward hands each input its slice of gy, which a leaf's gradient copies (gy read, the
      // gradients written).
      .benches = {{"cat_channels",
                   {128, 128, 16, 16},
                   Cost::bytes,
                   [](const Shape& shape) {
                     return Inputs{uniform(shape, {-1, 1}), uniform(shape, {-1, 1})};
                   },
                   along(1),
                   [](const Inputs& in, const Tensor& y) {
                     return static_cast<double>(in[0].nbytes() + in[1].nbytes() + y.nbytes());
                   },
                   [](const Inputs&, const Tensor& y) {
                     return static_cast<double>(2 * y.nbytes());
                   }}},
  }};
}

}  // namespace rg::testing
