// bench_ops: GFLOP/s of the convolution kernels on every distinct convolution of the CIFAR
// ResNet18 (or ResNet-20, airbench94, a 3-D UNet's conv3d layers, or the grouped and depthwise
// convolutions of the pytorch-cifar zoo, --model zoo): on the CPU against a
// multithreaded 2048³ sgemm as the machine's practical peak, or on a GPU (cuDNN, --device cuda[:N];
// each call timed to the device's completion). Prints JSON.
//
//   ./build/apps/bench_ops [--model resnet18|resnet20|airbench94|unet3d] [--threads N] [--batch
//   128]
//                          [--repeat 3] [--isa LEVEL] [--clock wall|cpu] [--verbose]
//                          [--only NAME_PART] [--device cpu|cuda[:N]] [--dtype f32|f16|bf16]
//                          [--bf16-kernels by_rule|tiles|widened]
//
// With --op NAME[,NAME...] it times instead forward and backward of any op that declares a bench
// in its spec (ops/<op>/<op>_spec.cpp, tests/support/op_spec.h; `--op list` lists them), on inputs
// of --shape (e.g. --shape 4096,1024), and reports GB/s against the device's measured copy
// bandwidth or GFLOP/s against its measured GEMM, whichever the op is bound by (ops/README.md shows
// one).
//
// FLOPs of each of forward, backward-data and backward-weight: 2·N·O·(C/G)·kH·kW·Ho·Wo (G groups)
// (·kD·Do for conv3d). unet3d runs batch 1 unless --batch says otherwise; conv3d is CPU only.
// --isa caps the CPU kernels at a level (core/cpu_features.h: e.g. --isa avx512 runs bf16 on the
// f32 kernels instead of the bf16 tiles); --bf16-kernels by_rule|tiles|widened runs bf16 by the
// rule of ops/conv/conv2d/README.md (the default), or every pass on the tiles, or every pass on
// the f32 kernels with widened operands; --verbose lists the kernel that served each problem;
// --clock cpu times by the process's CPU time (robust to a shared machine's load).
// Each time is the best of --repeat calls after one warm-up call (the machine is shared); the
// sgemm runs before and after the convolutions and reports its best; a register-only FMA loop
// after them gives the CPU's FMA peak (cpu_fma_peak).
// The aggregate weighs each shape by how often it occurs in the model and counts all three
// kernels for every conv (also the stem's backward-data, which training skips).
// GCC 12 false positive inside Eigen 3.4's AVX-512 GEMM packing (see
// ops/conv/conv2d/conv2d_cpu.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#ifndef EIGEN_DONT_PARALLELIZE
#define EIGEN_DONT_PARALLELIZE
#endif

#include <sys/resource.h>

#include <Eigen/Core>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/autograd.h"
#include "core/cpu_features.h"
#include "core/kernel_log.h"
#include "core/thread_pool.h"
#include "ops/ops.h"
#include "tests/support/op_spec.h"

