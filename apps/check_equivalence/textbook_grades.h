#pragma once
// check_equivalence --textbook NAME: the textbook version of a lesson (parallel/textbook/, or a
// learner's own file built in its place with -DRG_LEARN_<NAME>=FILE) against one device and
// against the real implementation. Ranks are threads of this process (ThreadGroup), so it runs
// without mpirun.

#include <string>
#include <vector>

#include "apps/check_equivalence/judge.h"

namespace rg::apps {

inline const std::vector<std::string> kTextbookLessons = {"ring",    "data_parallel", "ddp",
                                                          "sync_bn", "loss_scaler",   "zero"};

struct Graded {
  std::string what;  // the first line of the report
  std::vector<Run> runs;
  DType dtype = DType::f64;  // the tolerance's
};

// Throws rg::Error naming the lessons for an unknown name.
Graded grade_textbook(const std::string& lesson);

}  // namespace rg::apps
