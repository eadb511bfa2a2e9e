// cuDNN execution plans for every convolution the bundled models run, built here without a GPU
// from committed device descriptions (tests/fixtures/cudnn/): forward, backward-data and
// backward-filter of ResNet18's convolutions, the UNets' 2-D and 3-D convolutions and their
// transposed-convolution decoders, in f32, f16 and bf16, on an H100 and an A100 (described from
// NVIDIA's specifications) and an H200 (read from one by apps/cudnn_device_json). CUDA builds.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/device.h"
#include "ops/conv/cudnn/conv_plan.h"
#include "ops/conv/cudnn/conv_run.h"
#include "tests/support/fixtures.h"

namespace rg::cuda {
namespace {
using rg::testing::throws_error;

const CudnnDescriptor& device(const std::string& file) {
  static std::map<std::string, CudnnDescriptor> devices;
  auto it = devices.find(file);
  if (it == devices.end()) {
    std::ifstream in(std::string(RG_FIXTURE_DIR) + "/cudnn/" + file);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_FALSE(text.str().empty()) << file;
    it = devices.emplace(file, device_properties_from_json(text.str(), file)).first;
  }
  return it->second;
}

struct Conv {
  std::string name;
  Shape x, w;
  std::vector<int64_t> stride, padding;
};

// The distinct convolutions of ResNet18 on CIFAR-10 (batch 128), and of the UNets: 2-D on
// 128×128 images, 3-D on the seeds' 32×160×160 volumes cut to 16×64×64 crops.
std::vector<Conv> model_convolutions() {
  return {
      {"resnet18 stem", {128, 3, 32, 32}, {64, 3, 3, 3}, {1, 1}, {1, 1}},
      {"resnet18 layer1", {128, 64, 32, 32}, {64, 64, 3, 3}, {1, 1}, {1, 1}},
      {"resnet18 layer2 down", {128, 64, 32, 32}, {128, 64, 3, 3}, {2, 2}, {1, 1}},
      {"resnet18 layer2", {128, 128, 16, 16}, {128, 128, 3, 3}, {1, 1}, {1, 1}},
      {"resnet18 layer2 shortcut", {128, 64, 32, 32}, {128, 64, 1, 1}, {2, 2}, {0, 0}},
      {"resnet18 layer3 down", {128, 128, 16, 16}, {256, 128, 3, 3}, {2, 2}, {1, 1}},
      {"resnet18 layer3", {128, 256, 8, 8}, {256, 256, 3, 3}, {1, 1}, {1, 1}},
      {"resnet18 layer3 shortcut", {128, 128, 16, 16}, {256, 128, 1, 1}, {2, 2}, {0, 0}},
      {"resnet18 layer4 down", {128, 256, 8, 8}, {512, 256, 3, 3}, {2, 2}, {1, 1}},
      {"resnet18 layer4", {128, 512, 4, 4}, {512, 512, 3, 3}, {1, 1}, {1, 1}},
      {"resnet18 layer4 shortcut", {128, 256, 8, 8}, {512, 256, 1, 1}, {2, 2}, {0, 0}},
      {"mobilenetv2 depthwise", {128, 96, 16, 16}, {96, 1, 3, 3}, {1, 1}, {1, 1}},
      {"unet2d inc", {8, 3, 128, 128}, {64, 3, 3, 3}, {1, 1}, {1, 1}},
      {"unet2d bottom", {8, 512, 8, 8}, {1024, 512, 3, 3}, {1, 1}, {1, 1}},
      {"unet2d out 1x1", {8, 64, 128, 128}, {2, 64, 1, 1}, {1, 1}, {0, 0}},
      {"unet3d inc", {2, 1, 16, 64, 64}, {32, 1, 3, 3, 3}, {1, 1, 1}, {1, 1, 1}},
      {"unet3d bottom", {2, 256, 2, 8, 8}, {512, 256, 3, 3, 3}, {1, 1, 1}, {1, 1, 1}},
  };
}

ConvProblem problem(const Conv& c, ConvDirection direction, DType dtype) {
  ConvProblem p;
  p.direction = direction;
  p.dtype = dtype;
  p.x = c.x;
  p.w = c.w;
  p.stride = c.stride;
  p.padding = c.padding;
  p.dilation.assign(c.stride.size(), 1);
  p.y = conv_output_shape(p.x, p.w, p.stride, p.padding, p.dilation);
  return p;
}

TEST(CudnnPlans, DeviceDescriptionsFinalise) {
  for (const char* file : {"h100_sxm.json", "a100_sxm4.json", "h200.json"})
    EXPECT_NE(device(file).get(), nullptr);
  EXPECT_TRUE(throws_error([] { device_properties_from_json("{}", "an empty description"); },
                           {"an empty description", "CUDNN_STATUS_BAD_PARAM", "maxGridSize"}));
}

// What apps/cudnn_device_json prints, read from the GPU itself: on a GPU, a description that
// cuDNN reads back and plans with; without one, cuDNN's reason (it asks the driver).
TEST(CudnnPlans, DescriptionsReadFromTheDevice) {
  if (cuda_device_count() == 0) {
    EXPECT_TRUE(throws_error([] { device_properties_json(0); },
                             {"cuDNN device properties of cuda:0", "CUDNN_STATUS"}));
    return;
  }
  const std::string json = device_properties_json(0);
  for (const char* key : {"deviceName", "deviceVer", "multiProcessorCount", "maxGridSize"})
    EXPECT_NE(json.find(key), std::string::npos) << key << " in " << json;
  const CudnnDescriptor props = device_properties_from_json(json, "cuda:0");
  EXPECT_EQ(conv_plans(problem(model_convolutions()[1], ConvDirection::forward, DType::f32), props)
                .size(),
            1u);
}

TEST(CudnnPlans, EveryModelConvolutionGetsAPlanInEveryDirectionAndDtype) {
  int plans = 0;
  for (const char* file : {"h100_sxm.json", "a100_sxm4.json", "h200.json"})
    for (const Conv& c : model_convolutions())
      for (ConvDirection direction :
           {ConvDirection::forward, ConvDirection::backward_data, ConvDirection::backward_filter})
        for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
          const ConvProblem p = problem(c, direction, dtype);
          try {
            const std::vector<ConvPlan> found = conv_plans(p, device(file));
            ASSERT_EQ(found.size(), 1u);
            EXPECT_GE(found[0].workspace_bytes, 0);
            EXPECT_GE(found[0].engine, 0);
            ++plans;
          } catch (const Error& e) {
            ADD_FAILURE() << file << " " << c.name << ": " << e.what();
          }
        }
  EXPECT_EQ(plans, 3 * 17 * 3 * 3);
}

// conv_transpose2d's forward is the backward-data of the convolution it transposes: the UNet
// decoder's kernel-2 stride-2 upsampling, 2-D and 3-D. Its weight, (in, out, kernel...) in
// PyTorch's layout, is that convolution's filter as it is: (K = in, C = out, kernel...).
TEST(CudnnPlans, TransposedConvolutionsOfTheUnetDecoders) {
  const std::vector<Conv> transposed = {
      {"unet2d up", {8, 256, 32, 32}, {256, 128, 2, 2}, {2, 2}, {0, 0}},
      {"unet3d up", {2, 128, 4, 16, 16}, {128, 64, 2, 2, 2}, {2, 2, 2}, {0, 0, 0}},
  };
  for (const Conv& c : transposed)
    for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
      // The convolution with the transposed one's output as x and its input as y.
      ConvProblem p;
      p.direction = ConvDirection::backward_data;
      p.dtype = dtype;
      p.y = c.x;
      p.w = c.w;
      p.stride = c.stride;
      p.padding = c.padding;
      p.dilation.assign(c.stride.size(), 1);
      p.x = {c.x[0], c.w[1]};
      for (std::size_t d = 2; d < c.x.size(); ++d) p.x.push_back(c.x[d] * c.stride[d - 2]);
      EXPECT_EQ(conv_output_shape(p.x, p.w, p.stride, p.padding, p.dilation), p.y);
      EXPECT_NO_THROW(conv_plans(p, device("h100_sxm.json"))) << c.name << " " << dtype;
    }
}

