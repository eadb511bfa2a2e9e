// CPU vs CUDA parity, forward and backward, for every op with a CUDA kernel, on a real GPU.
// Where there is none, every test skips, saying so (CTest label `gpu`); the same kernels run
// through the emulator in tests/kernels/ everywhere.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "core/deferred_checks.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

struct OpCase {
  std::string name;
  int inputs;
  bool positive;  // domain (0.5, 2) instead of (-2, 2)
  std::function<Tensor(const std::vector<Tensor>&)> op;
};

std::vector<OpCase> cases() {
  using V = const std::vector<Tensor>&;
  return {
      {"add", 2, false, [](V x) { return add(x[0], x[1]); }},
      {"add_relu", 2, false, [](V x) { return add_relu(x[0], x[1]); }},
      {"add_scalar", 1, false, [](V x) { return add(x[0], 0.5); }},
      {"sub", 2, false, [](V x) { return sub(x[0], x[1]); }},
      {"mul", 2, false, [](V x) { return mul(x[0], x[1]); }},
      {"div", 2, true, [](V x) { return div(x[0], x[1]); }},
      {"neg", 1, false, [](V x) { return neg(x[0]); }},
      {"exp", 1, false, [](V x) { return exp(x[0]); }},
      {"log", 1, true, [](V x) { return log(x[0]); }},
      {"sqrt", 1, true, [](V x) { return sqrt(x[0]); }},
      {"pow", 2, true, [](V x) { return pow(x[0], x[1]); }},
      {"relu", 1, false, [](V x) { return relu(x[0]); }},
      {"leaky_relu", 1, false, [](V x) { return leaky_relu(x[0]); }},
      {"sigmoid", 1, false, [](V x) { return sigmoid(x[0]); }},
      {"tanh", 1, false, [](V x) { return tanh(x[0]); }},
      {"sum", 1, false,
       [](V x) {
         return sum(x[0], {0, 2});
       }},
      {"mean", 1, false, [](V x) { return mean(x[0], {1}); }},
      {"softmax", 1, false, [](V x) { return softmax(x[0], 1); }},
      {"cat", 2, false,
       [](V x) {
         return cat({x[0], x[1], x[0].narrow(1, 3, 4)}, 1);
       }},
      {"log_softmax", 1, false, [](V x) { return log_softmax(x[0], -1); }},
      {"max", 1, false, [](V x) { return max(x[0]); }},
      {"max dim", 1, false, [](V x) { return max(x[0], 1).values; }},
      {"max last dim", 1, false, [](V x) { return max(x[0], -1, KeepDim::yes).values; }},
      {"silu", 1, false, [](V x) { return silu(x[0]); }},
      // Casts there and back (each with its gradient cast back), a clone of a transposed view,
      // and the pieces of a split put back together with different weights.
      {"cast", 1, false,
       [](V x) {
         return cast(cast(x[0], x[0].dtype() == DType::f64 ? DType::f32 : DType::f64),
                     x[0].dtype());
       }},
      {"clone transposed", 1, false, [](V x) { return clone(x[0].transpose(0, 2)); }},
      {"split", 1, false,
       [](V x) {
         const std::vector<Tensor> parts = split(x[0], {10, 20, 7}, 1);
         return cat({mul(parts[2], 3.0), parts[0], mul(parts[1], -1.0)}, 1);
       }},
      {"gelu", 1, false, [](V x) { return gelu(x[0]); }},
      // new_op.sh adds ops above this line
  };
}

using Op = std::function<Tensor(const std::vector<Tensor>&)>;

// Runs op on the CPU and on the GPU from the same values (given in f64) converted to dtype, and
// compares the outputs and every input's gradient.
void expect_parity(const std::string& name, const std::vector<Tensor>& values, const Op& op,
                   DType dtype) {
  const Device gpu = Device::cuda(0);
  std::vector<Tensor> cpu_in, gpu_in;
  for (const Tensor& v : values) {
    const Tensor x = v.to(dtype);
    cpu_in.push_back(x.clone().set_requires_grad(true));
    gpu_in.push_back(x.to(gpu).set_requires_grad(true));
  }
  const Tensor y_cpu = op(cpu_in), y_gpu = op(gpu_in);
  ASSERT_EQ(y_gpu.device(), gpu) << name;
  const double tol = device_parity_tolerance(dtype);
  EXPECT_TRUE(all_close(y_gpu.to(Device::cpu()), y_cpu, tol, tol)) << name << " " << dtype;
  const Tensor g = rand(y_cpu.shape(), {DType::f64}).to(dtype);
  y_cpu.backward(g);
  y_gpu.backward(g.to(gpu));
  for (std::size_t k = 0; k < values.size(); ++k)
    EXPECT_TRUE(all_close(gpu_in[k].grad().to(Device::cpu()), cpu_in[k].grad(), tol, tol))
        << name << " " << dtype << " grad " << k;
}

