#pragma once
#include <ostream>

#include "apps/predict/options.h"

namespace rg::apps {

// The whole of predict: the checkpoint's model, then each input's top-k classes (printed to
// `out`) or predicted mask (written, one line each to `out`). Returns the exit code; throws
// rg::Error naming a bad checkpoint, input or output.
int run_predict(const PredictOptions& options, std::ostream& out);

}  // namespace rg::apps