TEST(CudnnPlans, DeterministicModeAndSeveralCandidates) {
  const ConvProblem p =
      problem(model_convolutions()[3], ConvDirection::backward_filter, DType::f16);
  const auto several = conv_plans(p, device("h100_sxm.json"), {.max_plans = 4});
  EXPECT_GT(several.size(), 1u);
  const auto deterministic =
      conv_plans(p, device("h100_sxm.json"), {.deterministic = true, .max_plans = 4});
  EXPECT_FALSE(deterministic.empty());
}

// Benchmark mode's candidates: mode A's plans first, in its order, then the fallback list's, up
// to max_plans. f32 without TF32 leaves mode A few engines to offer, so the fallback adds some.
TEST(CudnnPlans, BenchmarkCandidatesAddTheFallbackListAfterModeA) {
  std::size_t added = 0;
  const std::vector<Conv> convs = model_convolutions();
  for (std::size_t i = 0; i < 4 && i < convs.size(); ++i)
    for (ConvDirection direction :
         {ConvDirection::forward, ConvDirection::backward_data, ConvDirection::backward_filter}) {
      const ConvProblem p = problem(convs[i], direction, DType::f32);
      const auto mode_a = conv_plans(p, device("h200.json"), {.max_plans = 16});
      const auto both = conv_plans(p, device("h200.json"), {.max_plans = 16, .fallback_too = true});
      ASSERT_GE(both.size(), mode_a.size()) << convs[i].name;
      EXPECT_LE(both.size(), 16u) << convs[i].name;
      for (std::size_t k = 0; k < mode_a.size(); ++k)
        EXPECT_EQ(both[k].engine, mode_a[k].engine) << convs[i].name << " candidate " << k;
      added += both.size() - mode_a.size();
    }
  EXPECT_GT(added, 0u);
}

