// The chaos test's judge (tests/chaos/chaos.sh): reads a train_cifar output folder with the
// library's own readers.
//
//   chaos_check progress DIR        prints "EPOCH STEP" of DIR/last.safetensors ("0 0" where there
//                                   is none yet); fails when the checkpoint does not load or when
//                                   metrics.csv has lost a row of an epoch the checkpoint holds
//   chaos_check compare REF DIR     DIR must equal the uninterrupted run REF: every tensor of
//                                   last.safetensors and best.safetensors bit for bit, with the
//                                   same metadata; metrics.csv row for row; the TensorBoard
//                                   records of all event files (DIR and DIR/steps) as one run —
//                                   each (tag, step) once, with REF's value
//   chaos_check close REF DIR       DIR's last.safetensors within check_equivalence's float-order
//                                   bound of REF's (apps/check_equivalence/judge.h: per element
//                                   |a - b| <= atol + rtol·|b| for the tensors' dtype; integers
//                                   equal), at the same epoch and step: a run resumed on another
//                                   number of ranks against the uninterrupted one
//
// What a run measures rather than computes is compared for presence only: the CSV columns and
// tags of times and speeds (images_per_second, epoch_seconds, train_device_seconds, ...: any
// name ending in "seconds" or "per_second") and peak_memory_mib (a resumed process's allocator
// starts afresh), and the checkpoints' "config" entry (it names the output folder). Exit status
// 0: equal (or the progress printed); 1: a difference, each one printed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "apps/check_equivalence/judge.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "train/outputs.h"

namespace {
namespace fs = std::filesystem;

// By name, so that a time column added later is not taken for a computed one.
bool measured(const std::string& name) {
  return name.ends_with("seconds") || name.ends_with("per_second") || name == "peak_memory_mib";
}

int differences = 0;
void differ(const std::string& what) {
  std::cout << "chaos_check: " << what << "\n";
  ++differences;
}

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::ifstream in(path);
  RG_CHECK(in.good(), "chaos_check: cannot read ", path);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::stringstream cells_in(line);
    for (std::string cell; std::getline(cells_in, cell, ',');) cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

bool same_bytes(const rg::Tensor& a, const rg::Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0;
}

void compare_checkpoints(const std::string& ref, const std::string& run, const std::string& name) {
  const rg::SafetensorsFile a = rg::load_safetensors(ref + "/" + name);
  const rg::SafetensorsFile b = rg::load_safetensors(run + "/" + name);
  int tensors_differ = 0;
  for (const auto& [key, t] : a.tensors) {
    auto it = b.tensors.find(key);
    if (it == b.tensors.end())
      differ(name + ": no tensor " + key);
    else if (!same_bytes(t, it->second) && ++tensors_differ <= 5)
      differ(name + ": tensor " + key + " differs");
  }
  for (const auto& [key, t] : b.tensors)
    if (!a.tensors.count(key)) differ(name + ": a tensor the uninterrupted run lacks: " + key);
  if (tensors_differ > 5)
    differ(name + ": " + std::to_string(tensors_differ) + " tensors differ in all");
  for (const auto& [key, value] : a.metadata) {
    if (key == "config") continue;
    auto it = b.metadata.find(key);
    if (it == b.metadata.end())
      differ(name + ": no metadata " + key);
    else if (it->second != value)
      differ(name + ": metadata " + key + " is '" + it->second.substr(0, 80) + "', not '" +
             value.substr(0, 80) + "'");
  }
  for (const auto& [key, value] : b.metadata)
    if (!a.metadata.count(key)) differ(name + ": metadata the uninterrupted run lacks: " + key);
  if (tensors_differ == 0)
    std::cout << "chaos_check: " << name << ": " << a.tensors.size()
              << " tensors equal bit for bit\n";
}

void compare_csv(const std::string& ref, const std::string& run) {
  const auto a = read_csv(ref + "/metrics.csv");
  const auto b = read_csv(run + "/metrics.csv");
  if (a.empty() || b.empty() || a[0] != b[0]) return differ("metrics.csv: another header");
  if (a.size() != b.size())
    differ("metrics.csv: " + std::to_string(b.size() - 1) + " rows, not " +
           std::to_string(a.size() - 1));
  for (std::size_t r = 1; r < std::min(a.size(), b.size()); ++r) {
    if (a[r].size() != b[r].size()) {
      differ("metrics.csv: row " + std::to_string(r) + " has another number of cells");
      continue;
    }
    for (std::size_t c = 0; c < a[r].size(); ++c)
      if (!measured(a[0][c]) && a[r][c] != b[r][c])
        differ("metrics.csv: row " + std::to_string(r) + " " + a[0][c] + " is " + b[r][c] +
               ", not " + a[r][c]);
  }
  std::cout << "chaos_check: metrics.csv: " << b.size() - 1 << " rows\n";
}

// (folder, tag, step) -> value over every event file of `out` and `out`/steps; a record
// logged twice is a difference.
std::map<std::tuple<std::string, std::string, int64_t>, float> events(const std::string& out,
                                                                      const std::string& label) {
  std::map<std::tuple<std::string, std::string, int64_t>, float> records;
  for (const std::string& folder : {std::string("."), std::string(rg::train::kStepLogFolder)}) {
    if (!fs::is_directory(out + "/" + folder)) continue;
    for (const auto& e : fs::directory_iterator(out + "/" + folder)) {
      if (!e.path().filename().string().starts_with("events.out.tfevents.")) continue;
      int64_t last_step = -1;
      for (const rg::train::EventRecord& r : rg::train::read_event_records(e.path().string())) {
        if (r.tag.empty()) continue;
        if (r.step < last_step)
          differ(label + ": " + e.path().filename().string() + ": step " + std::to_string(r.step) +
                 " after step " + std::to_string(last_step));
        last_step = std::max(last_step, r.step);
        if (!records.emplace(std::tuple{folder, r.tag, r.step}, r.value).second)
          differ(label + ": " + folder + "/" + r.tag + " at step " + std::to_string(r.step) +
                 " logged twice");
      }
    }
  }
  return records;
}

void compare_events(const std::string& ref, const std::string& run) {
  const auto a = events(ref, "the uninterrupted run's events");
  const auto b = events(run, "events");
  for (const auto& [key, value] : a) {
    const auto& [folder, tag, step] = key;
    const std::string name = folder + "/" + tag + " at step " + std::to_string(step);
    auto it = b.find(key);
    if (it == b.end())
      differ("events: no " + name);
    else if (!measured(tag) && std::memcmp(&it->second, &value, sizeof value) != 0)
      differ("events: " + name + " is " + std::to_string(it->second) + ", not " +
             std::to_string(value));
  }
  for (const auto& [key, value] : b)
    if (!a.count(key))
      differ("events: " + std::get<0>(key) + "/" + std::get<1>(key) + " at step " +
             std::to_string(std::get<2>(key)) + ", which the uninterrupted run lacks");
  std::cout << "chaos_check: events: " << b.size() << " records\n";
}

int close(const std::string& ref, const std::string& run) {
  const rg::SafetensorsFile a = rg::load_safetensors(ref + "/last.safetensors");
  const rg::SafetensorsFile b = rg::load_safetensors(run + "/last.safetensors");
  for (const char* key : {"train.epoch", "train.step"})
    if (a.metadata.at(key) != b.metadata.at(key))
      differ(std::string(key) + " is " + b.metadata.at(key) + ", not " + a.metadata.at(key));
  double worst_diff = 0, worst_ratio = 0;
  std::string worst_at;
  std::size_t compared = 0;
  for (const auto& [key, t] : a.tensors) {
    const auto it = b.tensors.find(key);
    if (it == b.tensors.end()) {
      differ("no tensor " + key);
      continue;
    }
    if (it->second.shape() != t.shape() || it->second.dtype() != t.dtype()) {
      differ("tensor " + key + ": " + it->second.describe() + ", not " + t.describe());
      continue;
    }
    const bool floating = rg::is_floating(t.dtype());
    const rg::apps::Tolerance tol = rg::apps::equivalence_tolerance(t.dtype());
    const auto x = it->second.to_vector<double>(), y = t.to_vector<double>();
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double diff = std::abs(x[i] - y[i]);
      const double bound = floating ? tol.atol + tol.rtol * std::abs(y[i]) : 0;
      const double ratio = diff == 0 ? 0 : bound == 0 || std::isnan(diff) ? INFINITY : diff / bound;
      worst_diff = std::max(worst_diff, diff);
      if (ratio > worst_ratio) worst_ratio = ratio, worst_at = key;
    }
    ++compared;
  }
  for (const auto& [key, t] : b.tensors)
    if (!a.tensors.count(key)) differ("a tensor the reference lacks: " + key);
  if (worst_ratio > 1)
    differ("outside the bound: " + worst_at + " (" + std::to_string(worst_ratio) + " of it)");
  std::printf(
      "chaos_check: last.safetensors: %zu tensors, max |difference| %.1e, worst %.2g of the "
      "bound (%s)\n",
      compared, worst_diff, worst_ratio, worst_at.empty() ? "-" : worst_at.c_str());
  return differences ? 1 : 0;
}

