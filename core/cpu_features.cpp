#include "core/cpu_features.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <ostream>

#include "core/error.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace rg {
namespace {

constexpr CpuIsa kAllIsas[] = {CpuIsa::generic, CpuIsa::avx2, CpuIsa::avx512, CpuIsa::avx512_bf16,
                               CpuIsa::amx};

struct Detected {
  CpuFeatures features;
  CpuIsa machine = CpuIsa::generic;
  std::optional<CpuIsa> env_cap;
  std::string amx_refusal;  // why AMX is missing though CPUID has it
};

#if defined(__x86_64__)
struct Regs {
  unsigned a = 0, b = 0, c = 0, d = 0;
};
Regs cpuid(unsigned leaf, unsigned sub) {
  Regs r;
  if (!__get_cpuid_count(leaf, sub, &r.a, &r.b, &r.c, &r.d)) return Regs{};
  return r;
}
// XCR0: which register states the OS saves on a context switch (and so lets programs use).
unsigned long long xcr0() {
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}
bool bit(unsigned reg, int n) {
  return (reg >> n) & 1u;
}

constexpr long kArchGetXcompPerm = 0x1022, kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;

// Asks Linux for the AMX tile data state; returns "" when granted, else the reason.
std::string request_amx_permission() {
  errno = 0;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0)
    return "the kernel refused the tile permission (arch_prctl errno " + std::to_string(errno) +
           ": " + std::strerror(errno) + ")";
  unsigned long long granted = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &granted) != 0 ||
      !((granted >> kXfeatureXtiledata) & 1u))
    return "the tile permission was not granted";
  return "";
}
#endif

std::optional<CpuIsa> isa_from_env() {
  const char* env = std::getenv("RG_MAX_CPU_ISA");
  if (!env || !*env) return std::nullopt;
  return parse_cpu_isa(env);
}

Detected detect() {
  Detected d;
#if defined(__x86_64__)
  CpuFeatures& f = d.features;
  const Regs l1 = cpuid(1, 0);
  const bool osxsave = bit(l1.c, 27), avx = bit(l1.c, 28), fma = bit(l1.c, 12);
  const unsigned long long xcr = osxsave ? xcr0() : 0;
  const bool ymm_state = (xcr & 0x6) == 0x6, zmm_state = (xcr & 0xE6) == 0xE6;
  const bool tile_state = ((xcr >> 17) & 3) == 3;  // XTILECFG and XTILEDATA
  const Regs l7 = cpuid(7, 0), l7s1 = cpuid(7, 1);
  f.avx2_fma = avx && fma && ymm_state && bit(l7.b, 5);
  f.avx512 =
      f.avx2_fma && zmm_state && bit(l7.b, 16) && bit(l7.b, 17) && bit(l7.b, 30) && bit(l7.b, 31);
  f.avx512_bf16 = f.avx512 && bit(l7s1.a, 5);
  f.avx512_vbmi2 = f.avx512 && bit(l7.c, 6);
  f.avx512_fp16 = f.avx512 && bit(l7.d, 23);
  f.amx_bf16 = f.avx512 && tile_state && bit(l7.d, 24) && bit(l7.d, 22);
  if (f.amx_bf16) {
    d.amx_refusal = request_amx_permission();
    f.amx_granted = d.amx_refusal.empty();
  }
  if (f.avx2_fma) d.machine = CpuIsa::avx2;
  if (f.avx512) d.machine = CpuIsa::avx512;
  if (f.avx512_bf16 && f.avx512_vbmi2) d.machine = CpuIsa::avx512_bf16;
  if (d.machine == CpuIsa::avx512_bf16 && f.amx_granted) d.machine = CpuIsa::amx;
#endif
  d.env_cap = isa_from_env();
  return d;
}

const Detected& detected() {
  static const Detected d = detect();
  return d;
}

// -1: no cap set by set_max_cpu_isa.
std::atomic<int> program_cap{-1};

}  // namespace

const CpuFeatures& cpu_features() {
  return detected().features;
}

CpuIsa cpu_isa() {
  const Detected& d = detected();
  int level = static_cast<int>(d.machine);
  if (d.env_cap) level = std::min(level, static_cast<int>(*d.env_cap));
  const int cap = program_cap.load(std::memory_order_relaxed);
  if (cap >= 0) level = std::min(level, cap);
  return static_cast<CpuIsa>(level);
}

void set_max_cpu_isa(std::optional<CpuIsa> isa) {
  detected();  // the permission request happens once, before any cap matters
  program_cap.store(isa ? static_cast<int>(*isa) : -1, std::memory_order_relaxed);
}

CpuIsaCap::CpuIsaCap(CpuIsa isa) {
  const int cap = program_cap.load(std::memory_order_relaxed);
  if (cap >= 0) previous_ = static_cast<CpuIsa>(cap);
  set_max_cpu_isa(isa);
}

CpuIsaCap::~CpuIsaCap() {
  set_max_cpu_isa(previous_);
}

std::string_view cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::generic:
      return "generic";
    case CpuIsa::avx2:
      return "avx2";
    case CpuIsa::avx512:
      return "avx512";
    case CpuIsa::avx512_bf16:
      return "avx512_bf16";
    case CpuIsa::amx:
      return "amx";
  }
  return "?";
}

std::ostream& operator<<(std::ostream& out, CpuIsa isa) {
  return out << cpu_isa_name(isa);
}

CpuIsa parse_cpu_isa(std::string_view name) {
  for (CpuIsa isa : kAllIsas)
    if (cpu_isa_name(isa) == name) return isa;
  fail("cpu isa: '", name, "' is not one of generic, avx2, avx512, avx512_bf16, amx");
}

std::string cpu_isa_note() {
  const Detected& d = detected();
  std::string note = "cpu kernels: " + std::string(cpu_isa_name(cpu_isa())) +
                     " (machine: " + std::string(cpu_isa_name(d.machine));
  if (d.env_cap) note += ", RG_MAX_CPU_ISA=" + std::string(cpu_isa_name(*d.env_cap));
  if (program_cap.load() >= 0)
    note += ", capped at " + std::string(cpu_isa_name(static_cast<CpuIsa>(program_cap.load())));
  note += ")";
  if (!d.amx_refusal.empty()) note += "; amx: " + d.amx_refusal;
  if (d.features.avx512_bf16 && !d.features.avx512_vbmi2)
    note += "; avx512_bf16 without VBMI2: not used";
  return note;
}

}  // namespace rg