// On an H200 the plain f32 plans of the GPU parity tests ran on tensor cores (TF32) and missed
// the CPU by 1 %: with TF32 off, no f32 plan may use an engine noted TENSOR_CORE, and with it on
// those engines are among the candidates.
TEST(CudnnPlans, F32PlansStayOffTensorCoresUnlessTf32IsAllowed) {
  int tensor_core_plans = 0;
  for (const Conv& c : model_convolutions())
    for (ConvDirection direction :
         {ConvDirection::forward, ConvDirection::backward_data, ConvDirection::backward_filter}) {
      const ConvProblem p = problem(c, direction, DType::f32);
      for (const ConvPlan& plan : conv_plans(p, device("h100_sxm.json"), {.max_plans = 8}))
        EXPECT_FALSE(plan.tensor_cores) << c.name << " engine " << plan.engine;
      for (const ConvPlan& plan :
           conv_plans(p, device("h100_sxm.json"), {.allow_tf32 = true, .max_plans = 8}))
        tensor_core_plans += plan.tensor_cores;
    }
  EXPECT_GT(tensor_core_plans, 0);
}

// A problem cuDNN's mode-A heuristics propose nothing for on an H200 (GpuOpsParity's grouped,
// strided 3-D convolution, f16 backward-filter) still gets a plan, from the fallback list.
TEST(CudnnPlans, ProblemsTheHeuristicsSkipGetAFallbackPlan) {
  const Conv grouped{"grouped strided 3-D", {1, 4, 6, 7, 5}, {6, 2, 3, 3, 3}, {2, 2, 1}, {1, 0, 1}};
  for (DType dtype : {DType::f16, DType::bf16, DType::f32})
    for (ConvDirection direction :
         {ConvDirection::forward, ConvDirection::backward_data, ConvDirection::backward_filter})
      EXPECT_NO_THROW(conv_plans(problem(grouped, direction, dtype), device("h100_sxm.json")))
          << dtype;
}

// Benchmark mode's choice: the fastest candidate that runs; one that cannot run is passed over;
// when none runs, every reason is in the error.
TEST(CudnnPlans, BenchmarkKeepsTheFastestCandidateThatRuns) {
  const std::vector<float> ms = {3.0f, 1.5f, 0.5f, 1.5f};
  auto timed = [&](std::size_t i) { return ms[i]; };
  EXPECT_EQ(fastest_candidate(ms.size(), timed, "conv"), 2u);
  auto third_fails = [&](std::size_t i) {
    if (i == 2) fail("workspace of 9 GiB does not fit");
    return ms[i];
  };
  EXPECT_EQ(fastest_candidate(ms.size(), third_fails, "conv"), 1u);  // the first of equals
  EXPECT_TRUE(throws_error(
      [] {
        fastest_candidate(
            2, [](std::size_t i) -> float { fail("engine ", i, " refused"); }, "conv fwd");
      },
      {"conv fwd", "none of the 2 candidate plans ran", "engine 0 refused", "engine 1 refused"}));
}

