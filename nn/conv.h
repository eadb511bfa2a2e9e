#pragma once
// The convolution layers, written once for N spatial dimensions: Conv2d and Conv3d are
// ConvNd<2> and ConvNd<3>, ConvTranspose2d and ConvTranspose3d are ConvTransposeNd<2> and <3>.
// Each holds its weight and bias as named members (the keys of PyTorch's layers) and calls the
// op of its rank (ops/conv/conv.h: conv2d, conv3d, conv_transpose2d, conv_transpose3d).
//
//   ConvNd<N>:          x (B, C, S1..SN) -> (B, O, ...);  weight (O, C/groups, k1..kN)
//   ConvTransposeNd<N>: x (B, C, S1..SN) -> (B, O, ...);  weight (C, O/groups, k1..kN)

#include "nn/module.h"
#include "ops/conv/conv.h"

namespace rg::nn {

enum class Bias { with, without };

template <int N>
using SizeN = ConvSize<N>;  // one value per spatial axis, outermost first
using Size2 = SizeN<2>;     // {height, width}
using Size3 = SizeN<3>;     // {depth, height, width}

template <int N>
struct ConvOptions {
  SizeN<N> stride = same_on_every_axis<N>(1), padding = same_on_every_axis<N>(0),
           dilation = same_on_every_axis<N>(1);
  int64_t groups = 1;
  Bias bias = Bias::with;
};

template <int N>
struct ConvTransposeOptions {
  SizeN<N> stride = same_on_every_axis<N>(1), padding = same_on_every_axis<N>(0),
           output_padding = same_on_every_axis<N>(0), dilation = same_on_every_axis<N>(1);
  int64_t groups = 1;
  Bias bias = Bias::with;
};

// Options are taken by const reference: passed by value, a designated-initialised
// ConvTranspose3dOptions{.stride = {2, 2, 2}} once arrived with a corrupted padding in the
// -march=native (AVX-512) build with GCC 12 (tests/nn/compiler_test.cpp keeps watch).
//
// Weight initialised Kaiming-normal with fan_out (ResNet's choice); bias U(±1/sqrt(fan_in)) as
// PyTorch.
template <int N>
class ConvNd : public Module {
 public:
  ConvNd(int64_t in, int64_t out, SizeN<N> kernel, const ConvOptions<N>& options = {});
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override;  // "Conv2d" or "Conv3d"
  std::string extra_repr() const override;
  Tensor weight_, bias_;

 private:
  ConvOptions<N> options_;
};

// PyTorch's default init (Kaiming-uniform, a = sqrt(5)); bias U(±1/sqrt(fan_in)).
template <int N>
class ConvTransposeNd : public Module {
 public:
  ConvTransposeNd(int64_t in, int64_t out, SizeN<N> kernel,
                  const ConvTransposeOptions<N>& options = {});
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override;  // "ConvTranspose2d" or "ConvTranspose3d"
  std::string extra_repr() const override;
  Tensor weight_, bias_;

 private:
  ConvTransposeOptions<N> options_;
};

using Conv2d = ConvNd<2>;
using Conv3d = ConvNd<3>;
using Conv2dOptions = ConvOptions<2>;
using Conv3dOptions = ConvOptions<3>;
using ConvTranspose2d = ConvTransposeNd<2>;
using ConvTranspose3d = ConvTransposeNd<3>;
using ConvTranspose2dOptions = ConvTransposeOptions<2>;
using ConvTranspose3dOptions = ConvTransposeOptions<3>;

extern template class ConvNd<2>;
extern template class ConvNd<3>;
extern template class ConvTransposeNd<2>;
extern template class ConvTransposeNd<3>;

}  // namespace rg::nn
