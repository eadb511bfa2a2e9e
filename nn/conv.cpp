#include "nn/conv.h"

#include <cmath>
#include <sstream>

#include "nn/init.h"
#include "ops/conv/conv.h"

namespace rg::nn {

namespace {

// "3" when every axis agrees, else "(3, 1)" — as PyTorch prints a layer.
template <int N>
std::string size_str(const SizeN<N>& s) {
  bool same = true;
  for (int64_t v : s) same = same && v == s[0];
  if (same) return std::to_string(s[0]);
  std::string text = "(";
  for (int a = 0; a < N; ++a) text += (a ? ", " : "") + std::to_string(s[a]);
  return text + ")";
}

template <int N>
SizeN<N> kernel_of(const Tensor& weight) {
  SizeN<N> k{};
  for (int a = 0; a < N; ++a) k[a] = weight.size(2 + a);
  return k;
}

void check_channels(const std::string& layer, int64_t in, int64_t out, int64_t groups) {
  RG_CHECK(in > 0 && out > 0 && groups > 0 && in % groups == 0 && out % groups == 0, layer,
           ": in (", in, ") and out (", out, ") channels must be positive multiples of groups (",
           groups, ")");
}

// (a, b, k1..kN)
template <int N>
Shape weight_shape(int64_t a, int64_t b, const SizeN<N>& kernel) {
  Shape s{a, b};
  s.insert(s.end(), kernel.begin(), kernel.end());
  return s;
}

// PyTorch's default for biases: U(±1/sqrt(fan_in)) of the layer's weight.
Tensor fan_in_uniform(int64_t size, const Tensor& weight) {
  Tensor t = empty({size});
  const double bound =
      1.0 / std::sqrt(static_cast<double>(init::fan(weight, init::FanMode::fan_in)));
  init::uniform_(t, -bound, bound);
  return t;
}

}  // namespace

template <int N>
ConvNd<N>::ConvNd(int64_t in, int64_t out, SizeN<N> kernel, const ConvOptions<N>& options)
    : options_(options) {
  check_channels(type_name(), in, out, options.groups);
  weight_ = empty(weight_shape<N>(out, in / options.groups, kernel));
  init::kaiming_normal_(weight_, init::FanMode::fan_out);
  register_parameter("weight", &weight_);
  if (options.bias == Bias::with) {
    bias_ = fan_in_uniform(out, weight_);
    register_parameter("bias", &bias_);
  }
}

template <int N>
Tensor ConvNd<N>::forward(const Tensor& x) {
  const ConvOptions<N>& o = options_;
  return convolution<N>(x, weight_, bias_, {o.stride, o.padding, o.dilation, o.groups});
}

template <int N>
std::string ConvNd<N>::type_name() const {
  return "Conv" + std::to_string(N) + "d";
}

template <int N>
std::string ConvNd<N>::extra_repr() const {
  std::ostringstream s;
  s << weight_.size(1) * options_.groups << ", " << weight_.size(0)
    << ", kernel=" << size_str<N>(kernel_of<N>(weight_))
    << ", stride=" << size_str<N>(options_.stride) << ", padding=" << size_str<N>(options_.padding);
  if (options_.groups != 1) s << ", groups=" << options_.groups;
  if (!bias_.defined()) s << ", bias=false";
  return s.str();
}

template <int N>
ConvTransposeNd<N>::ConvTransposeNd(int64_t in, int64_t out, SizeN<N> kernel,
                                    const ConvTransposeOptions<N>& options)
    : options_(options) {
  check_channels(type_name(), in, out, options.groups);
  weight_ = empty(weight_shape<N>(in, out / options.groups, kernel));
  init::kaiming_uniform_(weight_, std::sqrt(5.0));
  register_parameter("weight", &weight_);
  if (options.bias == Bias::with) {
    bias_ = fan_in_uniform(out, weight_);
    register_parameter("bias", &bias_);
  }
}

template <int N>
Tensor ConvTransposeNd<N>::forward(const Tensor& x) {
  const ConvTransposeOptions<N>& o = options_;
  return convolution_transpose<N>(x, weight_, bias_, {o.stride, o.padding, o.dilation, o.groups},
                                  o.output_padding);
}

template <int N>
std::string ConvTransposeNd<N>::type_name() const {
  return "ConvTranspose" + std::to_string(N) + "d";
}

template <int N>
std::string ConvTransposeNd<N>::extra_repr() const {
  std::ostringstream s;
  s << weight_.size(0) << ", " << weight_.size(1) * options_.groups
    << ", kernel=" << size_str<N>(kernel_of<N>(weight_))
    << ", stride=" << size_str<N>(options_.stride);
  if (!bias_.defined()) s << ", bias=false";
  return s.str();
}

template class ConvNd<2>;
template class ConvNd<3>;
template class ConvTransposeNd<2>;
template class ConvTransposeNd<3>;

}  // namespace rg::nn
