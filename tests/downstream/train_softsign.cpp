// A downstream program on the installed ringgrad: checks its own op (softsign, ops/softsign)
// against the same math composed of ringgrad's ops, forward and backward, then trains a small
// MLP that uses it to fit y = sin(2x) on [-2, 2] (SGD on the library's cosine schedule, from
// train/), and fails unless the loss falls 20-fold. Where the package has CUDA and the machine a
// GPU, the op's CUDA kernel (ops/softsign/softsign_cuda.cu) must also match its CPU loop.
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "nn/layers.h"
#include "nn/loss.h"
#include "ops/ops.h"
#include "ops/softsign/softsign.h"
#include "optim/sgd.h"
#include "train/schedule.h"

namespace {

// The op as a module, so it sits in a Sequential like nn::ReLU.
class Softsign : public rg::nn::Module {
 public:
  rg::Tensor forward(const rg::Tensor& x) override { return my::softsign(x); }
  std::string type_name() const override { return "Softsign"; }
};

double max_abs_diff(const rg::Tensor& a, const rg::Tensor& b) {
  const std::vector<double> u = a.to(rg::DType::f64).to_vector<double>();
  const std::vector<double> v = b.to(rg::DType::f64).to_vector<double>();
  double worst = 0;
  for (std::size_t i = 0; i < u.size(); ++i) worst = std::max(worst, std::abs(u[i] - v[i]));
  return worst;
}

// softsign against x / (1 + sqrt(x²)) built from ringgrad's ops, in f64 (inputs away from 0,
// where sqrt's derivative is infinite).
bool matches_composition() {
  rg::manual_seed(1);
  const rg::Tensor v = rg::add(rg::mul(rg::rand({7, 9}, {rg::DType::f64}), 6.0), 0.25);
  const rg::Tensor signs = rg::sub(rg::mul(rg::rand({7, 9}, {rg::DType::f64}), 2.0), 1.0);
  const rg::Tensor values = rg::mul(v, rg::div(signs, rg::sqrt(rg::mul(signs, signs))));
  rg::Tensor a = values.clone().set_requires_grad(true);
  rg::Tensor b = values.clone().set_requires_grad(true);
  const rg::Tensor ya = my::softsign(a);
  const rg::Tensor yb = rg::div(b, rg::add(rg::sqrt(rg::mul(b, b)), 1.0));
  const rg::Tensor gy = rg::rand({7, 9}, {rg::DType::f64});
  ya.backward(gy);
  yb.backward(gy);
  const double dy = max_abs_diff(ya, yb), dg = max_abs_diff(a.grad(), b.grad());
  std::printf("softsign vs composition: forward %.2e, backward %.2e\n", dy, dg);
  return dy < 1e-14 && dg < 1e-14;
}

// The CUDA kernel against the CPU loop, forward and backward, in f32 and f64: the same functor
// on both sides, so the only differences are the device's rounding (none expected: one IEEE
// division and one addition per element).
bool gpu_matches_cpu() {
  if (rg::cuda_device_count() == 0) {
    std::printf("softsign on a GPU: no GPU here, the CUDA kernel is not run\n");
    return true;
  }
  bool ok = true;
  for (rg::DType dtype : {rg::DType::f32, rg::DType::f64}) {
    rg::manual_seed(2);
    const rg::Tensor values = rg::mul(rg::sub(rg::rand({4099}, {dtype}), 0.5), 20.0);
    const rg::Tensor gy = rg::rand({4099}, {dtype});
    const rg::Device gpu = rg::Device::cuda(0);
    rg::Tensor a = values.clone().set_requires_grad(true);
    rg::Tensor b = values.to(gpu).set_requires_grad(true);
    const rg::Tensor ya = my::softsign(a), yb = my::softsign(b);
    ya.backward(gy);
    yb.backward(gy.to(gpu));
    const double dy = max_abs_diff(ya, yb.to(rg::Device::cpu()));
    const double dg = max_abs_diff(a.grad(), b.grad().to(rg::Device::cpu()));
    std::printf("softsign on %s vs the CPU, %s: forward %.2e, backward %.2e\n",
                yb.device().str().c_str(), std::string(rg::dtype_name(dtype)).c_str(), dy, dg);
    ok = ok && yb.device() == gpu && dy <= 1e-6 && dg <= 1e-6;
  }
  return ok;
}

}  // namespace

int main() {
  try {
    if (!matches_composition()) {
      std::fprintf(stderr, "FAIL: softsign differs from its composition\n");
      return 1;
    }
    if (!gpu_matches_cpu()) {
      std::fprintf(stderr, "FAIL: softsign's CUDA kernel differs from its CPU loop\n");
      return 1;
    }
    rg::manual_seed(0);
    const int64_t n = 256;
    const rg::Tensor x = rg::sub(rg::mul(rg::rand({n, 1}), 4.0), 2.0);
    std::vector<float> targets;
    for (float v : x.to_vector<float>()) targets.push_back(std::sin(2 * v));
    const rg::Tensor y = rg::from_vector<float>(targets, {n, 1});
    auto model = std::make_shared<rg::nn::Sequential>(std::vector<std::shared_ptr<rg::nn::Module>>{
        std::make_shared<rg::nn::Linear>(1, 32), std::make_shared<Softsign>(),
        std::make_shared<rg::nn::Linear>(32, 32), std::make_shared<Softsign>(),
        std::make_shared<rg::nn::Linear>(32, 1)});
    rg::SGD sgd(model->parameters(), {.lr = 0.05, .momentum = 0.9});
    // The library's schedules (train/, in the package too): cosine over the 400 steps.
    const auto schedule = rg::train::make_schedule({.name = "cosine"}, sgd, 400);
    double first = 0, last = 0;
    for (int step = 0; step < 400; ++step) {
      sgd.zero_grad();
      const rg::Tensor loss = rg::mse_loss(model->forward(x), y);
      loss.backward();
      sgd.step();
      schedule->step();
      last = loss.item();
      if (step == 0) first = last;
      if (step % 100 == 0) std::printf("step %3d  loss %.5f\n", step, last);
    }
    std::printf("loss %.5f -> %.5f\n", first, last);
    if (!(last < first / 20)) {
      std::fprintf(stderr, "FAIL: the loss did not fall 20-fold\n");
      return 1;
    }
    std::printf("downstream: OK\n");
    return 0;
  } catch (const rg::Error& e) {
    std::fprintf(stderr, "FAIL: %s\n", e.what());
    return 1;
  }
}