TEST(CudnnPlans, BadShapesGetCudnnsMessage) {
  ConvProblem p = problem(model_convolutions()[1], ConvDirection::forward, DType::f32);
  p.y[1] = 65;  // the filter makes 64 channels
  EXPECT_TRUE(throws_error(
      [&] { conv_plans(p, device("h100_sxm.json")); },
      {"cuDNN convolution forward f32", "[128, 65, 32, 32]", "CUDNN_STATUS_BAD_PARAM"}));
  ConvProblem q = problem(model_convolutions()[1], ConvDirection::forward, DType::f32);
  q.w[1] = 48;  // 64 input channels cannot be split into groups of 48
  EXPECT_TRUE(throws_error([&] { conv_plans(q, device("h100_sxm.json")); },
                           {"cuDNN convolution forward", "CUDNN_STATUS_BAD_PARAM"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv_output_shape({1, 3, 2, 2}, {8, 3, 5, 5}, {1, 1}, {0, 0}, {1, 1});
      },
      {"smaller than the kernel"}));
}

// ---- channels-last (NHWC, NDHWC) ----------------------------------------------------------------

// The problem with every operand in the channels-last format of its rank, as conv_cuda.cu
// makes it for a channels-last activation (conv_memory_format).
ConvProblem channels_last(ConvProblem p) {
  const MemoryFormat format =
      p.x.size() == 4 ? MemoryFormat::channels_last : MemoryFormat::channels_last_3d;
  p.x_strides = strides_for(p.x, format);
  p.w_strides = strides_for(p.w, format);
  p.y_strides = strides_for(p.y, format);
  return p;
}

// What the presets run on a GPU (16-bit, channels-last) and f32 channels-last: a plan for every
// convolution of the bundled models in every direction, on the H200 the GPU checks run on and
// the H100. The stem's 3 input channels and the UNet's 1 make NHWC rows narrower than cuDNN's
// 16-byte vectors: those take the fallback list's engines where mode A has none.
TEST(CudnnPlans, EveryModelConvolutionGetsAChannelsLastPlan) {
  int plans = 0;
  for (const char* file : {"h200.json", "h100_sxm.json"})
    for (const Conv& c : model_convolutions())
      for (ConvDirection direction :
           {ConvDirection::forward, ConvDirection::backward_data, ConvDirection::backward_filter})
        for (DType dtype : {DType::bf16, DType::f16, DType::f32}) {
          const ConvProblem p = channels_last(problem(c, direction, dtype));
          try {
            const std::vector<ConvPlan> found = conv_plans(p, device(file));
            ASSERT_EQ(found.size(), 1u);
            EXPECT_GE(found[0].engine, 0);
            ++plans;
          } catch (const Error& e) {
            ADD_FAILURE() << file << " " << c.name << ": " << e.what();
          }
        }
  EXPECT_EQ(plans, 2 * 17 * 3 * 3);
}

