// Fuzz target: train_cifar's options. An input starting with 'S' is one --set key=value (the
// rest); any other input is the text of a --config file. Options parse or give an rg::Error.
#include <cstdint>
#include <string>
#include <vector>

#include "apps/train_cifar/config.h"
#include "core/error.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> args = {"train_cifar"};
  if (!text.empty() && text[0] == 'S') {
    args.push_back("--set");
    args.push_back(text.substr(1).c_str());  // argv strings end at their first NUL
  } else {
    const std::string path = rg::fuzz::scratch("config.json");
    rg::fuzz::write_file(path, data, size);
    args.push_back("--config");
    args.push_back(path);
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  try {
    rg::apps::CommandLine cli =
        rg::apps::parse_command_line(static_cast<int>(argv.size()), argv.data());
    cli.config.to_json().dump();  // what checkpoints store: must not throw
  } catch (const rg::Error&) {
  }
  return 0;
}