namespace {

// The device whose work is timed: the clock stops once it has finished (GPU calls return
// before their kernels run).
rg::Device timed_device = rg::Device::cpu();

// --clock cpu: the CPU time of the process (all its threads) instead of wall time, which a
// machine shared with other work inflates far more (CPU kernels only).
bool cpu_clock = false;

double now_seconds() {
  if (cpu_clock) {
    rusage u;
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double best_seconds(int repeat, const std::function<void()>& fn) {
  fn();  // warm-up: page faults, pool start-up, cuDNN plans
  rg::synchronize(timed_device);
  double best = 1e30;
  for (int r = 0; r < repeat; ++r) {
    const double t0 = now_seconds();
    fn();
    rg::synchronize(timed_device);
    best = std::min(best, now_seconds() - t0);
  }
  return best;
}

// C = A·B, n×n f32, rows of C split over the pool's threads, each a single-threaded Eigen GEMM:
// the same threading the convolution kernels use.
double sgemm_gflops(int64_t n, int repeat, double& seconds) {
  using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Mat a = Mat::Random(n, n), b = Mat::Random(n, n), c(n, n);
  const int64_t parts = rg::num_threads();
  seconds = best_seconds(repeat, [&] {
    rg::parallel_for(parts, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        const int64_t r0 = p * n / parts, r1 = (p + 1) * n / parts;
        c.middleRows(r0, r1 - r0).noalias() = a.middleRows(r0, r1 - r0) * b;
      }
    });
  });
  return 2.0 * n * n * n / seconds * 1e-9;
}

// The FMA peak of the CPU as this process gets it: every pool thread runs independent vector
// FMAs on registers only (12 accumulators, more than an FMA's latency × throughput on the x86
// cores we use), no loads. The convolution kernels' true ceiling: Eigen's sgemm runs well
// below it on AVX2 (78 vs 148-182 GFLOP/s on the 2-core Zen 3 VM, 2026-11-26).
double fma_peak_gflops(int repeat) {
  constexpr int kBytes =
#ifdef __AVX512F__
      64;
#else
      32;
#endif
  typedef float V __attribute__((vector_size(kBytes)));
  constexpr int L = kBytes / sizeof(float), kAcc = 12;
  constexpr int64_t kIters = int64_t{1} << 24;
  const int64_t parts = rg::num_threads();
  std::vector<float> sink(static_cast<std::size_t>(parts));
  const double seconds = best_seconds(repeat, [&] {
    rg::parallel_for(parts, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        V acc[kAcc];
        for (int i = 0; i < kAcc; ++i) acc[i] = V{} + static_cast<float>(i);
        const V a = V{} + 0.9999999f, b = V{} + 1e-7f;
        for (int64_t it = 0; it < kIters; ++it)
#pragma GCC unroll 12
          for (int i = 0; i < kAcc; ++i) acc[i] = acc[i] * a + b;  // one FMA each
        float s = 0;
        for (int i = 0; i < kAcc; ++i) s += acc[i][0];
        sink[static_cast<std::size_t>(p)] = s;  // keeps the loop
      }
    });
  });
  return 2.0 * static_cast<double>(parts * kIters * kAcc * L) / seconds * 1e-9;
}

struct ConvShape {
  const char* name;
  int count;  // occurrences in the model
  int64_t C, O, H, k, stride, pad;
  int64_t D = 0;       // > 0: a conv3d over (D, H, H) volumes with a k×k×k kernel
  int64_t groups = 1;  // conv2d: C and O in `groups` blocks (depthwise: groups = C = O)
};

// CIFAR ResNet18 (3x3 stem, stages of 64/128/256/512 channels at 32/16/8/4 pixels).
const std::vector<ConvShape> kResNet18 = {
    {"stem_3x3_3to64_32", 1, 3, 64, 32, 3, 1, 1},
    {"s1_3x3_64_32", 4, 64, 64, 32, 3, 1, 1},
    {"s2_3x3_64to128_s2", 1, 64, 128, 32, 3, 2, 1},
    {"s2_3x3_128_16", 3, 128, 128, 16, 3, 1, 1},
    {"s2_1x1_64to128_s2", 1, 64, 128, 32, 1, 2, 0},
    {"s3_3x3_128to256_s2", 1, 128, 256, 16, 3, 2, 1},
    {"s3_3x3_256_8", 3, 256, 256, 8, 3, 1, 1},
    {"s3_1x1_128to256_s2", 1, 128, 256, 16, 1, 2, 0},
    {"s4_3x3_256to512_s2", 1, 256, 512, 8, 3, 2, 1},
    {"s4_3x3_512_4", 3, 512, 512, 4, 3, 1, 1},
    {"s4_1x1_256to512_s2", 1, 256, 512, 8, 1, 2, 0},
};

