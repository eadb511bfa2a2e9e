// CPU vs CUDA parity, forward and backward, for every op that runs on a GPU: each sample of its
// spec (ops/<op>/<op>_spec.cpp, tests/support/op_spec.h) in each of its dtypes, one test per op
// (`Spec/OnGpu.MatchesTheCpu/conv2d`). Where there is no GPU every test skips, saying so (CTest
// label `gpu`); the custom kernels run through the emulator in tests/kernels/ everywhere.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/deferred_checks.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/op_spec.h"

namespace rg::testing {
namespace {

// Runs op on the CPU and on the GPU from the same values (given in f64) converted to dtype, and
// compares the outputs and every input's gradient.
void expect_parity(const std::string& name, const std::vector<Tensor>& values, const Call& op,
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
  if (!y_cpu.requires_grad()) return;  // an op without a gradient (count_correct): outputs only
  const Tensor g = rand(y_cpu.shape(), {DType::f64}).to(dtype);
  y_cpu.backward(g);
  y_gpu.backward(g.to(gpu));
  for (std::size_t k = 0; k < values.size(); ++k)
    EXPECT_TRUE(all_close(gpu_in[k].grad().to(Device::cpu()), cpu_in[k].grad(), tol, tol))
        << name << " " << dtype << " grad " << k;
}

// The sample on values drawn uniformly from its range, in each of the spec's dtypes.
void expect_parity(const OpSpec& spec, const Sample& sample) {
  for (DType dtype : spec.dtypes) {
    std::vector<Tensor> values;
    for (const Shape& shape : sample.shapes) values.push_back(uniform(shape, sample.range));
    expect_parity(spec.name + " " + sample.label, values, sample.call, dtype);
  }
}

std::vector<std::string> ops_on_gpus() {
  std::vector<std::string> names;
  for (const OpSpec& s : all_specs())
    if (s.cuda == CudaKernel::yes && !s.samples.empty()) names.push_back(s.name);
  return names;
}

class OnGpu : public ::testing::TestWithParam<std::string> {};

TEST_P(OnGpu, MatchesTheCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable GPU on this machine";
  const OpSpec& s = spec(GetParam());
  for (const Sample& sample : s.samples) expect_parity(s, sample);
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OnGpu);
INSTANTIATE_TEST_SUITE_P(Spec, OnGpu, ::testing::ValuesIn(ops_on_gpus()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// With benchmark_convolutions() each problem runs through the fastest of several cuDNN plans,
// chosen by timing them on its first run: other engines, the same results.
TEST(GpuOpsParity, BenchmarkedConvolutionsMatchTheCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable GPU on this machine";
  struct BenchmarkMode {  // off again whatever happens in the test
    BenchmarkMode() { set_benchmark_convolutions(true); }
    ~BenchmarkMode() { set_benchmark_convolutions(false); }
  } mode;
  for (const OpSpec& s : all_specs())
    if (s.name.find("conv") != std::string::npos)
      for (const Sample& sample : s.samples) expect_parity(s, sample);
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
}  // namespace rg::testing