constexpr DType kDtypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16};

TEST(GpuOpsParity, ForwardAndBackwardMatchTheCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable GPU on this machine";
  for (const OpCase& c : cases())
    for (DType dtype : kDtypes) {
      std::vector<Tensor> values;
      for (int k = 0; k < c.inputs; ++k) {
        // Odd sizes, and the second operand broadcast along dim 1.
        const Shape shape = k == 0 ? Shape{3, 37, 5} : Shape{3, 1, 5};
        const double low = c.positive ? 0.5 : -2.0;
        values.push_back(add(mul(rand(shape, {DType::f64}), 2.0 - low), low));
      }
      expect_parity(c.name, values, c.op, dtype);
    }
}

// The library-backed ops: cuBLAS GEMMs (batched, broadcast — its gradient sums over the batch —,
// transposed operands read in place, linear with its bias) and cuDNN convolutions.
struct ShapedCase {
  std::string name;
  std::vector<Shape> shapes;
  Op op;
};

std::vector<ShapedCase> library_cases() {
  using V = const std::vector<Tensor>&;
  return {
      {"matmul batched", {{3, 37, 5}, {3, 5, 7}}, [](V x) { return matmul(x[0], x[1]); }},
      {"matmul broadcast", {{37, 5}, {3, 5, 7}}, [](V x) { return matmul(x[0], x[1]); }},
      {"matmul 2-d weight", {{3, 37, 5}, {5, 7}}, [](V x) { return matmul(x[0], x[1]); }},
      {"matmul transposed",
       {{3, 5, 37}, {3, 7, 5}},
       [](V x) { return matmul(x[0].transpose(1, 2), x[1].transpose(1, 2)); }},
      {"matmul vector", {{37}, {37, 5}}, [](V x) { return matmul(x[0], x[1]); }},
      {"linear", {{3, 37, 5}, {11, 5}, {11}}, [](V x) { return linear(x[0], x[1], x[2]); }},
      {"linear no bias", {{37, 5}, {11, 5}}, [](V x) { return linear(x[0], x[1]); }},
      {"conv2d",
       {{2, 3, 9, 9}, {4, 3, 3, 3}, {4}},
       [](V x) {
         return conv2d(x[0], x[1], x[2], {1, 1}, {1, 1});
       }},
      {"conv2d strided grouped",
       {{2, 4, 9, 9}, {6, 2, 3, 3}},
       [](V x) {
         return conv2d(x[0], x[1], Tensor(), {2, 2}, {1, 1}, {1, 1}, 2);
       }},
      {"batch_norm train",
       {{4, 3, 5, 5}, {3}, {3}},
       [](V x) { return batch_norm(x[0], x[1], x[2], Tensor(), Tensor(), BatchNormMode::train); }},
      // Enough values per channel that each channel's sums split over several blocks.
      {"batch_norm train large",
       {{64, 8, 16, 16}, {8}, {8}},
       [](V x) { return batch_norm(x[0], x[1], x[2], Tensor(), Tensor(), BatchNormMode::train); }},
      {"batch_norm_relu train",
       {{4, 3, 5, 5}, {3}, {3}},
       [](V x) {
         return batch_norm_relu(x[0], x[1], x[2], Tensor(), Tensor(), BatchNormMode::train);
       }},
      {"batch_norm eval",
       {{4, 3, 5}, {3}},
       [](V x) {
         const Tensor rm = full({3}, 0.25, {x[0].dtype(), x[0].device()});
         const Tensor rv = full({3}, 1.5, {x[0].dtype(), x[0].device()});
         return batch_norm(x[0], x[1], Tensor(), rm, rv, BatchNormMode::eval);
       }},
      {"conv_transpose2d",
       {{2, 4, 5, 5}, {4, 3, 2, 2}, {3}},
       [](V x) {
         return conv_transpose2d(x[0], x[1], x[2], {2, 2});
       }},
      {"conv3d",
       {{2, 3, 5, 6, 7}, {4, 3, 3, 3, 3}, {4}},
       [](V x) {
         return conv3d(x[0], x[1], x[2], {1, 1, 1}, {1, 1, 1});
       }},
      {"conv3d strided grouped",
       {{1, 4, 6, 7, 5}, {6, 2, 3, 3, 3}},
       [](V x) {
         return conv3d(x[0], x[1], Tensor(), {2, 2, 1}, {1, 0, 1}, {1, 1, 1}, 2);
       }},
      {"conv_transpose3d",
       {{2, 4, 3, 4, 5}, {4, 3, 2, 2, 2}, {3}},
       [](V x) {
         return conv_transpose3d(x[0], x[1], x[2], {2, 2, 2});
       }},
  };
}

