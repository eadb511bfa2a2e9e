#include "parallel/faults.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <map>
#include <thread>

#include "core/error.h"

namespace rg::parallel {
namespace {

// The fields each kind takes: required ones, then optional ones.
struct KindFields {
  std::vector<std::string> required, optional;
};

KindFields fields_of(FaultKind kind) {
  switch (kind) {
    case FaultKind::exit:
      return {{"rank", "step"}, {"code", "at"}};
    case FaultKind::delay:
      return {{"rank", "step", "seconds"}, {"at"}};
    case FaultKind::overflow:
      return {{"step"}, {"rank"}};
    case FaultKind::kill:
    case FaultKind::stop:
    case FaultKind::error:
      break;
  }
  return {{"rank", "step"}, {"at"}};
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t at = text.find(sep, start);
    parts.push_back(text.substr(start, at - start));
    if (at == std::string::npos) return parts;
    start = at + 1;
  }
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

// Text from the command line, for a message: cut short (at a UTF-8 character boundary).
std::string clipped(const std::string& text) {
  if (text.size() <= 80) return text;
  std::size_t cut = 80;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "... (" + std::to_string(text.size()) + " bytes)";
}

int64_t integer_field(const std::string& spec, const std::string& key, const std::string& text,
                      int64_t lo, int64_t hi) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  RG_CHECK(ec == std::errc() && ptr == end && v >= lo && v <= hi, "fault '", spec, "': ", key,
           " must be an integer in [", lo, ", ", hi, "], got '", clipped(text), "'");
  return v;
}

double seconds_field(const std::string& spec, const std::string& text) {
  double v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  RG_CHECK(
      ec == std::errc() && ptr == end && std::isfinite(v) && v > 0 && v <= kMaxFaultDelaySeconds,
      "fault '", spec, "': seconds must be a number in (0, ", kMaxFaultDelaySeconds, "], got '",
      clipped(text), "'");
  return v;
}

// write(2), not stdio: a test forks a process that applies a fault, and a stdio lock held by
// another thread at the fork would never be released in the child.
void announce(const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n <= 0) return;  // nowhere to say it; the fault still happens
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

const char* fault_point_name(FaultPoint point) {
  switch (point) {
    case FaultPoint::step:
      return "step";
    case FaultPoint::backward:
      return "backward";
    case FaultPoint::checkpoint:
      return "checkpoint";
  }
  return "?";
}

const char* fault_kind_name(FaultKind kind) {
  switch (kind) {
    case FaultKind::kill:
      return "kill";
    case FaultKind::exit:
      return "exit";
    case FaultKind::delay:
      return "delay";
    case FaultKind::stop:
      return "stop";
    case FaultKind::error:
      return "error";
    case FaultKind::overflow:
      return "overflow";
  }
  return "?";
}

Fault parse_fault(const std::string& spec) {
  const std::string shown = clipped(spec);
  const std::vector<std::string> parts = split(spec, ':');
  Fault f;
  f.spec = shown;
  const std::string& kind = parts[0];
  if (kind == "kill")
    f.kind = FaultKind::kill;
  else if (kind == "exit")
    f.kind = FaultKind::exit;
  else if (kind == "delay")
    f.kind = FaultKind::delay;
  else if (kind == "stop")
    f.kind = FaultKind::stop;
  else if (kind == "error")
    f.kind = FaultKind::error;
  else if (kind == "overflow")
    f.kind = FaultKind::overflow;
  else
    fail("fault '", shown, "': unknown kind '", clipped(kind),
         "' (expected kill, exit, delay, stop, error or overflow, e.g. kill:rank=1:step=50)");

  const KindFields allowed = fields_of(f.kind);
  std::map<std::string, std::string> values;
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::size_t eq = parts[i].find('=');
    RG_CHECK(eq != std::string::npos && eq > 0, "fault '", shown, "': expected key=value, got '",
             clipped(parts[i]), "'");
    const std::string key = parts[i].substr(0, eq);
    const bool known =
        std::find(allowed.required.begin(), allowed.required.end(), key) !=
            allowed.required.end() ||
        std::find(allowed.optional.begin(), allowed.optional.end(), key) != allowed.optional.end();
    std::vector<std::string> all = allowed.required;
    all.insert(all.end(), allowed.optional.begin(), allowed.optional.end());
    RG_CHECK(known, "fault '", shown, "': ", kind, " takes no '", clipped(key), "' (it takes ",
             joined(all), ")");
    RG_CHECK(values.emplace(key, parts[i].substr(eq + 1)).second, "fault '", shown, "': '", key,
             "' is given twice");
  }
  for (const std::string& key : allowed.required)
    RG_CHECK(values.count(key), "fault '", shown, "': ", kind, " needs ", key,
             "= (e.g. kill:rank=1:step=50, delay:rank=1:step=50:seconds=20)");

