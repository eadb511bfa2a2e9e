// Fuzz target: read_model_card (a checkpoint's model card, train/model_card.h) on arbitrary
// metadata. The input is "key=value" lines (a value may not hold a newline; the seeds are the
// cards train_cifar and train_unet write); the result is a card that survives its own
// metadata unchanged, or an rg::Error naming the key. Built from train/model_card.cpp alone:
// it needs core and data, not the instrumented nn, parallel and MPI of a whole train build.
#include <cstdint>
#include <map>
#include <string>

#include "core/error.h"
#include "train/model_card.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::map<std::string, std::string> metadata;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    const std::size_t eq = line.find('=');
    if (eq != std::string::npos) metadata[line.substr(0, eq)] = line.substr(eq + 1);
    at = end + 1;
  }
  try {
    const rg::train::ModelCard card = rg::train::read_model_card(metadata, "fuzz");
    // Written back and read again, the card says the same.
    const auto again = rg::train::model_card_metadata(card);
    const rg::train::ModelCard back = rg::train::read_model_card(again, "fuzz again");
    if (rg::train::model_card_metadata(back) != again) __builtin_trap();
  } catch (const rg::Error&) {
  }
  return 0;
}