// The case on inputs drawn uniformly from [-bound, bound).
void expect_parity(const ShapedCase& c, DType dtype, double bound = 1.0) {
  std::vector<Tensor> values;
  for (const Shape& shape : c.shapes)
    values.push_back(add(mul(rand(shape, {DType::f64}), 2.0 * bound), -bound));
  expect_parity(c.name, values, c.op, dtype);
}

TEST(GpuOpsParity, CublasAndCudnnOpsMatchTheCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable GPU on this machine";
  for (const ShapedCase& c : library_cases())
    for (DType dtype : kDtypes) expect_parity(c, dtype);
}

// With benchmark_convolutions() each problem runs through the fastest of several cuDNN plans,
// chosen by timing them on its first run: other engines, the same results.
TEST(GpuOpsParity, BenchmarkedConvolutionsMatchTheCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable GPU on this machine";
  struct BenchmarkMode {  // off again whatever happens in the test
    BenchmarkMode() { set_benchmark_convolutions(true); }
    ~BenchmarkMode() { set_benchmark_convolutions(false); }
  } mode;
  for (const ShapedCase& c : library_cases())
    if (c.name.find("conv") != std::string::npos)
      for (DType dtype : kDtypes) expect_parity(c, dtype);
}

// The losses, each with its targets on the logits' device.
TEST(GpuOpsParity, LossesMatchTheCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable GPU on this machine";
  using V = const std::vector<Tensor>&;
  const Tensor classes = from_vector<int64_t>({0, 4, 2, -100, 1, 3, 4}, {7}, {DType::i64});
  const Tensor pixels =
      from_vector<int64_t>({0, 2, 1, 1, 2, 0, -100, 1, 2, 0, 0, 1}, {2, 2, 3}, {DType::i64});
  const Tensor weight = from_vector<double>({0.5, 1.0, 2.0, 1.5, 0.25}, {5});
  const auto on = [](const Tensor& t, const Tensor& like) {
    return t.to(like.device()).to(is_floating(t.dtype()) ? like.dtype() : t.dtype());
  };
  const std::vector<ShapedCase> loss_cases = {
      {"cross_entropy", {{7, 5}}, [=](V x) { return cross_entropy(x[0], on(classes, x[0])); }},
      {"cross_entropy weighted smoothed none",
       {{7, 5}},
       [=](V x) {
         return cross_entropy(x[0], on(classes, x[0]), on(weight, x[0]), Reduction::none, -100,
                              0.1);
       }},
      {"cross_entropy pixels",
       {{2, 3, 2, 3}},
       [=](V x) { return cross_entropy(x[0], on(pixels, x[0]), Tensor(), Reduction::sum); }},
      {"cross_entropy wide rows",
       {{3, 300}},
       [=](V x) { return cross_entropy(x[0], on(classes.narrow(0, 0, 3), x[0])); }},
      {"nll_loss",
       {{7, 5}},
       [=](V x) { return nll_loss(x[0], on(classes, x[0]), on(weight, x[0])); }},
      {"nll_loss pixels none",
       {{2, 3, 2, 3}},
       [=](V x) { return nll_loss(x[0], on(pixels, x[0]), Tensor(), Reduction::none); }},
      {"mse_loss", {{3, 37, 5}, {3, 37, 5}}, [](V x) { return mse_loss(x[0], x[1]); }},
      {"binary_cross_entropy_with_logits",
       {{3, 37, 5}, {3, 37, 5}, {37, 5}},
       [](V x) {
         return binary_cross_entropy_with_logits(x[0], x[1], x[2], Tensor(), Reduction::sum);
       }},
  };
  for (const ShapedCase& c : loss_cases)
    for (DType dtype : kDtypes) {
      std::vector<Tensor> values;
      for (const Shape& shape : c.shapes) values.push_back(rand(shape, {DType::f64}));
      expect_parity(c.name, values, c.op, dtype);
    }
}