  if (values.count("rank") || f.kind != FaultKind::overflow)
    f.rank = static_cast<int>(integer_field(shown, "rank", values["rank"], 0, kMaxFaultRank));
  if (f.kind == FaultKind::overflow) f.at = FaultPoint::backward;
  f.step = integer_field(shown, "step", values["step"], 1, INT64_MAX);
  if (values.count("code"))
    f.exit_code = static_cast<int>(integer_field(shown, "code", values["code"], 0, 255));
  if (values.count("seconds")) f.seconds = seconds_field(shown, values["seconds"]);
  if (values.count("at")) {
    const std::string& at = values["at"];
    if (at == "step")
      f.at = FaultPoint::step;
    else if (at == "backward")
      f.at = FaultPoint::backward;
    else if (at == "checkpoint")
      f.at = FaultPoint::checkpoint;
    else
      fail("fault '", shown, "': at must be step, backward or checkpoint, got '", clipped(at), "'");
  }
  RG_CHECK(f.at != FaultPoint::checkpoint || f.rank == 0, "fault '", shown,
           "': at=checkpoint needs rank=0, the rank that writes checkpoints");
  return f;
}

FaultPlan::FaultPlan(const std::vector<std::string>& specs) {
  for (const std::string& s : specs) faults_.push_back(parse_fault(s));
}

std::vector<std::string> FaultPlan::specs() const {
  std::vector<std::string> out;
  for (const Fault& f : faults_) out.push_back(f.spec);
  return out;
}

void FaultPlan::check_world(int world_size) const {
  for (const Fault& f : faults_)
    RG_CHECK(f.rank < world_size, "fault '", f.spec, "': rank ", f.rank,
             " does not exist in a job of ", world_size,
             world_size == 1 ? " process" : " processes",
             " (launch more with scripts/mpirun.sh N)");
}

namespace {

// Announces the fault on stderr ("ringgrad: rank 1: injected fault SPEC WHERE: WHAT"), then
// does it.
void apply(const Fault& f, int rank, const std::string& where, const Tensor& param = {}) {
  const std::string head =
      "ringgrad: rank " + std::to_string(rank) + ": injected fault " + f.spec + " " + where + ": ";
  switch (f.kind) {
    case FaultKind::kill:
      announce(head + "SIGKILL\n");
      ::raise(SIGKILL);
      break;
    case FaultKind::exit:
      announce(head + "exit status " + std::to_string(f.exit_code) + " without shutting down\n");
      std::_Exit(f.exit_code);
    case FaultKind::delay:
      announce(head + "sleeping " + std::to_string(f.seconds) + " s\n");
      std::this_thread::sleep_for(std::chrono::duration<double>(f.seconds));
      announce("ringgrad: rank " + std::to_string(rank) + ": woke up after the injected delay\n");
      break;
    case FaultKind::stop:
      announce(head + "SIGSTOP (frozen until SIGCONT)\n");
      ::raise(SIGSTOP);
      announce("ringgrad: rank " + std::to_string(rank) + ": continued after SIGSTOP\n");
      break;
    case FaultKind::error:
      announce(head + "throwing an rg::Error\n");
      fail("injected fault ", f.spec, " ", where, " (an error of rank ", rank, "'s own)");
    case FaultKind::overflow:
      RG_CHECK(param.defined() && param.grad().defined(), "fault '", f.spec,
               "': no gradient to overflow ", where);
      announce(head + "a gradient " + param.describe() + " set to inf\n");
      fill_(param.grad(), INFINITY);
      break;
  }
}

}  // namespace

void FaultPlan::at_step(int rank, int64_t step) const {
  for (const Fault& f : faults_)
    if (f.at == FaultPoint::step && f.rank == rank && f.step == step)
      apply(f, rank, "at step " + std::to_string(step));
}

void FaultPlan::in_backward(int rank, int64_t step, const Tensor& param) const {
  for (const Fault& f : faults_)
    if (f.at == FaultPoint::backward && f.rank == rank && f.step == step)
      apply(f, rank, "during the backward of step " + std::to_string(step), param);
}

void FaultPlan::in_checkpoint_write(int rank, int64_t first_step, int64_t last_step,
                                    const std::string& file) const {
  for (const Fault& f : faults_)
    if (f.at == FaultPoint::checkpoint && f.rank == rank && f.step >= first_step &&
        f.step <= last_step)
      apply(f, rank,
            "while writing " + file + " (the checkpoint after step " + std::to_string(last_step) +
                ", not yet in place)");
}

bool FaultPlan::has(FaultKind kind) const {
  return std::any_of(faults_.begin(), faults_.end(),
                     [&](const Fault& f) { return f.kind == kind; });
}

bool FaultPlan::has(int rank, FaultPoint point) const {
  return std::any_of(faults_.begin(), faults_.end(),
                     [&](const Fault& f) { return f.rank == rank && f.at == point; });
}

}  // namespace rg::parallel
