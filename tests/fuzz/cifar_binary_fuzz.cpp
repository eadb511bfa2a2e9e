// Fuzz target: a CIFAR-10 binary test batch of arbitrary bytes, read by Cifar10Binary.
#include <cstdint>

#include "core/error.h"
#include "data/cifar10.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string dir = rg::fuzz::scratch("cifar");
  std::filesystem::create_directories(dir);
  rg::fuzz::write_file(dir + "/test_batch.bin", data, size);
  try {
    rg::data::Cifar10Binary set(dir, rg::data::Split::test);
    for (int64_t i = 0; i < set.size(); ++i)
      if (set.get(i).label >= set.num_classes()) __builtin_trap();
  } catch (const rg::Error&) {
  }
  return 0;
}
