// Every op refuses tensors on a device it cannot use, naming the op and the device. No GPU is
// needed: the "cuda:0" tensors here wrap host memory (from_blob) and are never read — an op
// must reject them before touching data. Ops with a CUDA kernel get as far as allocating their
// output on the GPU, which a machine without one refuses by name.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/config.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using testing::throws_error;

// Host memory labelled cuda:0. Each call gets its own buffer, released with the tensor.
Tensor on_gpu(const Shape& shape, DType dtype = DType::f32) {
  auto* buffer =
      new std::vector<double>(static_cast<std::size_t>(std::max<int64_t>(numel_of(shape), 1)));
  return from_blob(buffer->data(), shape, {dtype, Device::cuda(0)},
                   [buffer](void*) { delete buffer; });
}

// What stops the call: the op has no kernel for cuda (or the inputs mix devices), or the op has
// a CUDA kernel and the machine has no GPU for its output.
enum class Stop { no_kernel, no_gpu };

struct Case {
  std::string op;
  std::function<void()> call;
  Stop stop = Stop::no_kernel;
};

std::vector<Case> cases() {
  const Tensor g4 = on_gpu({2, 3, 4, 4});
  const Tensor g2 = on_gpu({2, 3});
  const Tensor c4 = ones({2, 3, 4, 4});
  const Tensor c2 = ones({2, 3});
  const Tensor labels_gpu = on_gpu({2}, DType::i64);
  const Tensor labels = zeros({2}, {DType::i64});
  return {
      {"adaptive_avg_pool2d",
       [=] {
         adaptive_avg_pool2d(g4, {1, 1});
       },
       Stop::no_gpu},
      {"add", [=] { add(g2, g2); }, Stop::no_gpu},
      {"add", [=] { add(c2, g2); }},
      {"add", [=] { add(g2, 1.0); }, Stop::no_gpu},
      {"avg_pool2d", [=] { avg_pool2d(g4, 2); }, Stop::no_gpu},
      {"batch_norm",
       [=] { batch_norm(g4, Tensor(), Tensor(), Tensor(), Tensor(), BatchNormMode::train); },
       Stop::no_gpu},
      {"batch_norm_stats", [=] { batch_norm_stats(g4); }, Stop::no_gpu},
      {"batch_norm",
       [=] { batch_norm(c4, on_gpu({3}), Tensor(), Tensor(), Tensor(), BatchNormMode::train); }},
      {"binary_cross_entropy_with_logits", [=] { binary_cross_entropy_with_logits(g2, g2); },
       Stop::no_gpu},
      {"binary_cross_entropy_with_logits", [=] { binary_cross_entropy_with_logits(g2, c2); }},
      {"cat",
       [=] {
         cat({c2, g2}, 0);
       }},
      {"cat",
       [=] {
         cat({g2, g2}, 1);
       },
       Stop::no_gpu},
      {"conv2d",
       [=] {
         conv2d(g4, on_gpu({4, 3, 3, 3}));
       },
       Stop::no_gpu},
      {"conv2d",
       [=] {
         conv2d(c4, on_gpu({4, 3, 3, 3}));
       }},
      {"conv_transpose2d",
       [=] {
         conv_transpose2d(g4, on_gpu({3, 4, 3, 3}));
       },
       Stop::no_gpu},
      {"conv3d",
       [=] {
         conv3d(on_gpu({1, 2, 3, 3, 3}), on_gpu({2, 2, 1, 1, 1}));
       },
       Stop::no_gpu},
      {"conv_transpose3d",
       [=] {
         conv_transpose3d(on_gpu({1, 2, 3, 3, 3}), on_gpu({2, 2, 2, 2, 2}));
       },
       Stop::no_gpu},
      {"cross_entropy", [=] { cross_entropy(g2, labels_gpu); }, Stop::no_gpu},
      {"cross_entropy", [=] { cross_entropy(g2, labels); }},
      {"cross_entropy", [=] { cross_entropy(c2, labels_gpu); }},
      {"div", [=] { div(g2, c2); }},
      {"dropout", [=] { dropout(g2, 0.5, DropoutMode::train); }, Stop::no_gpu},
      {"exp", [=] { exp(g2); }, Stop::no_gpu},
      {"leaky_relu", [=] { leaky_relu(g2); }, Stop::no_gpu},
      {"linear",
       [=] {
         linear(g2, on_gpu({4, 3}));
       },
       Stop::no_gpu},
      {"linear",
       [=] {
         linear(c2, on_gpu({4, 3}));
       }},
      {"log", [=] { log(g2); }, Stop::no_gpu},
      {"log_softmax", [=] { log_softmax(g2, 1); }, Stop::no_gpu},
      {"matmul",
       [=] {
         matmul(g2, on_gpu({3, 2}));
       },
       Stop::no_gpu},
      {"matmul",
       [=] {
         matmul(c2, on_gpu({3, 2}));
       }},
      {"max", [=] { max(g2); }, Stop::no_gpu},
      {"max", [=] { max(g2, 1); }, Stop::no_gpu},
      {"max_pool2d", [=] { max_pool2d(g4, 2); }, Stop::no_gpu},
      {"max_pool3d",
       [=] {
         max_pool3d(on_gpu({1, 2, 4, 4, 4}), 2);
       },
       Stop::no_gpu},
      {"mean", [=] { mean(g2); }, Stop::no_gpu},
      {"mse_loss", [=] { mse_loss(g2, c2); }},
      {"mse_loss", [=] { mse_loss(g2, g2); }, Stop::no_gpu},
      {"mul", [=] { mul(g2, g2); }, Stop::no_gpu},
      {"neg", [=] { neg(g2); }, Stop::no_gpu},
      {"nll_loss", [=] { nll_loss(g2, labels); }},
      {"nll_loss", [=] { nll_loss(g2, labels_gpu); }, Stop::no_gpu},
      {"pad",
       [=] {
         pad(g4, {1, 1});
       },
       Stop::no_gpu},
      {"pow", [=] { pow(g2, 2.0); }, Stop::no_gpu},
      {"relu", [=] { relu(g2); }, Stop::no_gpu},
      {"sigmoid", [=] { sigmoid(g2); }, Stop::no_gpu},
      {"softmax", [=] { softmax(g2, 1); }, Stop::no_gpu},
      {"sqrt", [=] { sqrt(g2); }, Stop::no_gpu},
      {"sub", [=] { sub(g2, c2); }},
      {"sum", [=] { sum(g2); }, Stop::no_gpu},
      {"tanh", [=] { tanh(g2); }, Stop::no_gpu},
      {"upsample", [=] { upsample(g4, 2); }, Stop::no_gpu},
      {"upsample trilinear",
       [=] {
         upsample(on_gpu({1, 2, 2, 3, 4}), 2, UpsampleMode::trilinear);
       },
       Stop::no_gpu},
  };
}

TEST(OpsOnDevices, EveryOpRejectsTensorsItCannotUse) {
  for (const Case& c : cases()) {
    if (c.stop == Stop::no_kernel) {
      EXPECT_TRUE(throws_error(c.call, {c.op, "cuda:0"})) << c.op;
    } else if (!kWithCuda) {
      // The output's allocation on cuda:0 is refused before any kernel is chosen.
      EXPECT_TRUE(throws_error(c.call, {"cuda:0", "no CUDA backend"})) << c.op;
    } else if (cuda_device_count() == 0) {
      EXPECT_TRUE(throws_error(c.call, {"cuda:0", "no usable GPU"})) << c.op;
    }  // with a GPU, these ops run: the GPU parity tests check them on real device memory
  }
}

}  // namespace
}  // namespace rg