// CIFAR ResNet-20 (3x3 stem, stages of 16/32/64 channels at 32/16/8 pixels, 3 blocks each).
const std::vector<ConvShape> kResNet20 = {
    {"stem_3x3_3to16_32", 1, 3, 16, 32, 3, 1, 1}, {"s1_3x3_16_32", 6, 16, 16, 32, 3, 1, 1},
    {"s2_3x3_16to32_s2", 1, 16, 32, 32, 3, 2, 1}, {"s2_3x3_32_16", 5, 32, 32, 16, 3, 1, 1},
    {"s2_1x1_16to32_s2", 1, 16, 32, 32, 1, 2, 0}, {"s3_3x3_32to64_s2", 1, 32, 64, 16, 3, 2, 1},
    {"s3_3x3_64_8", 5, 64, 64, 8, 3, 1, 1},       {"s3_1x1_32to64_s2", 1, 32, 64, 16, 1, 2, 0},
};

// airbench94 (its 2x2 whitening conv, then groups of 64/256/256 channels; each group's first
// conv runs before its 2x2 max-pool, the second after): 32×32 training images.
const std::vector<ConvShape> kAirbench94 = {
    {"whiten_2x2_3to24_32", 1, 3, 24, 32, 2, 1, 0}, {"g1_3x3_24to64_31", 1, 24, 64, 31, 3, 1, 1},
    {"g1_3x3_64_15", 1, 64, 64, 15, 3, 1, 1},       {"g2_3x3_64to256_15", 1, 64, 256, 15, 3, 1, 1},
    {"g2g3_3x3_256_7", 2, 256, 256, 7, 3, 1, 1},    {"g3_3x3_256_3", 1, 256, 256, 3, 3, 1, 1},
};

// The grouped and depthwise convolutions of pytorch-cifar's zoo (nn/models/), where a zoo's speed
// is usually lost: batch 128 of 32×32 images. Counts are per model; the aggregate is over all.
const std::vector<ConvShape> kZoo = {
    // MobileNetV2: depthwise 3x3 of its expanded blocks (groups = channels).
    {"mbv2_dw3x3_96_32", 1, 96, 96, 32, 3, 1, 1, 0, 96},
    {"mbv2_dw3x3_144_32", 1, 144, 144, 32, 3, 1, 1, 0, 144},
    {"mbv2_dw3x3_144_s2", 1, 144, 144, 32, 3, 2, 1, 0, 144},
    {"mbv2_dw3x3_192_16", 2, 192, 192, 16, 3, 1, 1, 0, 192},
    {"mbv2_dw3x3_384_8", 3, 384, 384, 8, 3, 1, 1, 0, 384},
    {"mbv2_dw3x3_576_8", 2, 576, 576, 8, 3, 1, 1, 0, 576},
    {"mbv2_dw3x3_960_4", 2, 960, 960, 4, 3, 1, 1, 0, 960},
    // EfficientNetB0: depthwise 5x5.
    {"effb0_dw5x5_240_16", 1, 240, 240, 16, 5, 1, 2, 0, 240},
    {"effb0_dw5x5_672_8", 2, 672, 672, 8, 5, 1, 2, 0, 672},
    // RegNetX_200MF: 3x3 in groups of 8 channels.
    {"regnetx_g8_56_32", 1, 56, 56, 32, 3, 1, 1, 0, 7},
    {"regnetx_g8_152_8", 3, 152, 152, 8, 3, 1, 1, 0, 19},
    {"regnetx_g8_368_4", 6, 368, 368, 4, 3, 1, 1, 0, 46},
    // ResNeXt29_32x4d: 3x3 in 32 groups.
    {"resnext_g32_128_32", 3, 128, 128, 32, 3, 1, 1, 0, 32},
    {"resnext_g32_256_16", 2, 256, 256, 16, 3, 1, 1, 0, 32},
    {"resnext_g32_512_8", 2, 512, 512, 8, 3, 1, 1, 0, 32},
    // DPN92: 3x3 in 32 groups.
    {"dpn92_g32_96_32", 3, 96, 96, 32, 3, 1, 1, 0, 32},
    {"dpn92_g32_192_16", 3, 192, 192, 16, 3, 1, 1, 0, 32},
    {"dpn92_g32_384_8", 19, 384, 384, 8, 3, 1, 1, 0, 32},
    {"dpn92_g32_768_4", 2, 768, 768, 4, 3, 1, 1, 0, 32},
};

// ---- --op: any registered op ------------------------------------------------------------

