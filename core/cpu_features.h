#pragma once
// What this CPU can run, read at run time (CPUID, and the OS's consent through XGETBV and, for
// AMX, arch_prctl), so that one binary picks its kernels on every x86-64 machine: the 16-bit
// tile kernels where the CPU has AMX, vdpbf16ps where it has AVX512-BF16, the f32 kernels
// elsewhere. The build's -march (RG_NATIVE) decides what the compiler may use everywhere; the
// kernels that need more are compiled for their instruction set alone (GCC's target
// attribute) and called only when cpu_isa() says the machine has it.
//
// Linux hands a process the AMX tile state (8 KB per thread) only on request: the first call
// of cpu_isa() asks once, for the whole process (arch_prctl(ARCH_REQ_XCOMP_PERM,
// XFEATURE_XTILEDATA)); a refusal makes cpu_isa() answer avx512_bf16 or lower, and
// cpu_isa_note() says why.
//
// RG_MAX_CPU_ISA=generic|avx2|avx512|avx512_bf16|amx (like oneDNN's ONEDNN_MAX_CPU_ISA) caps
// the choice for a whole run, set_max_cpu_isa() for the rest of one (tests and benchmarks time
// a kernel against the one below it in the same process).

#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

// GCC/Clang target attributes for kernels of one level, whatever the build's -march. A function
// marked so may be called only where cpu_has(level) (and, for AMX, after cpu_isa() ran: it
// requests the tile permission).
#define RG_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi2")))
#define RG_TARGET_AVX512_BF16 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi2,avx512bf16")))
#define RG_TARGET_AMX                                                              \
  __attribute__((                                                                  \
      target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi2,avx512bf16,amx-tile," \
             "amx-bf16")))

namespace rg {

// Kernel levels, each implying the ones before it.
enum class CpuIsa {
  generic,      // whatever the compiler targets
  avx2,         // AVX2 + FMA
  avx512,       // AVX-512 F, BW, VL, DQ
  avx512_bf16,  // + AVX512-BF16 (vdpbf16ps, vcvtne2ps2bf16) and VBMI2 (vpcompressw)
  amx,          // + AMX-TILE and AMX-BF16, with the OS's permission for the tile state
};

// What CPUID and the OS report, independently of any cap.
struct CpuFeatures {
  bool avx2_fma = false;
  bool avx512 = false;  // F, BW, VL, DQ, with the OS saving the zmm state
  bool avx512_bf16 = false;
  bool avx512_vbmi2 = false;
  bool avx512_fp16 = false;
  bool amx_bf16 = false;     // AMX-TILE + AMX-BF16 by CPUID, tile state enabled in XCR0
  bool amx_granted = false;  // ... and the tile permission granted to this process
};

// Detected once per process (the AMX permission is requested then).
const CpuFeatures& cpu_features();

// The best kernel level of this machine, after RG_MAX_CPU_ISA and set_max_cpu_isa.
CpuIsa cpu_isa();
inline bool cpu_has(CpuIsa isa) {
  return static_cast<int>(cpu_isa()) >= static_cast<int>(isa);
}

// Caps cpu_isa() at `isa` (nullopt: back to the machine's, still under RG_MAX_CPU_ISA).
// Process-wide; call it between kernels, not while they run.
void set_max_cpu_isa(std::optional<CpuIsa> isa);

// RAII form, for tests and benchmarks.
class CpuIsaCap {
 public:
  explicit CpuIsaCap(CpuIsa isa);
  ~CpuIsaCap();
  CpuIsaCap(const CpuIsaCap&) = delete;
  CpuIsaCap& operator=(const CpuIsaCap&) = delete;

 private:
  std::optional<CpuIsa> previous_;
};

std::string_view cpu_isa_name(CpuIsa isa);
std::ostream& operator<<(std::ostream& out, CpuIsa isa);
// Parses a name of cpu_isa_name; an rg::Error names the accepted ones otherwise.
CpuIsa parse_cpu_isa(std::string_view name);
// One line for logs: the level in use, what the machine has, and why a level is missing
// (e.g. "amx: the kernel refused the tile permission (errno 22)").
std::string cpu_isa_note();

}  // namespace rg
