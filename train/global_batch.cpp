#include "train/global_batch.h"

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/safetensors.h"
#include "parallel/horovod.h"

namespace rg::train {

namespace {
constexpr const char* kRanks = "batch.ranks";
constexpr const char* kSize = "batch.size";
constexpr const char* kAccumulate = "batch.accumulate_steps";
constexpr const char* kGlobal = "batch.global";

std::string plural(int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

int64_t read_positive(const std::map<std::string, std::string>& meta, const char* key) {
  const auto it = meta.find(key);
  RG_CHECK(it != meta.end(), "the checkpoint records a global batch without '", key, "'");
  std::size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(it->second, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  RG_CHECK(used == it->second.size() && used > 0 && value >= 1, "the checkpoint's '", key,
           "' must be a positive integer, got '", it->second, "'");
  return value;
}
}  // namespace

std::string describe(const GlobalBatch& b) {
  return plural(b.ranks, "rank", "ranks") + " × batch " + std::to_string(b.batch_size) + " × " +
         plural(b.accumulate_steps, "accumulation step", "accumulation steps") + " = " +
         std::to_string(b.global());
}

std::map<std::string, std::string> global_batch_metadata(const GlobalBatch& b) {
  return {{kRanks, std::to_string(b.ranks)},
          {kSize, std::to_string(b.batch_size)},
          {kAccumulate, std::to_string(b.accumulate_steps)},
          {kGlobal, std::to_string(b.global())}};
}

std::optional<GlobalBatch> recorded_global_batch(const std::map<std::string, std::string>& meta) {
  if (!meta.count(kGlobal)) return std::nullopt;
  const GlobalBatch b{.ranks = read_positive(meta, kRanks),
                      .batch_size = read_positive(meta, kSize),
                      .accumulate_steps = read_positive(meta, kAccumulate)};
  RG_CHECK(b.global() == read_positive(meta, kGlobal), "the checkpoint's global batch ",
           meta.at(kGlobal), " is not its ", describe(b));
  return b;
}

std::vector<int64_t> rank_counts_that_work(const GlobalBatch& recorded) {
  const int64_t global = recorded.global();
  std::vector<int64_t> counts;
  for (int64_t m = 1; m <= global; ++m)
    if (global % (m * recorded.accumulate_steps) == 0 || global % (m * recorded.batch_size) == 0)
      counts.push_back(m);
  return counts;
}

ContinuedBatch continue_global_batch(const GlobalBatch& recorded, int64_t ranks,
                                     const GlobalBatch& asked, const std::string& program) {
  RG_CHECK(ranks >= 1, program, ": a world of ", ranks, " ranks");
  const int64_t global = recorded.global();
  GlobalBatch chosen{.ranks = ranks};
  if (ranks * asked.batch_size * asked.accumulate_steps == global) {  // 1. as asked
    chosen.batch_size = asked.batch_size;
    chosen.accumulate_steps = asked.accumulate_steps;
  } else if (global % (ranks * recorded.accumulate_steps) == 0) {  // 2. the per-rank batch
    chosen.accumulate_steps = recorded.accumulate_steps;
    chosen.batch_size = global / (ranks * recorded.accumulate_steps);
  } else if (global % (ranks * recorded.batch_size) == 0) {  // 3. the accumulation
    chosen.batch_size = recorded.batch_size;
    chosen.accumulate_steps = global / (ranks * recorded.batch_size);
  } else {
    const std::vector<int64_t> kept = rank_counts_that_work(recorded);
    std::ostringstream works, asked_for;
    for (int64_t m : kept) works << (works.tellp() > 0 ? ", " : "") << m;
    // Rule 1 takes any split of the global batch asked for: the divisors that 2 and 3 miss.
    for (int64_t m = 1; m <= global; ++m)
      if (global % m == 0 && std::find(kept.begin(), kept.end(), m) == kept.end())
        asked_for << (asked_for.tellp() > 0 ? ", " : "") << m;
    if (asked_for.tellp() > 0)
      works << "; with --batch-size B --accumulate-steps K such that ranks × B × K = " << global
            << ", also " << asked_for.str();
    fail(program, ": cannot resume on ", plural(ranks, "rank", "ranks"),
         ": the run keeps its global batch of ", global, " (", describe(recorded), "), and ", ranks,
         " ranks divide it neither with ",
         plural(recorded.accumulate_steps, "accumulation step", "accumulation steps"),
         " (a per-rank batch of ", global, "/", ranks * recorded.accumulate_steps,
         ") nor with a per-rank batch of ", recorded.batch_size, " (", global, "/",
         ranks * recorded.batch_size, " accumulation steps). Rank counts that work: ", works.str(),
         ".");
  }
  ContinuedBatch result{.batch = chosen};
  std::ostringstream change;
  if (ranks != recorded.ranks)
    change << "resumed on " << plural(ranks, "rank", "ranks") << ", was " << recorded.ranks;
  else if (!(chosen == recorded))
    change << "resumed on the same " << plural(ranks, "rank", "ranks");
  if (chosen.batch_size != recorded.batch_size)
    change << ": per-rank batch " << recorded.batch_size << " → " << chosen.batch_size;
  if (chosen.accumulate_steps != recorded.accumulate_steps)
    change << (chosen.batch_size != recorded.batch_size ? ", " : ": ") << "accumulation steps "
           << recorded.accumulate_steps << " → " << chosen.accumulate_steps;
  if (change.tellp() > 0) change << ", global " << global << " kept";
  // A split asked for that differs from the checkpoint's and was not taken: say why.
  const auto same_split = [](const GlobalBatch& a, const GlobalBatch& b) {
    return a.batch_size == b.batch_size && a.accumulate_steps == b.accumulate_steps;
  };
  if (!same_split(asked, chosen) && !same_split(asked, recorded))
    change << (change.tellp() > 0 ? " " : "") << "(--batch-size " << asked.batch_size
           << " --accumulate-steps " << asked.accumulate_steps << " asked for "
           << asked.batch_size * asked.accumulate_steps * ranks << " a step; the run keeps "
           << global << ": " << describe(chosen) << ")";
  result.change = change.str();
  return result;
}

GlobalBatch resume_global_batch(const std::string& checkpoint, const GlobalBatch& asked,
                                parallel::ProcessGroup& group, const std::string& program) {
  nlohmann::json verdict = {{"batch", asked.batch_size}, {"accumulate", asked.accumulate_steps}};
  if (group.rank() == 0 && !checkpoint.empty()) {
    try {
      const SafetensorsFile file = load_safetensors(checkpoint);
      if (const auto recorded = recorded_global_batch(file.metadata)) {
        const ContinuedBatch c = continue_global_batch(*recorded, group.size(), asked, program);
        verdict = {{"batch", c.batch.batch_size},
                   {"accumulate", c.batch.accumulate_steps},
                   {"change", c.change}};
      } else {  // written before checkpoints recorded it: the split asked, said so
        verdict["change"] =
            "the checkpoint does not record its global batch (written before "
            "ringgrad recorded it): resuming with the split asked, " +
            describe({group.size(), asked.batch_size, asked.accumulate_steps});
      }
    } catch (const Error& e) {
      verdict = {{"error", std::string(e.what())}};
    }
  }
  if (group.size() > 1)
    verdict = nlohmann::json::parse(parallel::broadcast_object(verdict.dump(), 0, group));
  if (verdict.contains("error"))
    fail(verdict["error"].get<std::string>(), group.rank() == 0 ? "" : " (found by rank 0)");
  if (group.rank() == 0 && verdict.contains("change") &&
      !verdict["change"].get<std::string>().empty())
    std::cout << verdict["change"].get<std::string>() << std::endl;
  return {.ranks = group.size(),
          .batch_size = verdict["batch"].get<int64_t>(),
          .accumulate_steps = verdict["accumulate"].get<int64_t>()};
}

int64_t optimizer_steps(int64_t batches, int64_t accumulate_steps) {
  RG_CHECK(accumulate_steps >= 1, "accumulate_steps must be >= 1, got ", accumulate_steps);
  return (batches + accumulate_steps - 1) / accumulate_steps;
}

}  // namespace rg::train
