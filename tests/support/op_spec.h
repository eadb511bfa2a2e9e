#pragma once
// An op's spec: the one record, kept in the op's folder (ops/<op>/<op>_spec.cpp), from which every
// generic suite and the benchmark learn about the op — PyTorch's OpInfo in spirit
// (torch/testing/_internal/opinfo/core.py). Each part is optional; who reads it:
//
//   part         suite                                      checks
//   gradchecks   tests/ops/op_spec_test.cpp                 finite differences in f64 vs autograd
//   fixtures     tests/ops/op_spec_test.cpp                 forward and backward vs PyTorch's
//   bad_inputs   tests/ops/op_spec_test.cpp                 an rg::Error naming what is wrong
//   devices      tests/ops/op_spec_test.cpp                 cuda:0 tensors stopped by name (no GPU)
//   samples      tests/ops/op_spec_test.cpp                 a logical cpu:1 keeps the result there
//                tests/gpu/ops_parity_test.cpp              the op on a real GPU vs the CPU
//   kernels      tests/kernels/op_spec_kernels_test.cpp     emulated CUDA kernels vs the CPU
//   benches      apps/bench_ops --op NAME                   forward and backward timed
//
// A spec file registers its specs with RG_OP_SPECS (below); CMake compiles every
// ops/*/*_spec.cpp into the test-side object library rg_op_specs, which the suites and bench_ops
// link: rg_ops never sees a spec. Nothing here needs GoogleTest or PyTorch; the suites do the
// comparing.

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "tests/support/grad_input.h"

