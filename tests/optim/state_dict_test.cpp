// Checkpoints: an optimizer and its scheduler saved to a safetensors file, loaded into fresh
// ones, continue exactly like the uninterrupted run; malformed checkpoints are refused.

#include <gtest/gtest.h>

#include "core/safetensors.h"
#include "optim/optim.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

std::vector<Tensor> make_params(const std::vector<Shape>& shapes, DType dtype = DType::f32) {
  std::vector<Tensor> params;
  for (const Shape& s : shapes) {
    Tensor p = randn(s, {dtype});
    p.set_requires_grad(true);
    params.push_back(p);
  }
  return params;
}

std::vector<Tensor> clones(const std::vector<Tensor>& params) {
  std::vector<Tensor> out;
  for (const Tensor& p : params) {
    Tensor c = p.detach().clone();
    c.set_requires_grad(true);
    out.push_back(c);
  }
  return out;
}

// Gradients of step k, the same for every run; parameter 1 gets none on odd steps.
void set_grads(std::vector<Tensor>& params, int k) {
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (i == 1 && k % 2) {
      params[i].zero_grad();
      continue;
    }
    Tensor g =
        full(params[i].shape(), 0.1 * (k + 1) - 0.05 * static_cast<double>(i), {params[i].dtype()});
    params[i].set_grad(g);
  }
}

void save(const std::string& path, const Optimizer& opt, const LRScheduler& sched,
          const std::vector<Tensor>& params) {
  StateDict sd = opt.state_dict();
  for (const auto& [k, v] : sched.state_dict()) sd.metadata[k] = v;
  for (std::size_t i = 0; i < params.size(); ++i)
    sd.tensors["model.p" + std::to_string(i)] = params[i];  // a real checkpoint holds the model too
  save_safetensors(path, sd.tensors, sd.metadata);
}

using MakeOpt = std::function<std::unique_ptr<Optimizer>(const std::vector<Tensor>&)>;
using MakeSched = std::function<std::unique_ptr<LRScheduler>(Optimizer&)>;

// Runs 3 + 4 steps uninterrupted, and 3 steps, a checkpoint, a fresh optimizer and scheduler
// (made with `make_fresh`, other hyperparameters) loading it, 4 more steps: bitwise equal.
void check_resume(const MakeOpt& make, const MakeOpt& make_fresh, const MakeSched& sched_of,
                  DType dtype = DType::f32) {
  std::vector<Tensor> a = make_params({{3, 4}, {5}, {2, 2}}, dtype);
  std::vector<Tensor> b = clones(a);
  auto opt_a = make(a);
  auto sched_a = sched_of(*opt_a);
  auto opt_b = make(b);
  auto sched_b = sched_of(*opt_b);
  for (int k = 0; k < 3; ++k) {
    set_grads(a, k);
    set_grads(b, k);
    opt_a->step();
    opt_b->step();
    sched_a->step();
    sched_b->step();
  }
  const std::string path = rg::testing::temp_path("optim_resume.safetensors");
  save(path, *opt_b, *sched_b, b);

  const SafetensorsFile file = load_safetensors(path);
  std::vector<Tensor> c;
  for (std::size_t i = 0; i < a.size(); ++i) {
    Tensor p = file.tensors.at("model.p" + std::to_string(i)).clone();
    p.set_requires_grad(true);
    c.push_back(p);
  }
  auto opt_c = make_fresh(c);
  auto sched_c = sched_of(*opt_c);
  opt_c->load_state_dict({file.tensors, file.metadata});
  sched_c->load_state_dict(file.metadata);
  for (std::size_t g = 0; g < opt_a->num_groups(); ++g) EXPECT_EQ(opt_c->lr(g), opt_a->lr(g));
  for (int k = 3; k < 7; ++k) {
    set_grads(a, k);
    set_grads(c, k);
    opt_a->step();
    opt_c->step();
    sched_a->step();
    sched_c->step();
    for (std::size_t i = 0; i < a.size(); ++i)
      EXPECT_TRUE(all_close(c[i], a[i], 0, 0)) << "parameter " << i << " after step " << k;
  }
}

TEST(OptimizerStateDict, SGDResumesExactly) {
  auto make = [](const std::vector<Tensor>& ps) {
    return std::make_unique<SGD>(std::vector<ParamGroup<SGDOptions>>{
        {{ps[0], ps[1]}, {.lr = 0.1, .momentum = 0.9, .nesterov = Nesterov::on}},
        {{ps[2]}, {.lr = 0.05, .momentum = 0.5, .dampening = 0.1, .weight_decay = 0.01}}});
  };
  auto fresh = [](const std::vector<Tensor>& ps) {
    return std::make_unique<SGD>(std::vector<ParamGroup<SGDOptions>>{
        {{ps[0], ps[1]}, {.lr = 1, .momentum = 0.1}}, {{ps[2]}, {.lr = 1}}});
  };
  check_resume(make, fresh, [](Optimizer& o) {
    return std::make_unique<MultiStepLR>(o, std::vector<int64_t>{2, 5}, 0.5);
  });
}

