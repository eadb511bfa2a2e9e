#pragma once
// Logs for people: a live progress bar on one terminal line, and a CSV of metrics that
// survives restarts (a resumed run appends to it).

#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace rg::train {

// "epoch 3/30 [#########.........] 120/391  1234 img/s  ETA 0:42  loss 1.234  acc 55.1%"
// redrawn in place (\r) at most every `min_interval` seconds; finish() ends the line.
class ProgressBar {
 public:
  ProgressBar(std::string label, int64_t total, bool enabled = true, double min_interval = 0.25);
  // Advances to `done` of `total`, having processed `items` more images; `metrics` are shown
  // in order, e.g. {{"loss", "1.234"}, {"acc", "55.1%"}}.
  void update(int64_t done, int64_t items,
              const std::vector<std::pair<std::string, std::string>>& metrics);
  // Whether update(done, ...) will draw (the others only count): metrics that cost a wait for
  // a device are read only then.
  bool will_draw(int64_t done) const;
  void finish();
  double elapsed_seconds() const;
  double items_per_second() const;

 private:
  std::string label_;
  int64_t total_, items_ = 0;
  bool enabled_;
  double min_interval_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool drawn_ = false;
};

// Appends rows to a CSV file, writing the header when the file is new or empty. Columns are
// fixed by the first row; later rows must have the same keys.
class CsvLog {
 public:
  explicit CsvLog(const std::string& path);
  void write(const std::vector<std::pair<std::string, double>>& row);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<std::string> columns_;
  std::ofstream out_;
  bool has_header_ = false;
};

std::string format_duration(double seconds);  // "1:02:03" or "2:03"

}  // namespace rg::train
