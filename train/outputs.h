#pragma once
// A training run's output folder: nothing an earlier run wrote is lost.
//   - A folder holding an earlier run is refused unless the run resumes it (--resume auto) or
//     starts over on purpose (--overwrite, which deletes that run's files first); --resume auto
//     with nothing to resume (no last.safetensors: a run that died before its first checkpoint,
//     a full disk) is refused too, naming the files it would overwrite.
//   - Temporaries a checkpoint writer killed mid-write left behind are removed.
//   - On resume, metrics.csv and the TensorBoard event files are cut back to the epoch the
//     checkpoint holds, so the epochs run again are logged once: the CSV and the curves equal
//     an uninterrupted run's. The resumed run writes a new event file whose steps start after
//     the resumed epoch. (Cutting, rather than a SessionLog START event asking TensorBoard to
//     purge later steps, makes the files correct for any reader, not only for loaders that
//     honour that event.)

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "parallel/process_group.h"

namespace rg::train {

// The files of an earlier run in `out`: checkpoints, metrics.csv, TensorBoard events.
std::vector<std::string> earlier_run_files(const std::string& out);

struct OutputOptions {
  std::string program = "train";  // names the program in messages
  std::string out{};              // the folder
  std::string resume{};           // checkpoint path, "auto" (<out>/last.safetensors) or empty
  bool overwrite = false;         // start over, deleting an earlier run's files
  // Seconds since 1970 when the elastic job this run belongs to began (scripts/mpirun.sh
  // --elastic, through kElasticJobStartVariable); 0: not elastic. Files written since then are
  // the job's own, from an earlier attempt.
  double own_files_since = 0;
};

// The variable scripts/mpirun.sh --elastic sets for every attempt of a job: the job's start, in
// seconds since 1970 (elastic_job_start() reads it; 0 when unset).
inline constexpr const char* kElasticJobStartVariable = "RG_ELASTIC_JOB_START";
double elastic_job_start();

// Whether `file` was last written at or after `unix_seconds` (false for 0 or no such file).
bool written_since(const std::filesystem::path& file, double unix_seconds);

// Before training, on the process that writes: creates options.out, refuses or clears an
// earlier run there (see above) and removes stale checkpoint temporaries. --resume auto without
// a last.safetensors is refused, naming them, when the folder holds an earlier run's files —
// unless they are all this elastic job's own (own_files_since): then they go and the run
// starts over, saying so.
void prepare_output_folder(const OutputOptions& options);

// The checkpoint to resume from: options.resume, or <out>/last.safetensors for "auto" when
// present; empty for none.
std::string resume_path(const OutputOptions& options);

enum class RunKind { train, evaluate };
// prepare_output_folder (training) or just the folder (evaluation) on rank 0, before the data
// loads so that a refusal comes at once; returns the checkpoint to resume from. Rank 0 decides
// and every rank learns the verdict, so that a refusal ends all of them alike (rank 0's message)
// instead of leaving the others waiting in a collective. Evaluation needs a checkpoint.
std::string prepare_run_folder(const OutputOptions& options, RunKind kind,
                               parallel::ProcessGroup& group);

// The folder of the per-step TensorBoard scalars (the loss scale of every optimizer step under
// mixed precision): a run of its own in TensorBoard, because the event files in `out` count
// epochs and those in it count steps, and each file's steps must only grow.
inline constexpr const char* kStepLogFolder = "steps";

// The per-step loss scale as CSV rows (step, loss_scale, skipped), beside metrics.csv: the
// same figures as the TensorBoard run in kStepLogFolder.
inline constexpr const char* kLossScaleCsv = "loss_scale.csv";

// Cuts metrics.csv and every event file in `out` back to `epoch` (0: nothing kept but headers),
// and loss_scale.csv and the event files of `out`/steps back to optimizer step `step`.
void truncate_logs(const std::string& out, int64_t epoch, int64_t step);

// A CSV whose first column counts up (metrics.csv: epochs; loss_scale.csv: steps): the header
// and the rows up to `last`; a partly written last line goes too. Returns the rows removed.
int64_t truncate_metrics_csv(const std::string& path, int64_t last);

// One TensorBoard record as written by train/tensorboard.h.
struct EventRecord {
  int64_t begin = 0, end = 0;  // byte range of the record in the file
  int64_t step = 0;
  std::string tag;  // of its scalar; empty for the file_version event
  float value = 0;
};
// The records of an event file, up to the first that is incomplete or fails its checksums.
std::vector<EventRecord> read_event_records(const std::string& path);
// Keeps the records of steps <= step (and the file_version event); a partly written record at
// the end goes too. A file without one readable record is left alone. Returns the records
// removed.
int64_t truncate_event_file(const std::string& path, int64_t step);

}  // namespace rg::train