int progress(const std::string& out) {
  const std::string last = out + "/last.safetensors";
  if (!fs::exists(last)) {
    std::cout << "0 0\n";
    return 0;
  }
  const rg::SafetensorsFile file = rg::load_safetensors(last);  // throws when it is broken
  const int64_t epoch = std::stoll(file.metadata.at("train.epoch"));
  const int64_t step = std::stoll(file.metadata.at("train.step"));
  // The rows of the epochs the checkpoint holds are never lost (later ones may be cut).
  const auto rows = read_csv(out + "/metrics.csv");
  RG_CHECK(static_cast<int64_t>(rows.size()) - 1 >= epoch, "chaos_check: ", out,
           "/metrics.csv has ", rows.size() - 1, " rows, but last.safetensors holds epoch ", epoch);
  std::cout << epoch << " " << step << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (args.size() == 2 && args[0] == "progress") return progress(args[1]);
    if (args.size() == 3 && args[0] == "compare") {
      for (const char* name : {"last.safetensors", "best.safetensors"})
        compare_checkpoints(args[1], args[2], name);
      compare_csv(args[1], args[2]);
      compare_events(args[1], args[2]);
      if (differences) {
        std::cout << "chaos_check: " << differences
                  << " difference(s) from the uninterrupted run\n";
        return 1;
      }
      std::cout << "chaos_check: equal to the uninterrupted run\n";
      return 0;
    }
    if (args.size() == 3 && args[0] == "close") return close(args[1], args[2]);
    std::cerr << "usage: chaos_check progress DIR | chaos_check compare REFERENCE DIR | "
                 "chaos_check close REFERENCE DIR\n";
    return 2;
  } catch (const std::exception& e) {
    std::cout << "chaos_check: error: " << e.what() << "\n";
    return 1;
  }
}
