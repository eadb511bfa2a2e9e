#include "apps/check_equivalence/judge.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"

namespace rg::apps {

namespace {

struct Worst {
  double diff = 0;     // the largest |difference|
  double ratio = 0;    // the largest |difference| / bound (> 1: outside the tolerance)
  std::string tensor;  // where the ratio is largest
};

Worst compare(const State& state, const State& expected, const Tolerance& tol) {
  Worst worst;
  RG_CHECK(state.size() == expected.size(), "check_equivalence: a run has ", state.size(),
           " tensors, its reference ", expected.size());
  for (const auto& [name, reference] : expected) {
    const auto it = state.find(name);
    RG_CHECK(it != state.end(), "check_equivalence: the run has no tensor '", name, "'");
    const auto a = it->second.to_vector<double>(), b = reference.to_vector<double>();
    RG_CHECK(a.size() == b.size(), "check_equivalence: '", name, "' has ", a.size(),
             " elements, its reference ", b.size());
    // Integer buffers (num_batches_tracked) must be equal: a bound of 0.
    const bool exact = !is_floating(reference.dtype());
    for (std::size_t i = 0; i < a.size(); ++i) {
      const double diff = std::abs(a[i] - b[i]);
      const double bound = exact ? 0.0 : tol.atol + tol.rtol * std::abs(b[i]);
      const double ratio = diff == 0 ? 0 : bound == 0 || std::isnan(diff) ? INFINITY : diff / bound;
      worst.diff = std::max(worst.diff, diff);
      if (ratio > worst.ratio || std::isnan(a[i])) {
        worst.ratio = std::isnan(a[i]) ? INFINITY : ratio;
        worst.tensor = name;
      }
    }
  }
  return worst;
}

double max_abs_difference(const Tensor& a, const Tensor& b) {
  const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  double worst = 0;
  for (std::size_t i = 0; i < va.size(); ++i) worst = std::max(worst, std::abs(va[i] - vb[i]));
  return worst;
}

}  // namespace

Tolerance equivalence_tolerance(DType dtype) {
  return dtype == DType::f64 ? Tolerance{1e-14, 1e-12} : Tolerance{1e-6, 1e-5};
}

double apart_across_ranks(const std::vector<std::pair<std::string, Tensor>>& params,
                          parallel::ProcessGroup& group) {
  double apart = 0;
  for (const auto& [name, p] : params) {
    const Tensor mine = p.to(Device::cpu()).to(DType::f64).contiguous();
    Tensor root = mine.clone();
    group.broadcast(root, 0)->wait();
    apart = std::max(apart, max_abs_difference(mine, root));
  }
  Tensor all = full({1}, apart, {.dtype = DType::f64});
  group.allreduce(all, parallel::ReduceOp::max)->wait();
  return all.item();
}

void print_differences(const State& whole, const std::vector<Run>& all_runs) {
  // The runs of the same net (the accumulation rows train one without BatchNorm: their
  // verdicts below compare them with their own reference).
  std::vector<const Run*> runs;
  for (const Run& run : all_runs)
    if (run.state.size() == whole.size() &&
        std::all_of(whole.begin(), whole.end(),
                    [&](const auto& t) { return run.state.count(t.first) > 0; }))
      runs.push_back(&run);
  std::printf("max |difference| from one device over the whole batch:\n\n| tensor |");
  for (const Run* run : runs) std::printf(" %s |", run->name.c_str());
  std::printf("\n| --- |");
  for (std::size_t i = 0; i < runs.size(); ++i) std::printf(" ---: |");
  std::printf("\n");
  for (const auto& [tensor, value] : whole) {
    std::printf("| %s |", tensor.c_str());
    for (const Run* run : runs)
      std::printf(" %.1e |", max_abs_difference(run->state.at(tensor), value));
    std::printf("\n");
  }
  std::printf(
      "\nWith SyncBN every difference is rounding. Without it each device normalises with its "
      "own share's statistics — another function of the batch — so every parameter differs by "
      "far more than rounding from the first step on, and the running statistics are those of "
      "share 0 (DP keeps replica 0's, DDP broadcasts rank 0's). Each run is therefore judged "
      "against the one-device run of its own kind:\n\n");
}

bool print_verdicts(const std::vector<Run>& runs, DType dtype) {
  const Tolerance tol = equivalence_tolerance(dtype);
  std::printf(
      "| run | must equal | max abs difference | worst against the tolerance | verdict |\n"
      "| --- | --- | ---: | --- | --- |\n");
  bool all_pass = true;
  std::vector<std::string> notes;
  for (const Run& run : runs) {
    const Worst w = compare(run.state, run.expected, run.exact ? Tolerance{0, 0} : tol);
    const bool ranks_ok = run.ranks_apart <= 0;
    const bool pass = w.ratio <= 1 && ranks_ok;
    all_pass = all_pass && pass;
    std::string where = w.diff == 0 ? "-" : w.tensor;
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, " (%.2g of it)", w.ratio);
    if (w.diff != 0) where += ratio;
    const std::string must = run.reference + (run.exact ? ", bit for bit" : "");
    std::printf("| %s | %s | %.1e | %s | %s |\n", run.name.c_str(), must.c_str(), w.diff,
                where.c_str(),
                !pass         ? "FAIL"
                : w.diff == 0 ? "pass (bit-exact)"
                              : "pass (within tolerance)");
    if (run.ranks_apart > 0)
      notes.push_back(run.name + ": FAIL — the ranks' parameters differ by up to " +
                      std::to_string(run.ranks_apart) + " (each rank must get the same bits)");
    else if (run.ranks_apart == 0)
      notes.push_back(run.name + ": every rank ends with rank 0's parameters, bit for bit");
    notes.push_back(run.name + ": " + run.why);
  }
  std::printf(
      "\ntolerance for %s, element by element: |difference| <= %.0e + %.0e x "
      "|reference| (integers and bit-exact runs: equal)\n",
      std::string(dtype_name(dtype)).c_str(), tol.atol, tol.rtol);
  for (const std::string& note : notes) std::printf("  %s\n", note.c_str());
  std::printf("\ncheck_equivalence: %s\n",
              all_pass ? "PASS: every run computes what one device computes"
                       : "FAIL: a run breaks the tolerance (see FAIL above)");
  return all_pass;
}

}  // namespace rg::apps
