// Fuzz target: a CSV list (path,label lines) of arbitrary bytes, beside a 2x2 image it may
// name (a.bmp), opened by CsvList with and without a class count.
#include <cstdint>

#include "core/error.h"
#include "data/image_list.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const std::string dir = [] {
    std::string d = rg::fuzz::scratch("csv");
    std::filesystem::create_directories(d);
    rg::fuzz::write_file(d + "/a.bmp", rg::fuzz::kTinyBmp, sizeof rg::fuzz::kTinyBmp);
    return d;
  }();
  rg::fuzz::write_file(dir + "/list.csv", data, size);
  for (int64_t classes : {int64_t{0}, int64_t{10}}) {
    try {
      rg::data::CsvList list(dir + "/list.csv", {.num_classes = classes});
      for (int64_t i = 0; i < list.size(); ++i)
        if (list.get(i).label >= list.num_classes()) __builtin_trap();
    } catch (const rg::Error&) {
    }
  }
  return 0;
}