TEST(OptimizerStateDict, AdamWResumesExactly) {
  auto make = [](const std::vector<Tensor>& ps) {
    return std::make_unique<AdamW>(std::vector<ParamGroup<AdamWOptions>>{
        {{ps[0]}, {.lr = 0.01}}, {{ps[1], ps[2]}, {.lr = 0.02, .amsgrad = AmsGrad::on}}});
  };
  auto fresh = [](const std::vector<Tensor>& ps) {
    return std::make_unique<AdamW>(std::vector<ParamGroup<AdamWOptions>>{
        {{ps[0]}, {.lr = 1, .beta1 = 0.5}}, {{ps[1], ps[2]}, {.lr = 1}}});
  };
  check_resume(make, fresh, [](Optimizer& o) {
    return std::make_unique<LinearWarmup>(o, std::make_unique<CosineAnnealingLR>(o, 10), 2);
  });
  check_resume(
      make, fresh, [](Optimizer& o) { return std::make_unique<OneCycleLR>(o, 0.05, 12); },
      DType::f64);
}

TEST(OptimizerStateDict, Layout) {
  std::vector<Tensor> ps = make_params({{2}, {3}});
  AdamW opt(std::vector<ParamGroup<AdamWOptions>>{{{ps[0]}, {.lr = 0.5}},
                                                  {{ps[1]}, {.amsgrad = AmsGrad::on}}});
  ps[1].set_grad(ones({3}));
  opt.step();
  const StateDict sd = opt.state_dict();
  std::vector<std::string> keys;
  for (const auto& [k, v] : sd.tensors) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"optim.state.1.exp_avg", "optim.state.1.exp_avg_sq",
                                            "optim.state.1.max_exp_avg_sq"}));
  EXPECT_EQ(sd.metadata.at("optim.type"), "AdamW");
  EXPECT_EQ(sd.metadata.at("optim.state.1.step"), "1");
  EXPECT_EQ(sd.metadata.count("optim.state.0.step"), 0u);  // never updated: no state
  const std::string groups = sd.metadata.at("optim.param_groups");
  EXPECT_NE(groups.find("\"lr\":0.5"), std::string::npos) << groups;
  EXPECT_NE(groups.find("\"amsgrad\":true"), std::string::npos) << groups;
  EXPECT_NE(groups.find("\"params\":[1]"), std::string::npos) << groups;
  // A snapshot: further steps do not change it.
  opt.step();
  EXPECT_TRUE(all_close(sd.tensors.at("optim.state.1.exp_avg"), full({3}, 0.1), 1e-7, 0));
}

TEST(OptimizerStateDict, StateFollowsTheParameterDtype) {
  std::vector<Tensor> f32 = make_params({{4}}), f64 = make_params({{4}}, DType::f64);
  SGD a(f32, {.lr = 0.1, .momentum = 0.9});
  f32[0].set_grad(ones({4}));
  a.step();
  SGD b(f64, {.lr = 0.1, .momentum = 0.9});
  b.load_state_dict(a.state_dict());
  EXPECT_EQ(b.state_dict().tensors.at("optim.state.0.momentum_buffer").dtype(), DType::f64);
}

// A valid SGD checkpoint over parameters [2, 3] and [4] with momentum state, to break.
struct Checkpoint {
  std::vector<Tensor> ps = make_params({{2, 3}, {4}});
  SGD opt{ps, {.lr = 0.1, .momentum = 0.9}};
  StateDict sd;
  Checkpoint() {
    ps[0].set_grad(ones({2, 3}));
    ps[1].set_grad(ones({4}));
    opt.step();
    sd = opt.state_dict();
  }
};

