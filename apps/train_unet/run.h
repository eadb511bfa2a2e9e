#pragma once
#include "apps/train_unet/config.h"

namespace rg::apps {

// The whole of train_unet: init, data, model, wrap, loop. Returns the exit code.
int run_unet(const UnetConfig& config);

}  // namespace rg::apps