namespace rg::testing {

using Inputs = std::vector<Tensor>;
// The op applied to its tensor inputs (options fixed in the closure): what every part calls.
using Call = std::function<Tensor(const Inputs&)>;

// Values drawn uniformly from [low, high).
struct Range {
  double low = -2, high = 2;
};
inline constexpr Range kAnyValues{-2, 2};
inline constexpr Range kPositiveValues{0.5, 2};   // log, sqrt, pow, divisors
inline constexpr Range kUnitValues{0, 1};         // losses' inputs and targets
inline constexpr Range kSignedUnitValues{-1, 1};  // GEMMs, convolutions, BatchNorm

// f64 values of `shape` uniform in `range` (drawn from the global generator).
Tensor uniform(const Shape& shape, Range range);

// ---- the parts -------------------------------------------------------------------------------

// A finite-difference gradcheck (tests/support/gradcheck.h) of `call` at `inputs()`: f64
// contiguous leaves (grad_input); those that require grad are checked.
struct GradcheckCase {
  std::string label = {};
  Call call = {};
  std::function<Inputs()> inputs = {};
  double eps = 1e-6, atol = 1e-5, rtol = 1e-3;  // gradcheck's defaults
};

// The op against PyTorch on tests/fixtures/<file>.safetensors (written by the op's
// <file>_fixture.py, tools/make_fixtures.py). For each case the fixture holds the inputs under
// "<case>.<key>" (or "<key>" for the case ""), the output under "<case>.y", the output's
// gradient under "<case>.gy" and each input's gradient under "<case>.g<key>".
struct FixtureCase {
  std::string file = {};
  std::vector<std::string> cases = {};
  std::vector<std::string> inputs = {};  // keys, in call order
  Call call = {};
  std::vector<std::string> without_grad = {};  // inputs that get no gradient (targets)
  double atol = 1e-5, rtol = 1e-4;             // all_close's defaults
  // Inputs the call updates in place (BatchNorm's running statistics), as {input key, key of its
  // value after the call}: each is a copy of the fixture's (so the fixture stays as it was), gets
  // no gradient, and is compared after the forward with "<case>.<key after>".
  std::vector<std::pair<std::string, std::string>> updated = {};
};

// A call that must throw an rg::Error whose message contains every one of `message`.
struct BadInput {
  std::function<void()> call = {};
  std::vector<std::string> message = {};
};

// Where a call on cuda:0 tensors (on_gpu: host memory labelled cuda:0, never read) stops on a
// machine without a GPU: the op has no kernel for the device or the inputs mix devices (the
// message names the op and cuda:0), or the op has a CUDA kernel and the allocation of its output
// is refused ("no CUDA backend" / "no usable GPU").
enum class Stop { no_kernel, no_gpu };
struct DeviceCase {
  std::string label = {};
  std::function<void()> call = {};
  Stop stop = Stop::no_kernel;
};
// Host memory labelled cuda:0, released with the tensor: an op must refuse it before reading.
Tensor on_gpu(const Shape& shape, DType dtype = DType::f32);

// The op on inputs of `shapes` with values in `range`: run on a GPU against the CPU in each of
// the spec's dtypes (tests/gpu), and on a logical cpu:1, whose result must stay there.
struct Sample {
  std::string label = {};
  std::vector<Shape> shapes = {};
  Call call = {};
  Range range = kAnyValues;
};

// The emulated CUDA kernel's output beside the CPU's, for the suite to compare elementwise: bit
// for bit, or within device_parity_tolerance of their dtype (tests/support/fixtures.h) where the
// GPU sums in another order.
enum class Match { bits, device_parity };
struct KernelResult {
  std::string label = {};
  Tensor actual = {}, expected = {};
  Match match = Match::bits;
};
// Runs the op's CUDA kernels through the kernel emulator (core/cuda/emulator.h) and its CPU
// kernels on the same inputs: the op's own kernels, or a functor in the pointwise engine's kernel
// (tests/support/op_spec_kernels.h), which has no barrier and no shared memory (ThreadSanitizer's
// run, scripts/tsan_kernels.sh, leaves those out).
enum class KernelKind { own, pointwise_engine };
struct KernelCheck {
  std::string label = {};
  std::function<std::vector<KernelResult>()> run = {};
  KernelKind kind = KernelKind::own;
};

// What `bench_ops --op NAME` times: forward, and backward after an untimed forward, on inputs made
// from --shape (default_shape when none), and the least work one call must do — bytes moved
// (forward: inputs read, output written; backward: gy and the inputs or what the node saved
// read, each input's gradient written) or FLOPs, against the device's measured copy bandwidth or
// GEMM rate.
enum class Cost { bytes, flops };
struct Bench {
  std::string name = {};
  Shape default_shape = {};
  Cost cost = Cost::bytes;
  std::function<Inputs(const Shape&)> make_inputs = {};  // f64 values; the caller converts them
  Call call = {};
  std::function<double(const Inputs&, const Tensor&)> forward_work = {}, backward_work = {};
};

// Does the op run on a GPU with kernels of its own (checked: the spec then has samples for the
// GPU parity tests)?
enum class CudaKernel { no, yes };

struct OpSpec {
  std::string name = {};  // [a-z0-9_]+: the tests' parameter and bench_ops' default name
  CudaKernel cuda = CudaKernel::yes;
  std::vector<DType> dtypes = {DType::f32, DType::f64, DType::f16, DType::bf16};
  std::vector<GradcheckCase> gradchecks = {};
  std::vector<FixtureCase> fixtures = {};
  std::vector<BadInput> bad_inputs = {};
  std::vector<DeviceCase> devices = {};
  std::vector<Sample> samples = {};
  std::vector<KernelCheck> kernels = {};
  std::vector<Bench> benches = {};
};

// ---- the parts most ops share ----------------------------------------------------------------

// A pointwise op of `arity` inputs on odd sizes, the second and later operands broadcast along
// dim 1: shapes {3, 37, 5}, {3, 1, 5}, ...
Sample pointwise_sample(Call call, int arity, Range range = kAnyValues);
// A pointwise op timed on `arity` inputs of --shape (default 4096×1024); bytes: each input read
// and the output written forward; gy and each input read and its gradient written backward.
Bench bandwidth_bench(std::string name, int arity, Call call, Range range = kAnyValues);
// A GEMM timed on --shape M,K,N (default 1024³): inputs A (M×K) and B (K×N); 2·M·K·N FLOPs
// forward, twice that backward.
Bench gemm_bench(std::string name, Call call);
// The gradchecks of an op of one input: on a [2, 3] input, and on a transposed [3, 2] one (the op
// must follow strides), values in [low, high).
std::vector<GradcheckCase> unary_gradchecks(const std::function<Tensor(const Tensor&)>& f,
                                            double low, double high);
// The refusals every floating-point op shares: integer (i64) and byte (u8) inputs.
std::vector<BadInput> integer_inputs(const std::string& op,
                                     const std::function<void(const Tensor&)>& call);

// ---- the registry ----------------------------------------------------------------------------

using SpecFactory = std::vector<OpSpec> (*)();
// Adds a spec file's factory; returns true, for the static initialiser of RG_OP_SPECS.
bool register_specs(SpecFactory factory);
// Every registered spec, built on first use, by name.
const std::vector<OpSpec>& all_specs();
// The spec called `name`; throws an rg::Error naming it when there is none.
const OpSpec& spec(std::string_view name);
// The names of the specs whose `part` is not empty, for a suite's parameters.
template <class Part>
std::vector<std::string> specs_with(std::vector<Part> OpSpec::*part) {
  std::vector<std::string> names;
  for (const OpSpec& s : all_specs())
    if (!(s.*part).empty()) names.push_back(s.name);
  return names;
}

}  // namespace rg::testing

// In ops/<op>/<op>_spec.cpp:   RG_OP_SPECS(relu) { return {OpSpec{...}}; }
// A static initialiser registers the factory; rg_op_specs is an object library, so no linker
// drops a spec file that nothing else refers to.
#define RG_OP_SPECS(folder)                                      \
  static std::vector<::rg::testing::OpSpec> folder##_specs();    \
  [[maybe_unused]] static const bool folder##_specs_registered = \
      ::rg::testing::register_specs(&folder##_specs);            \
  static std::vector<::rg::testing::OpSpec> folder##_specs()