// airbench94's convolutions at its batch (1024), 16-bit channels-last as its preset runs them on
// a GPU, and the transposed convolutions of the UNet decoders in NHWC.
TEST(CudnnPlans, Airbench94AndTransposedConvolutionsInChannelsLast) {
  const std::vector<Conv> airbench = {
      {"airbench94 whiten", {1024, 3, 32, 32}, {24, 3, 2, 2}, {1, 1}, {0, 0}},
      {"airbench94 group1 conv1", {1024, 24, 31, 31}, {64, 24, 3, 3}, {1, 1}, {1, 1}},
      {"airbench94 group1 conv2", {1024, 64, 15, 15}, {64, 64, 3, 3}, {1, 1}, {1, 1}},
      {"airbench94 group2 conv1", {1024, 64, 15, 15}, {256, 64, 3, 3}, {1, 1}, {1, 1}},
      {"airbench94 group2 conv2", {1024, 256, 7, 7}, {256, 256, 3, 3}, {1, 1}, {1, 1}},
      {"airbench94 group3 conv2", {1024, 256, 3, 3}, {256, 256, 3, 3}, {1, 1}, {1, 1}},
  };
  for (const Conv& c : airbench)
    for (ConvDirection direction :
         {ConvDirection::forward, ConvDirection::backward_data, ConvDirection::backward_filter})
      for (DType dtype : {DType::bf16, DType::f16})
        EXPECT_NO_THROW(
            conv_plans(channels_last(problem(c, direction, dtype)), device("h200.json")))
            << c.name << " " << dtype;
  ConvProblem up;
  up.direction = ConvDirection::backward_data;
  up.dtype = DType::bf16;
  up.y = {8, 256, 32, 32};
  up.w = {256, 128, 2, 2};
  up.x = {8, 128, 64, 64};
  up.stride = {2, 2};
  up.padding = {0, 0};
  up.dilation = {1, 1};
  EXPECT_NO_THROW(conv_plans(channels_last(up), device("h200.json")));
}

// The layout is part of the problem: its description names it (and so the plan cache's key and
// every error), and cuDNN checks channels-last strides like any others.
TEST(CudnnPlans, ChannelsLastIsNamedAndItsStridesChecked) {
  const ConvProblem nchw = problem(model_convolutions()[1], ConvDirection::forward, DType::bf16);
  const ConvProblem nhwc = channels_last(nchw);
  EXPECT_EQ(nchw.describe().find("channels_last"), std::string::npos);
  EXPECT_NE(nhwc.describe().find("channels_last"), std::string::npos) << nhwc.describe();
  ConvProblem overlapping = nhwc;
  overlapping.x_strides[2] = 1;  // H and C on one stride: not a layout cuDNN accepts
  EXPECT_TRUE(throws_error([&] { conv_plans(overlapping, device("h200.json")); },
                           {"cuDNN convolution forward bf16", "CUDNN_STATUS"}));
}

// conv_cuda.cu's choice of layout and the problem it builds from its tensors (the shapes and
// strides only: cpu tensors serve).
TEST(CudnnPlans, ConvolutionsOfChannelsLastTensorsRunInChannelsLast) {
  const Tensor x = empty({8, 16, 10, 12}), w = empty({32, 16, 3, 3});
  const Tensor x_cl = empty({8, 16, 10, 12}, {}, MemoryFormat::channels_last);
  const Tensor w_cl = empty({32, 16, 3, 3}, {}, MemoryFormat::channels_last);
  EXPECT_EQ(conv_memory_format(x, w), MemoryFormat::contiguous);
  EXPECT_EQ(conv_memory_format(x_cl, w), MemoryFormat::channels_last);
  EXPECT_EQ(conv_memory_format(x, w_cl), MemoryFormat::channels_last);
  // One channel: NCHW and NHWC are the same bytes, and such a tensor decides nothing.
  EXPECT_EQ(conv_memory_format(empty({8, 1, 10, 12}), empty({4, 1, 3, 3})),
            MemoryFormat::contiguous);
  EXPECT_EQ(conv_memory_format(empty({2, 4, 3, 5, 6}, {}, MemoryFormat::channels_last_3d),
                               empty({8, 4, 3, 3, 3})),
            MemoryFormat::channels_last_3d);
  const Tensor y_cl = empty({8, 32, 10, 12}, {}, MemoryFormat::channels_last);
  const ConvProblem p =
      conv_problem(ConvDirection::forward, x_cl, w_cl, y_cl, {1, 1}, {1, 1}, {1, 1});
  EXPECT_EQ(p.x_strides, (Shape{1920, 1, 192, 16}));
  EXPECT_EQ(p.w_strides, (Shape{144, 1, 48, 16}));
  EXPECT_EQ(p.y_strides, strides_for(p.y, MemoryFormat::channels_last));
  EXPECT_NO_THROW(conv_plans(ConvProblem{p}, device("h200.json")));
}

}  // namespace
}  // namespace rg::cuda