// The device's practical memory bandwidth, GB/s: the best copy of 256 MiB (bytes read + written).
// On the CPU each thread copies its slice (memcpy, the fastest loop the C library has); on a GPU,
// a device-to-device clone.
double copy_gbps(const rg::Device& device, int repeat) {
  const int64_t n = int64_t(1) << 26;  // floats
  double seconds = 0;
  if (device.is_cpu()) {
    std::vector<float> a(n, 1.0f), b(n);
    const int64_t parts = rg::num_threads();
    seconds = best_seconds(repeat, [&] {
      rg::parallel_for(parts, 1, [&](int64_t lo, int64_t hi) {
        for (int64_t p = lo; p < hi; ++p) {
          const int64_t i0 = p * n / parts, i1 = (p + 1) * n / parts;
          std::memcpy(b.data() + i0, a.data() + i0, (i1 - i0) * sizeof(float));
        }
      });
    });
  } else {
    const rg::Tensor a = rg::ones({n}, {rg::DType::f32, device});
    seconds = best_seconds(repeat, [&] { a.clone(); });
  }
  return 2.0 * n * sizeof(float) / seconds * 1e-9;
}

// The device's practical GEMM rate, GFLOP/s: the CPU sgemm above, or a 4096³ matmul in `dtype`
// on a GPU (cuBLAS).
double gemm_gflops(const rg::Device& device, rg::DType dtype, int repeat) {
  double seconds = 0;
  if (device.is_cpu()) return sgemm_gflops(2048, repeat, seconds);
  const int64_t n = 4096;
  const rg::Tensor a = rg::randn({n, n}).to(dtype).to(device);
  seconds = best_seconds(repeat, [&] { rg::matmul(a, a); });
  return 2.0 * n * n * n / seconds * 1e-9;
}

rg::Shape parse_shape(const std::string& text) {
  rg::Shape shape;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    char* end = nullptr;
    const long long v = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end || v < 1) rg::fail("bench_ops: --shape '", text, "' is not N,N,...");
    shape.push_back(v);
  }
  return shape;
}

