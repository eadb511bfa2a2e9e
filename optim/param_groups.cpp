#include "optim/param_groups.h"

#include <algorithm>

#include "core/error.h"
#include "nn/layers.h"

namespace rg {

std::vector<ParamGroup<SGDOptions>> norm_bias_groups(nn::Module& model,
                                                     const std::vector<Tensor>& params,
                                                     const SGDOptions& options, double scale) {
  RG_CHECK(scale > 0, "norm_bias_groups: scale must be > 0, got ", scale);
  if (scale == 1) return {{params, options}};
  // The BatchNorm biases, by identity: a model may name its layers anything.
  std::vector<Tensor> norm_biases;
  for (auto& [name, module] : model.named_modules())
    if (auto* norm = dynamic_cast<nn::BatchNorm2d*>(module)) norm_biases.push_back(norm->bias_);
  const auto named = model.named_parameters();
  RG_CHECK(named.size() == params.size(), "norm_bias_groups: ", params.size(),
           " parameters given for a model of ", named.size());
  ParamGroup<SGDOptions> rest{{}, options}, biases{{}, options};
  biases.options.lr = options.lr * scale;
  biases.options.weight_decay = options.weight_decay / scale;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Tensor& own = named[i].second;
    const bool is_bias = std::any_of(norm_biases.begin(), norm_biases.end(),
                                     [&](const Tensor& b) { return b.same_as(own); });
    (is_bias ? biases : rest).params.push_back(params[i]);
  }
  RG_CHECK(!biases.params.empty() && !rest.params.empty(), "norm_bias_groups: the model has ",
           biases.params.size(), " BatchNorm biases and ", rest.params.size(),
           " other parameters; scaling the biases' lr needs both");
  // The rest first: group 0's lr is the one the epoch summary shows.
  return {rest, biases};
}

}  // namespace rg
