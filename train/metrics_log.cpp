#include "train/metrics_log.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "core/error.h"

namespace rg::train {

std::string format_duration(double seconds) {
  const auto s = static_cast<int64_t>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  return buf;
}

ProgressBar::ProgressBar(std::string label, int64_t total, bool enabled, double min_interval)
    : label_(std::move(label)),
      total_(total),
      enabled_(enabled),
      min_interval_(min_interval),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

double ProgressBar::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

double ProgressBar::items_per_second() const {
  const double t = elapsed_seconds();
  return t > 0 ? static_cast<double>(items_) / t : 0.0;
}

bool ProgressBar::will_draw(int64_t done) const {
  if (!enabled_) return false;
  const auto now = std::chrono::steady_clock::now();
  return !drawn_ || done >= total_ ||
         std::chrono::duration<double>(now - last_draw_).count() >= min_interval_;
}

void ProgressBar::update(int64_t done, int64_t items,
                         const std::vector<std::pair<std::string, std::string>>& metrics) {
  items_ += items;
  if (!will_draw(done)) return;
  last_draw_ = std::chrono::steady_clock::now();
  drawn_ = true;
  constexpr int kWidth = 20;
  const int filled = total_ > 0 ? static_cast<int>(kWidth * done / total_) : kWidth;
  const double elapsed = elapsed_seconds();
  const double eta =
      done > 0 ? elapsed * static_cast<double>(total_ - done) / static_cast<double>(done) : 0;
  std::ostringstream line;
  line << '\r' << label_ << " [" << std::string(filled, '#') << std::string(kWidth - filled, '.')
       << "] " << done << '/' << total_ << "  " << static_cast<int64_t>(items_per_second())
       << " img/s  ETA " << format_duration(eta);
  for (const auto& [k, v] : metrics) line << "  " << k << ' ' << v;
  line << "\x1b[K";  // clear the rest of the line
  std::cerr << line.str() << std::flush;
}

void ProgressBar::finish() {
  if (enabled_ && drawn_) std::cerr << '\n' << std::flush;
  drawn_ = false;
}

CsvLog::CsvLog(const std::string& path) : path_(path) {
  has_header_ = std::filesystem::exists(path) && std::filesystem::file_size(path) > 0;
  if (has_header_) {
    std::ifstream in(path);
    std::string header;
    std::getline(in, header);
    std::stringstream ss(header);
    for (std::string col; std::getline(ss, col, ',');) columns_.push_back(col);
  }
  out_.open(path, std::ios::app);
  RG_CHECK(out_.good(), "CSV log: cannot open '", path, "' for appending");
}

void CsvLog::write(const std::vector<std::pair<std::string, double>>& row) {
  if (columns_.empty())
    for (const auto& [k, _] : row) columns_.push_back(k);
  RG_CHECK(row.size() == columns_.size(), "CSV log '", path_, "': row has ", row.size(),
           " values for ", columns_.size(), " columns");
  for (std::size_t i = 0; i < row.size(); ++i)
    RG_CHECK(row[i].first == columns_[i], "CSV log '", path_, "': column ", i, " is '", columns_[i],
             "', got '", row[i].first, "'");
  if (!has_header_) {
    for (std::size_t i = 0; i < columns_.size(); ++i) out_ << (i ? "," : "") << columns_[i];
    out_ << '\n';
    has_header_ = true;
  }
  for (std::size_t i = 0; i < row.size(); ++i) {
    // Integers (epochs, steps, a loss scale of 2^24) exactly; %.6g would print 16777216 as
    // 1.67772e+07.
    const double v = row[i].second;
    char buf[32];
    if (v == std::floor(v) && std::abs(v) < 0x1p53)
      std::snprintf(buf, sizeof buf, "%.0f", v);
    else
      std::snprintf(buf, sizeof buf, "%.6g", v);
    out_ << (i ? "," : "") << buf;
  }
  out_ << '\n';
  out_.flush();
  RG_CHECK(out_.good(), "CSV log: writing '", path_, "' failed");
}

}  // namespace rg::train
