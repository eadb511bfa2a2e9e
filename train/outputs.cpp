#include "train/outputs.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/error.h"
#include "core/safetensors.h"
#include "parallel/horovod.h"
#include "train/tensorboard.h"

namespace rg::train {
namespace fs = std::filesystem;

namespace {
const char* const kCheckpoints[] = {"last.safetensors", "best.safetensors"};

bool is_event_file(const fs::path& p) {
  return p.filename().string().starts_with("events.out.tfevents.");
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  RG_CHECK(in.good(), "cannot read '", path, "'");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// Protobuf wire format, as much as an Event needs (train/tensorboard.cpp writes it).
bool get_varint(const std::string& s, std::size_t& at, std::size_t end, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && at < end; shift += 7) {
    const auto byte = static_cast<uint8_t>(s[at++]);
    v |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if (!(byte & 0x80)) return true;
  }
  return false;
}

// Walks the fields of the message in s[at, end), calling visit(field, wire_type, value, begin,
// size) for each; value holds varints and fixed fields, [begin, begin + size) length-delimited
// ones. False on malformed input.
template <class Visit>
bool for_each_field(const std::string& s, std::size_t at, std::size_t end, Visit visit) {
  while (at < end) {
    uint64_t key = 0, value = 0;
    if (!get_varint(s, at, end, key)) return false;
    const int field = static_cast<int>(key >> 3), wire = static_cast<int>(key & 7);
    std::size_t begin = at, size = 0;
    if (wire == 0) {
      if (!get_varint(s, at, end, value)) return false;
    } else if (wire == 1 || wire == 5) {
      size = wire == 1 ? 8 : 4;
      if (end - at < size) return false;
      std::memcpy(&value, s.data() + at, size);  // little-endian host, as the writer
      at += size;
      size = 0;
    } else if (wire == 2) {
      if (!get_varint(s, at, end, value) || value > end - at) return false;
      begin = at;
      size = static_cast<std::size_t>(value);
      at += size;
    } else {
      return false;
    }
    visit(field, wire, value, begin, size);
  }
  return true;
}
}  // namespace

bool written_since(const fs::path& file, double unix_seconds) {
  if (unix_seconds <= 0) return false;
  std::error_code ec;
  const fs::file_time_type written = fs::last_write_time(file, ec);
  if (ec) return false;
  const auto since_epoch =
      std::chrono::duration<double>(std::chrono::file_clock::to_sys(written).time_since_epoch());
  return since_epoch.count() >= unix_seconds;
}

double elastic_job_start() {
  const char* text = std::getenv(kElasticJobStartVariable);
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  RG_CHECK(end != text && *end == '\0' && seconds > 0, kElasticJobStartVariable,
           " must be a time in seconds since 1970 (scripts/mpirun.sh --elastic sets it), got '",
           text, "'");
  return seconds;
}

std::vector<std::string> earlier_run_files(const std::string& out) {
  std::vector<std::string> found;
  std::error_code ec;
  if (!fs::is_directory(out, ec)) return found;
  for (const char* name : kCheckpoints)
    if (fs::exists(fs::path(out) / name)) found.push_back(name);
  for (const char* csv : {"metrics.csv", kLossScaleCsv})
    if (fs::exists(fs::path(out) / csv)) found.push_back(csv);
  for (const auto& entry : fs::directory_iterator(out, ec))
    if (is_event_file(entry.path())) found.push_back(entry.path().filename().string());
  return found;
}

void prepare_output_folder(const OutputOptions& cfg) {
  RG_CHECK(!(cfg.overwrite && !cfg.resume.empty()), cfg.program, ": --overwrite and --resume '",
           cfg.resume, "' contradict each other: resume the run in '", cfg.out,
           "', or start it over");
  fs::create_directories(cfg.out);
  const std::vector<std::string> earlier = earlier_run_files(cfg.out);
  std::string list;
  for (const std::string& f : earlier) list += (list.empty() ? "" : ", ") + f;
  // --resume auto finding no checkpoint starts a new run: over an earlier run's files only when
  // they are this elastic job's own, from an attempt that ended before its first checkpoint.
  const bool nothing_to_resume =
      cfg.resume == "auto" && !fs::exists(fs::path(cfg.out) / "last.safetensors");
  if (nothing_to_resume && !earlier.empty()) {
    std::string older;
    for (const std::string& f : earlier)
      if (!written_since(fs::path(cfg.out) / f, cfg.own_files_since))
        older += (older.empty() ? "" : ", ") + f;
    RG_CHECK(older.empty(), cfg.program, ": '", cfg.out, "' holds an earlier run's files (", older,
             ") but no last.safetensors: --resume auto has nothing to resume and would start a "
             "new run over them. Start over with --overwrite instead of --resume auto (which "
             "deletes those files), resume a checkpoint by name (--resume FILE), or choose "
             "another --out.");
    std::cout << cfg.program << ": no last.safetensors in '" << cfg.out << "': an earlier attempt "
              << "of this elastic job ended before its first checkpoint; starting over (" << list
              << " removed)" << std::endl;
    for (const std::string& f : earlier) fs::remove(fs::path(cfg.out) / f);
  }
  if (cfg.resume.empty() && !earlier.empty()) {
    // Overwriting is asked for by name, never assumed: these files may be days of training.
    RG_CHECK(cfg.overwrite, cfg.program, ": '", cfg.out, "' holds an earlier run (", list,
             "). Continue it with --resume auto, start over with --overwrite (which deletes "
             "those files), or choose another --out.");
    for (const std::string& f : earlier) fs::remove(fs::path(cfg.out) / f);
  }
  // A writer killed between creating its temporary and renaming it leaves the temporary
  // behind; only this process writes these checkpoints now, so any such file is stale.
  for (const char* name : kCheckpoints)
    remove_stale_temporaries((fs::path(cfg.out) / name).string());
}

std::string resume_path(const OutputOptions& options) {
  if (options.resume != "auto") return options.resume;
  const std::string last = options.out + "/last.safetensors";
  return fs::exists(last) ? last : "";
}

std::string prepare_run_folder(const OutputOptions& options, RunKind kind,
                               parallel::ProcessGroup& group) {
  std::string checkpoint, refusal;
  if (group.rank() == 0) {
    try {
      if (kind == RunKind::evaluate)
        fs::create_directories(options.out);
      else
        prepare_output_folder(options);
      checkpoint = resume_path(options);
      RG_CHECK(kind == RunKind::train || !checkpoint.empty(), options.program,
               ": --eval-only found no checkpoint to evaluate (--resume ", options.resume, ": no ",
               options.out, "/last.safetensors)");
    } catch (const std::exception& e) {
      refusal = e.what();
    }
  }
  if (group.size() > 1) refusal = parallel::broadcast_object(refusal, 0, group);
  if (!refusal.empty()) fail(refusal, group.rank() == 0 ? "" : " (found by rank 0)");
  return checkpoint;
}

int64_t truncate_metrics_csv(const std::string& path, int64_t last) {
  if (!fs::exists(path)) return 0;
  const std::string text = read_all(path);
  const std::size_t header_end = text.find('\n');
  if (header_end == std::string::npos) {  // not even a whole header: start the file over
    fs::resize_file(path, 0);
    return 0;
  }
  // Rows are in order of the first column: keep them up to the first row past `last`, or the
  // first line without its newline (a write cut short).
  std::size_t keep = header_end + 1;
  int64_t rows = 0, kept = 0;
  bool cutting = false;
  for (std::size_t at = keep; at < text.size();) {
    const std::size_t nl = text.find('\n', at);
    ++rows;
    if (!cutting) {
      char* end = nullptr;
      const double row_first = std::strtod(text.c_str() + at, &end);
      cutting = nl == std::string::npos || end == text.c_str() + at ||
                row_first > static_cast<double>(last);
      if (!cutting) {
        keep = nl + 1;
        ++kept;
      }
    }
    at = nl == std::string::npos ? text.size() : nl + 1;
  }
  if (keep < text.size()) fs::resize_file(path, keep);
  return rows - kept;
}

std::vector<EventRecord> read_event_records(const std::string& path) {
  const std::string s = read_all(path);
  std::vector<EventRecord> records;
  std::size_t at = 0;
  while (s.size() - at >= 12) {
    uint64_t len = 0;
    uint32_t len_crc = 0, data_crc = 0;
    std::memcpy(&len, s.data() + at, 8);
    std::memcpy(&len_crc, s.data() + at + 8, 4);
    if (len_crc != masked_crc32c(&len, 8) || len > s.size() - at - 12 ||
        s.size() - at - 12 - len < 4)
      break;
    const std::size_t data = at + 12;
    std::memcpy(&data_crc, s.data() + data + len, 4);
    if (data_crc != masked_crc32c(s.data() + data, len)) break;
    EventRecord r;
    r.begin = static_cast<int64_t>(at);
    r.end = static_cast<int64_t>(data + len + 4);
    const bool ok = for_each_field(
        s, data, data + len,
        [&](int field, int wire, uint64_t value, std::size_t b, std::size_t n) {
          if (field == 2 && wire == 0) r.step = static_cast<int64_t>(value);
          if (field != 5 || wire != 2) return;  // summary
          for_each_field(s, b, b + n, [&](int f, int w, uint64_t, std::size_t vb, std::size_t vn) {
            if (f != 1 || w != 2) return;  // summary.value
            for_each_field(s, vb, vb + vn,
                           [&](int g, int gw, uint64_t v, std::size_t tb, std::size_t tn) {
                             if (g == 1 && gw == 2) r.tag = s.substr(tb, tn);
                             if (g == 2 && gw == 5) {
                               const auto bits = static_cast<uint32_t>(v);
                               std::memcpy(&r.value, &bits, 4);
                             }
                           });
          });
        });
    if (!ok) break;
    records.push_back(r);
    at = static_cast<std::size_t>(r.end);
  }
  return records;
}

int64_t truncate_event_file(const std::string& path, int64_t step) {
  const std::vector<EventRecord> records = read_event_records(path);
  if (records.empty()) return 0;  // not an event file this program wrote: left alone
  int64_t keep = 0, kept = 0;
  for (const EventRecord& r : records) {
    if (r.step > step) break;  // a file's steps only grow: the rest is past the resume
    keep = r.end;
    ++kept;
  }
  // Also drops what follows the last whole record: a record cut short by a kill.
  if (keep < static_cast<int64_t>(fs::file_size(path)))
    fs::resize_file(path, static_cast<uintmax_t>(keep));
  return static_cast<int64_t>(records.size()) - kept;
}

void truncate_logs(const std::string& out, int64_t epoch, int64_t step) {
  truncate_metrics_csv((fs::path(out) / "metrics.csv").string(), epoch);
  truncate_metrics_csv((fs::path(out) / kLossScaleCsv).string(), step);
  // train/report.cpp uses the epoch number (from 1) as the TensorBoard step.
  for (const auto& entry : fs::directory_iterator(out))
    if (is_event_file(entry.path())) truncate_event_file(entry.path().string(), epoch);
  const fs::path steps = fs::path(out) / kStepLogFolder;
  if (!fs::is_directory(steps)) return;
  for (const auto& entry : fs::directory_iterator(steps))
    if (is_event_file(entry.path())) truncate_event_file(entry.path().string(), step);
}

}  // namespace rg::train
