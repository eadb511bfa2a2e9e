#pragma once
// Which kernel ran for which problem: the CPU ops that choose among kernels by the machine and
// the shape (conv2d: direct, Winograd, im2col, bf16 tiles; matmul: Eigen or bf16 tiles) note
// each choice here, once per distinct (op, problem, kernel). With RG_LOG_KERNELS set in the
// environment (e.g. `RG_LOG_KERNELS=1 ./build/apps/train_cifar ...`) each first note is printed to
// stderr as it happens, after one line naming the CPU's kernel level (cpu_isa_note()), so a run's
// log says which kernel served which layer.

#include <string>
#include <string_view>
#include <vector>

namespace rg {

struct KernelChoice {
  std::string op, problem, kernel;
};

// Notes that `kernel` computed `problem` (a description of the shapes) for `op`. Cheap beside
// the kernels that call it per op call (a lookup under a mutex); a problem appears once per
// kernel that ran it (twice when a cap set by set_max_cpu_isa changed its kernel).
void note_kernel(std::string_view op, std::string problem, std::string_view kernel);

// The choices noted so far in this process, in the order they were first made.
std::vector<KernelChoice> kernel_choices();

}  // namespace rg