std::string shape_json(const rg::Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Times forward (the op alone) and backward (y.backward(gy) after an untimed forward), each the
// best of `repeat` calls after a warm-up, and prints one JSON object.
void bench_op(const rg::testing::Bench& op, const rg::Shape& shape_arg, rg::DType dtype,
              const rg::Device& device, int repeat, double peak, bool first) {
  const rg::Shape shape = shape_arg.empty() ? op.default_shape : shape_arg;
  rg::testing::Inputs inputs;
  for (const rg::Tensor& v : op.make_inputs(shape)) inputs.push_back(v.to(dtype).to(device));
  const rg::Tensor y0 = op.call(inputs);
  const rg::Tensor gy = rg::randn(y0.shape()).to(dtype).to(device);
  const double forward_s = best_seconds(repeat, [&] {
    rg::NoGradGuard no_grad;
    op.call(inputs);
  });
  for (rg::Tensor& x : inputs) x.set_requires_grad(true);
  double backward_s = 1e30;
  for (int r = 0; r <= repeat; ++r) {            // r = 0: the warm-up
    for (rg::Tensor& x : inputs) x.zero_grad();  // no accumulation into an earlier gradient
    const rg::Tensor y = op.call(inputs);
    rg::synchronize(device);
    const auto t0 = std::chrono::steady_clock::now();
    y.backward(gy);
    rg::synchronize(device);
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    if (r > 0) backward_s = std::min(backward_s, dt.count());
  }
  const bool bytes = op.cost == rg::testing::Cost::bytes;
  const char* unit = bytes ? "gbps" : "gflops";
  const double work[2] = {op.forward_work(inputs, y0), op.backward_work(inputs, y0)};
  const double seconds[2] = {forward_s, backward_s};
  std::printf("%s    {\"op\": \"%s\", \"shape\": %s", first ? "" : ",\n", op.name.c_str(),
              shape_json(shape).c_str());
  const char* names[2] = {"forward", "backward"};
  for (int k = 0; k < 2; ++k) {
    const double rate = work[k] / seconds[k] * 1e-9;
    std::printf(", \"%s\": {\"ms\": %.4f, \"%s\": %.3f, \"%s\": %.2f, \"fraction_of_peak\": %.3f}",
                names[k], seconds[k] * 1e3, bytes ? "gbytes" : "gflop", work[k] * 1e-9, unit, rate,
                rate / peak);
  }
  std::printf("}");
  std::fflush(stdout);
}

// --op NAME[,NAME...]: the benchmark of registered ops. Returns the exit status.
int bench_ops_by_name(const std::string& names, const std::string& shape_text, rg::DType dtype,
                      const rg::Device& device, int repeat) {
  std::vector<const rg::testing::Bench*> benches;
  for (const rg::testing::OpSpec& spec : rg::testing::all_specs())
    for (const rg::testing::Bench& bench : spec.benches) benches.push_back(&bench);
  if (names == "list") {
    for (const auto* op : benches) std::printf("%s\n", op->name.c_str());
    return 0;
  }
  std::vector<const rg::testing::Bench*> chosen;
  std::stringstream in(names);
  std::string name;
  while (std::getline(in, name, ',')) {
    const rg::testing::Bench* found = nullptr;
    for (const auto* op : benches)
      if (op->name == name) found = op;
    if (!found) {
      std::fprintf(stderr,
                   "bench_ops: no op '%s' has a bench in its spec (ops/*/*_spec.cpp; --op list)\n",
                   name.c_str());
      return 2;
    }
    chosen.push_back(found);
  }
  try {
    const rg::Shape shape = shape_text.empty() ? rg::Shape{} : parse_shape(shape_text);
    bool need_bytes = false, need_flops = false;
    for (const auto* op : chosen)
      (op->cost == rg::testing::Cost::bytes ? need_bytes : need_flops) = true;
    const double copy = need_bytes ? copy_gbps(device, repeat) : 0;
    const double gemm = need_flops ? gemm_gflops(device, dtype, repeat) : 0;
    std::ostringstream device_name;
    device_name << device;
    std::printf(
        "{\n  \"device\": \"%s\",\n  \"dtype\": \"%s\",\n  \"threads\": %d,\n  \"repeat\": %d,\n"
        "  \"peak\": {\"copy_gbps\": %.2f, \"gemm_gflops\": %.1f},\n  \"ops\": [\n",
        device_name.str().c_str(), std::string(rg::dtype_name(dtype)).c_str(), rg::num_threads(),
        repeat, copy, gemm);
    bool first = true;
    for (const auto* op : chosen) {
      bench_op(*op, shape, dtype, device, repeat,
               op->cost == rg::testing::Cost::bytes ? copy : gemm, first);
      first = false;
    }
    std::printf("\n  ]\n}\n");
  } catch (const rg::Error& e) {
    std::fprintf(stderr, "\n%s\n", e.what());
    return 1;
  }
  return 0;
}

// A 3-D UNet (milesial's DoubleConv/Down/Up layout in 3-D, base width 16, transposed-conv
// decoder) on the seeds' 32×160×160 volumes, one channel in, one class out. A decoder's
// ConvTranspose3d (k2, s2) runs conv3d's three kernels for the conv3d it is the adjoint of, so
// it is listed as that conv3d (C = its output channels, on its output volume).
const std::vector<ConvShape> kUNet3d = {
    {"l1_3x3x3_1to16_160", 1, 1, 16, 160, 3, 1, 1, 32},
    {"l1_3x3x3_16_160", 2, 16, 16, 160, 3, 1, 1, 32},
    {"l2_3x3x3_16to32_80", 1, 16, 32, 80, 3, 1, 1, 16},
    {"l2_3x3x3_32_80", 2, 32, 32, 80, 3, 1, 1, 16},
    {"l3_3x3x3_32to64_40", 1, 32, 64, 40, 3, 1, 1, 8},
    {"l3_3x3x3_64_40", 2, 64, 64, 40, 3, 1, 1, 8},
    {"l4_3x3x3_64to128_20", 1, 64, 128, 20, 3, 1, 1, 4},
    {"l4_3x3x3_128_20", 2, 128, 128, 20, 3, 1, 1, 4},
    {"l5_3x3x3_128to256_10", 1, 128, 256, 10, 3, 1, 1, 2},
    {"l5_3x3x3_256_10", 1, 256, 256, 10, 3, 1, 1, 2},
    {"up1_convT_2x2x2_256to128", 1, 128, 256, 20, 2, 2, 0, 4},
    {"up1_3x3x3_256to128_20", 1, 256, 128, 20, 3, 1, 1, 4},
    {"up2_convT_2x2x2_128to64", 1, 64, 128, 40, 2, 2, 0, 8},
    {"up2_3x3x3_128to64_40", 1, 128, 64, 40, 3, 1, 1, 8},
    {"up3_convT_2x2x2_64to32", 1, 32, 64, 80, 2, 2, 0, 16},
    {"up3_3x3x3_64to32_80", 1, 64, 32, 80, 3, 1, 1, 16},
    {"up4_convT_2x2x2_32to16", 1, 16, 32, 160, 2, 2, 0, 32},
    {"up4_3x3x3_32to16_160", 1, 32, 16, 160, 3, 1, 1, 32},
    {"out_1x1x1_16to1_160", 1, 16, 1, 160, 1, 1, 0, 32},
};

int64_t arg_value(int& i, int argc, char** argv) {
  if (i + 1 >= argc) {
    std::fprintf(stderr, "bench_ops: %s needs a value\n", argv[i]);
    std::exit(2);
  }
  return std::atoll(argv[++i]);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t threads = std::thread::hardware_concurrency(), batch = 0, repeat = 3;  // batch 0: default
  std::string only;                  // run only the shapes whose name contains this
  std::string op_names, shape_text;  // --op, --shape
  bool verbose = false;              // --verbose: the kernel of each problem, on stderr
  rg::Device device = rg::Device::cpu();
  rg::DType dtype = rg::DType::f32;
  const std::vector<ConvShape>* shapes = &kResNet18;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads")) {
      threads = arg_value(i, argc, argv);
    } else if (!std::strcmp(argv[i], "--batch")) {
      batch = arg_value(i, argc, argv);
    } else if (!std::strcmp(argv[i], "--repeat")) {
      repeat = arg_value(i, argc, argv);
    } else if (!std::strcmp(argv[i], "--model") && i + 1 < argc) {
      const std::string m = argv[++i];
      if (m != "resnet18" && m != "resnet20" && m != "airbench94" && m != "unet3d" && m != "zoo") {
        std::fprintf(stderr,
                     "bench_ops: --model must be resnet18, resnet20, airbench94, unet3d or zoo\n");
        return 2;
      }
      shapes = m == "resnet20"     ? &kResNet20
               : m == "airbench94" ? &kAirbench94
               : m == "unet3d"     ? &kUNet3d
               : m == "zoo"        ? &kZoo
                                   : &kResNet18;
    } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
      only = argv[++i];
    } else if (!std::strcmp(argv[i], "--isa") && i + 1 < argc) {
      try {
        rg::set_max_cpu_isa(rg::parse_cpu_isa(argv[++i]));
      } catch (const rg::Error& e) {
        std::fprintf(stderr, "bench_ops: %s\n", e.what());
        return 2;
      }
    } else if (!std::strcmp(argv[i], "--bf16-kernels") && i + 1 < argc) {
      const std::string k = argv[++i];
      if (k != "by_rule" && k != "tiles" && k != "widened") {
        std::fprintf(stderr, "bench_ops: --bf16-kernels must be by_rule, tiles or widened\n");
        return 2;
      }
      rg::set_bf16_conv_kernels(k == "tiles"     ? rg::Bf16ConvKernels::tiles
                                : k == "widened" ? rg::Bf16ConvKernels::widened
                                                 : rg::Bf16ConvKernels::by_rule);
    } else if (!std::strcmp(argv[i], "--verbose")) {
      verbose = true;
    } else if (!std::strcmp(argv[i], "--clock") && i + 1 < argc) {
      const std::string c = argv[++i];
      if (c != "wall" && c != "cpu") {
        std::fprintf(stderr, "bench_ops: --clock must be wall or cpu\n");
        return 2;
      }
      cpu_clock = c == "cpu";
    } else if (!std::strcmp(argv[i], "--op") && i + 1 < argc) {
      op_names = argv[++i];
    } else if (!std::strcmp(argv[i], "--shape") && i + 1 < argc) {
      shape_text = argv[++i];
    } else if (!std::strcmp(argv[i], "--device") && i + 1 < argc) {
      try {
        device = rg::Device::parse(argv[++i]);
        rg::check_device_available(device);
      } catch (const rg::Error& e) {
        std::fprintf(stderr, "bench_ops: %s\n", e.what());
        return 2;
      }
    } else if (!std::strcmp(argv[i], "--dtype") && i + 1 < argc) {
      const std::string d = argv[++i];
      if (d != "f32" && d != "f16" && d != "bf16") {
        std::fprintf(stderr, "bench_ops: --dtype must be f32, f16 or bf16\n");
        return 2;
      }
      dtype = rg::dtype_from_name(d);
    } else {
      std::fprintf(
          stderr,
          "usage: bench_ops [--model resnet18|resnet20|airbench94|unet3d|zoo] [--threads N] "
          "[--batch 128] "
          "[--repeat 3] [--only NAME_PART] [--device cpu|cuda[:N]] "
          "[--dtype f32|f16|bf16] [--isa generic|avx2|avx512|avx512_bf16|amx] "
          "[--bf16-kernels by_rule|tiles|widened] [--clock wall|cpu] [--verbose]\n"
          "       bench_ops --op NAME[,NAME...]|list [--shape N,N,...] [--threads N] "
          "[--repeat 3] [--device cpu|cuda[:N]] [--dtype f32|f16|bf16]\n");
      return 2;
    }
  }
  if (batch == 0) batch = shapes == &kUNet3d ? 1 : 128;  // one 32×160×160 volume is a lot
  if (threads < 1 || batch < 1 || repeat < 1) {
    std::fprintf(stderr, "bench_ops: --threads, --batch and --repeat must be >= 1\n");
    return 2;
  }
  rg::set_num_threads(static_cast<int>(threads));
  timed_device = device;
  if (!op_names.empty())
    return bench_ops_by_name(op_names, shape_text, dtype, device, static_cast<int>(repeat));
  std::ostringstream device_name;
  device_name << device;

  double sgemm_s = 0;
  double sgemm = sgemm_gflops(2048, static_cast<int>(repeat), sgemm_s);
  std::printf(
      "{\n  \"device\": \"%s\",\n  \"cpu_kernels\": \"%s\",\n  \"dtype\": \"%s\",\n  "
      "\"threads\": %d,\n  \"batch\": %lld,\n  \"repeat\": %lld,\n  \"convs\": [\n",
      device_name.str().c_str(), rg::cpu_isa_note().c_str(),
      std::string(rg::dtype_name(dtype)).c_str(), rg::num_threads(), static_cast<long long>(batch),
      static_cast<long long>(repeat));

  double total_flops = 0, total_s = 0;
  int printed = 0;
  for (const ConvShape& c : *shapes) {
    if (!std::strstr(c.name, only.c_str())) continue;
    const auto on_device = [&](const rg::Tensor& t) { return t.to(dtype).to(device); };
    const int r = static_cast<int>(repeat);
    double flops = 0, t[3] = {0, 0, 0};
    if (c.D > 0) {
      const rg::Conv3dParams p{{c.stride, c.stride, c.stride}, {c.pad, c.pad, c.pad}};
      const rg::Tensor x = on_device(rg::randn({batch, c.C, c.D, c.H, c.H}));
      const rg::Tensor w = on_device(rg::randn({c.O, c.C, c.k, c.k, c.k}));
      const rg::Shape y_shape = rg::conv_output_shape<3>("bench_ops", x.shape(), w.shape(), p);
      const rg::Tensor gy = on_device(rg::randn(y_shape));
      flops = 2.0 * batch * c.O * c.C * c.k * c.k * c.k * y_shape[2] * y_shape[3] * y_shape[4];
      t[0] = best_seconds(r, [&] { rg::conv_forward<3>(x, w, rg::Tensor(), p); });
      t[1] = best_seconds(r, [&] { rg::conv_backward_data<3>(gy, w, x.shape(), p); });
      t[2] = best_seconds(r, [&] { rg::conv_backward_weight<3>(gy, x, w.shape(), p); });
    } else {
      const rg::Conv2dParams p{{c.stride, c.stride}, {c.pad, c.pad}, {1, 1}, c.groups};
      const rg::Tensor x = on_device(rg::randn({batch, c.C, c.H, c.H}));
      const rg::Tensor w = on_device(rg::randn({c.O, c.C / c.groups, c.k, c.k}));
      const rg::Shape y_shape = rg::conv_output_shape<2>("bench_ops", x.shape(), w.shape(), p);
      const rg::Tensor gy = on_device(rg::randn(y_shape));
      flops = 2.0 * batch * c.O * (c.C / c.groups) * c.k * c.k * y_shape[2] * y_shape[3];
      t[0] = best_seconds(r, [&] { rg::conv_forward<2>(x, w, rg::Tensor(), p); });
      t[1] = best_seconds(r, [&] { rg::conv_backward_data<2>(gy, w, x.shape(), p); });
      t[2] = best_seconds(r, [&] { rg::conv_backward_weight<2>(gy, x, w.shape(), p); });
    }
    const char* names[3] = {"forward", "backward_data", "backward_weight"};
    std::printf(
        "%s    {\"name\": \"%s\", \"count\": %d, \"C\": %lld, \"O\": %lld, \"H\": %lld, "
        "\"D\": %lld, \"k\": %lld, \"stride\": %lld, \"pad\": %lld, \"groups\": %lld, "
        "\"gflop\": %.3f",
        printed++ ? ",\n" : "", c.name, c.count, static_cast<long long>(c.C),
        static_cast<long long>(c.O), static_cast<long long>(c.H), static_cast<long long>(c.D),
        static_cast<long long>(c.k), static_cast<long long>(c.stride),
        static_cast<long long>(c.pad), static_cast<long long>(c.groups), flops * 1e-9);
    for (int k = 0; k < 3; ++k) {
      std::printf(", \"%s\": {\"ms\": %.3f, \"gflops\": %.1f}", names[k], t[k] * 1e3,
                  flops / t[k] * 1e-9);
      total_flops += c.count * flops;
      total_s += c.count * t[k];
    }
    std::printf("}");
    std::fflush(stdout);
  }
  double sgemm_s2 = 0;
  const double sgemm2 = sgemm_gflops(2048, static_cast<int>(repeat), sgemm_s2);
  if (sgemm2 > sgemm) sgemm = sgemm2, sgemm_s = sgemm_s2;
  const double fma_peak = fma_peak_gflops(static_cast<int>(repeat));
  const double agg = total_s > 0 ? total_flops / total_s * 1e-9 : 0;  // 0: --only matched none
  // The sgemm and the FMA loop are the CPU's: a GPU's figures compare with its datasheet.
  std::printf("\n  ],\n  \"cpu_sgemm_2048\": {\"ms\": %.3f, \"gflops\": %.1f},\n", sgemm_s * 1e3,
              sgemm);
  std::printf("  \"cpu_fma_peak\": {\"gflops\": %.1f},\n", fma_peak);
  std::printf(
      "  \"aggregate\": {\"gflop\": %.3f, \"seconds\": %.4f, \"gflops\": %.1f, "
      "\"fraction_of_sgemm\": %.3f, \"fraction_of_fma_peak\": %.3f}\n}\n",
      total_flops * 1e-9, total_s, agg, agg / sgemm, agg / fma_peak);
  if (verbose)
    for (const rg::KernelChoice& k : rg::kernel_choices())
      std::fprintf(stderr, "%s %s: %s\n", k.op.c_str(), k.problem.c_str(), k.kernel.c_str());
  return 0;
}