TEST(OptimizerStateDict, RefusesMismatchedCheckpoints) {
  Checkpoint ck;
  std::vector<Tensor> ps = make_params({{2, 3}, {4}});
  SGD opt(ps, {.lr = 0.7, .momentum = 0.9});
  auto refused = [&](StateDict sd, std::vector<std::string> parts) {
    parts.insert(parts.begin(), "SGD.load_state_dict");
    return throws_error([&] { opt.load_state_dict(sd); }, parts);
  };
  StateDict sd = ck.sd;
  sd.metadata["optim.type"] = "AdamW";
  EXPECT_TRUE(refused(sd, {"'AdamW' optimizer"}));
  sd = ck.sd;
  sd.metadata.erase("optim.param_groups");
  EXPECT_TRUE(refused(sd, {"'optim.param_groups' is missing"}));
  sd = ck.sd;
  sd.metadata["optim.param_groups"] = "[{";
  EXPECT_TRUE(refused(sd, {"not valid JSON"}));
  sd = ck.sd;
  sd.tensors["optim.state.1.momentum_buffer"] = zeros({5});
  EXPECT_TRUE(refused(sd, {"'optim.state.1.momentum_buffer'", "[5] f32 cpu", "[4] f32 cpu"}));
  sd = ck.sd;
  sd.tensors["optim.state.0.velocity"] = zeros({2, 3});
  EXPECT_TRUE(refused(sd, {"unexpected tensor 'optim.state.0.velocity'"}));
  sd = ck.sd;
  sd.tensors["optim.state.7.momentum_buffer"] = zeros({2, 3});
  EXPECT_TRUE(refused(sd, {"parameter 7", "has 2 parameters"}));
  sd = ck.sd;
  sd.tensors["optim.extra"] = zeros({1});
  EXPECT_TRUE(refused(sd, {"unexpected tensor 'optim.extra'"}));
  sd = ck.sd;
  sd.metadata["optim.state.0.step"] = "3";  // SGD counts no steps
  EXPECT_TRUE(refused(sd, {"unexpected metadata 'optim.state.0.step'"}));
  sd = ck.sd;
  sd.metadata["optim.param_groups"] = R"([{"lr":-1,"momentum":0.9,"dampening":0,)"
                                      R"("weight_decay":0,"nesterov":false,"params":[0,1]}])";
  EXPECT_TRUE(refused(sd, {"learning rate -1"}));
  sd = ck.sd;
  sd.metadata["optim.param_groups"] = R"([{"lr":0.1,"params":[0,1]}])";
  EXPECT_TRUE(refused(sd, {"parameter group 0", "momentum"}));
  sd = ck.sd;
  sd.metadata["optim.param_groups"] = R"([{"lr":0.1,"momentum":0,"dampening":0,)"
                                      R"("weight_decay":0,"nesterov":false,"params":[0,1]}])";
  EXPECT_TRUE(refused(sd, {"unexpected tensor 'optim.state.0.momentum_buffer'"}));
  // Every refusal left the optimizer as it was.
  EXPECT_EQ(opt.lr(0), 0.7);
  EXPECT_EQ(opt.options(0).momentum, 0.9);
  EXPECT_EQ(opt.state_dict().tensors.size(), 0u);

  // Other parameter lists.
  SGD three(make_params({{2, 3}, {4}, {1}}), {.lr = 0.1, .momentum = 0.9});
  EXPECT_TRUE(throws_error([&] { three.load_state_dict(ck.sd); },
                           {"group 0 has 2 parameters in the checkpoint but 3"}));
  std::vector<Tensor> qs = make_params({{2, 3}, {4}});
  SGD two_groups(std::vector<ParamGroup<SGDOptions>>{{{qs[0]}, {}}, {{qs[1]}, {}}});
  EXPECT_TRUE(
      throws_error([&] { two_groups.load_state_dict(ck.sd); }, {"1 parameter groups", "has 2"}));
  AdamW adamw(make_params({{2, 3}, {4}}), {});
  EXPECT_TRUE(throws_error([&] { adamw.load_state_dict(ck.sd); },
                           {"AdamW.load_state_dict", "'SGD' optimizer, not 'AdamW'"}));
}

TEST(OptimizerStateDict, RefusesIncompleteAdamWState) {
  std::vector<Tensor> ps = make_params({{3}});
  AdamW opt(ps, {.amsgrad = AmsGrad::on});
  ps[0].set_grad(ones({3}));
  opt.step();
  StateDict sd = opt.state_dict();
  sd.tensors.erase("optim.state.0.max_exp_avg_sq");
  EXPECT_TRUE(throws_error([&] { opt.load_state_dict(sd); },
                           {"'optim.state.0.max_exp_avg_sq' is missing"}));
  sd = opt.state_dict();
  sd.metadata.erase("optim.state.0.step");
  EXPECT_TRUE(throws_error([&] { opt.load_state_dict(sd); }, {"'optim.state.0.step' is missing"}));
  sd = opt.state_dict();
  sd.metadata["optim.state.0.step"] = "-2";
  EXPECT_TRUE(throws_error([&] { opt.load_state_dict(sd); }, {"non-negative integer", "-2"}));
}

}  // namespace
}  // namespace rg
