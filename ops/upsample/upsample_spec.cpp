// upsample's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/upsample/upsample.h"
#include "tests/support/op_spec.h"

namespace rg::testing {

namespace {

Call upsampled(int64_t scale, UpsampleMode mode, AlignCorners align = AlignCorners::off) {
  return [=](const Inputs& x) { return upsample(x[0], scale, mode, align); };
}

}  // namespace

RG_OP_SPECS(upsample) {
  using M = UpsampleMode;
  using A = AlignCorners;
  const auto input = [](Shape shape) { return [=] { return Inputs{grad_input(shape)}; }; };
  const auto fixture = [](std::string name, int64_t scale, M mode, A align = A::off) {
    return FixtureCase{"upsample", {std::move(name)}, {"x"}, upsampled(scale, mode, align)};
  };
  return {{
      .name = "upsample",
      .gradchecks = {{"nearest x2", upsampled(2, M::nearest), input({1, 2, 2, 3})},
                     {"nearest x3", upsampled(3, M::nearest), input({1, 1, 2, 2})},
                     {"bilinear x2", upsampled(2, M::bilinear), input({1, 2, 2, 3})},
                     {"bilinear x2 aligned", upsampled(2, M::bilinear, A::on), input({1, 2, 2, 3})},
                     {"bilinear x3", upsampled(3, M::bilinear), input({1, 1, 3, 2})},
                     {"bilinear x3 aligned", upsampled(3, M::bilinear, A::on), input({1, 1, 3, 2})},
                     {"volume nearest x2", upsampled(2, M::nearest), input({1, 2, 2, 1, 3})},
                     {"volume nearest x3", upsampled(3, M::nearest), input({1, 1, 2, 2, 1})},
                     {"trilinear x2", upsampled(2, M::trilinear), input({1, 2, 2, 2, 3})},
                     {"trilinear x2 aligned", upsampled(2, M::trilinear, A::on),
                      input({1, 1, 3, 2, 2})},
                     {"trilinear x3", upsampled(3, M::trilinear), input({1, 1, 1, 2, 3})}},
      .fixtures = {fixture("nearest2", 2, M::nearest), fixture("nearest3", 3, M::nearest),
                   fixture("bilinear2", 2, M::bilinear),
                   fixture("bilinear2_align", 2, M::bilinear, A::on),
                   fixture("bilinear3", 3, M::bilinear),
                   fixture("bilinear3_align", 3, M::bilinear, A::on),
                   fixture("nearest3d2", 2, M::nearest), fixture("nearest3d3", 3, M::nearest),
                   fixture("trilinear2", 2, M::trilinear), fixture("trilinear3", 3, M::trilinear),
                   fixture("trilinear2_align", 2, M::trilinear, A::on)},
      .bad_inputs = {{[] {
                        upsample(ones({2, 3}), 2);
                      },
                      {"upsample", "4-D", "[2, 3] f32 cpu"}},
                     {[] {
                        upsample(ones({1, 1, 2, 2}, {DType::i64}), 2);
                      },
                      {"upsample", "[1, 1, 2, 2] i64 cpu"}},
                     {[] {
                        upsample(ones({1, 1, 2, 2}), 0);
                      },
                      {"upsample", "scale_factor", "0", "[1, 1, 2, 2]"}},
                     {[] {
                        upsample(ones({1, 1, 2, 2}), 2, M::nearest, A::on);
                      },
                      {"upsample", "align_corners", "bilinear", "nearest"}},
                     {[] {
                        upsample(ones({1, 1, 2, 2, 2}), 2, M::bilinear);
                      },
                      {"upsample", "bilinear", "4-D", "trilinear", "[1, 1, 2, 2, 2] f32 cpu"}},
                     {[] {
                        upsample(ones({1, 1, 2, 2}), 2, M::trilinear);
                      },
                      {"upsample", "trilinear", "5-D", "[1, 1, 2, 2] f32 cpu"}},
                     {[] {
                        upsample(ones({1, 1, 2, 0, 2}), 2, M::trilinear);
                      },
                      {"upsample", "non-empty", "[1, 1, 2, 0, 2]"}},
                     {[] {
                        upsample(ones({1, 1, 2, 2, 2, 2}), 2);
                      },
                      {"upsample", "5-D", "[1, 1, 2, 2, 2, 2]"}}},
      .devices = {{"nearest",
                   [] {
                     upsample(on_gpu({2, 3, 4, 4}), 2);
                   },
                   Stop::no_gpu},
                  {"trilinear",
                   [] {
                     upsample(on_gpu({1, 2, 2, 3, 4}), 2, M::trilinear);
                   },
                   Stop::no_gpu}},
      // Images and volumes, some transposed (non-contiguous).
      .samples = {{"nearest", {{2, 3, 5, 7}}, upsampled(2, M::nearest)},
                  {"bilinear",
                   {{2, 3, 5, 7}},
                   [](const Inputs& x) { return upsample(x[0].transpose(2, 3), 3, M::bilinear); }},
                  {"bilinear aligned", {{2, 3, 5, 7}}, upsampled(2, M::bilinear, A::on)},
                  {"nearest 3d", {{2, 3, 3, 5, 4}}, upsampled(2, M::nearest)},
                  {"trilinear",
                   {{1, 3, 3, 5, 4}},
                   [](const Inputs& x) { return upsample(x[0].transpose(2, 4), 2, M::trilinear); }},
                  {"trilinear aligned", {{1, 2, 3, 4, 5}}, upsampled(3, M::trilinear, A::on)}},
  }};
}

}  // namespace rg::testing