// Pooling, upsample and dropout on 4-D (and max_pool3d on 5-D) inputs, some non-contiguous (a
// transposed view).
// dropout draws from a fresh generator with the same seed on both devices: equal outputs mean
// the GPU kept exactly the CPU's elements.
TEST(GpuOpsParity, PoolingUpsampleAndDropoutMatchTheCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable GPU on this machine";
  using V = const std::vector<Tensor>&;
  const std::vector<ShapedCase> cases = {
      {"max_pool2d", {{2, 3, 9, 7}}, [](V x) { return max_pool2d(x[0], 3, 2, 1).output; }},
      {"max_pool2d transposed dilated",
       {{2, 3, 9, 7}},
       [](V x) {
         return max_pool2d(x[0].transpose(2, 3), {2, 3}, 1, 1, 2, CeilMode::on).output;
       }},
      {"max_pool3d", {{2, 2, 5, 7, 6}}, [](V x) { return max_pool3d(x[0], 3, 2, 1).output; }},
      {"max_pool3d transposed anisotropic",
       {{1, 2, 4, 8, 7}},
       [](V x) {
         return max_pool3d(x[0].transpose(3, 4), {1, 2, 2}).output;
       }},
      {"avg_pool2d", {{2, 3, 9, 7}}, [](V x) { return avg_pool2d(x[0], 3, 2, 1); }},
      {"avg_pool2d ceil exclude pad",
       {{2, 3, 9, 7}},
       [](V x) {
         return avg_pool2d(x[0].transpose(2, 3), 3, 2, 1, CeilMode::on, CountIncludePad::off);
       }},
      {"adaptive_avg_pool2d",
       {{2, 3, 9, 7}},
       [](V x) {
         return adaptive_avg_pool2d(x[0], {4, 3});
       }},
      {"pad",
       {{2, 3, 5, 7}},
       [](V x) {
         return pad(x[0].transpose(2, 3), {1, 2, -1, 1}, 0.5);
       }},
      {"upsample nearest", {{2, 3, 5, 7}}, [](V x) { return upsample(x[0], 2); }},
      {"upsample bilinear",
       {{2, 3, 5, 7}},
       [](V x) { return upsample(x[0].transpose(2, 3), 3, UpsampleMode::bilinear); }},
      {"upsample bilinear align",
       {{2, 3, 5, 7}},
       [](V x) { return upsample(x[0], 2, UpsampleMode::bilinear, AlignCorners::on); }},
      {"upsample nearest 3d", {{2, 3, 3, 5, 4}}, [](V x) { return upsample(x[0], 2); }},
      {"upsample trilinear",
       {{1, 3, 3, 5, 4}},
       [](V x) { return upsample(x[0].transpose(2, 4), 2, UpsampleMode::trilinear); }},
      {"upsample trilinear align",
       {{1, 2, 3, 4, 5}},
       [](V x) { return upsample(x[0], 3, UpsampleMode::trilinear, AlignCorners::on); }},
      {"dropout",
       {{2, 3, 9, 7}},
       [](V x) {
         Generator generator(99);
         return dropout(x[0], 0.4, DropoutMode::train, generator);
       }},
  };
  for (const ShapedCase& c : cases)
    for (DType dtype : kDtypes) expect_parity(c, dtype, 2.0);
}

// A target out of range is the CPU's error, raised at the host's next wait for the GPU (here the
// read of the loss), not at the call: the kernels only flag it (core/deferred_checks.h).
TEST(GpuOpsParity, OutOfRangeTargetsFailAtTheNextRead) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable GPU on this machine";
  const Device gpu = Device::cuda(0);
  const Tensor logits = rand({4, 3}).to(gpu);
  const Tensor target = from_vector<int64_t>({0, 5, 1, 2}, {4}, {DType::i64}).to(gpu);
  for (const bool nll : {false, true}) {
    Tensor loss;
    EXPECT_NO_THROW(loss = nll ? nll_loss(logits, target) : cross_entropy(logits, target));
    EXPECT_TRUE(throws_error([&] { loss.item(); },
                             {nll ? "nll_loss" : "cross_entropy", "target 5", "C = 3"}));
    EXPECT_EQ(deferred_check_count(gpu), 0u);
  }
}

}  // namespace
}  // namespace rg
