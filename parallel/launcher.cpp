#include "parallel/launcher.h"

#include <charconv>
#include <climits>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/error.h"

extern char** environ;

namespace rg::parallel {

namespace {

// The variables of one launcher. Empty names: the launcher has no such variable.
struct Family {
  Launcher launcher;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;
};

// In order of precedence (launcher.h says why).
constexpr Family kFamilies[] = {
    {Launcher::open_mpi, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {Launcher::pmix, "PMIX_RANK", "", "", ""},
    {Launcher::pmi, "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {Launcher::slurm, "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID", ""},
    {Launcher::torchrun, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
};

std::optional<int> integer(const Environment& env, const char* name) {
  if (*name == '\0') return std::nullopt;
  const auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  const std::string& text = it->second;
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  RG_CHECK(error == std::errc() && end == text.data() + text.size() && value >= 0, name, "='",
           text.substr(0, 40),
           "' is not a non-negative integer (set by the launcher; ringgrad "
           "reads it to find this process's rank)");
  return value;
}

bool has(const Environment& env, const char* name) {
  return *name != '\0' && env.count(name) > 0;
}

// A family counts when its rank variable is set — and, for the two whose names other software
// also uses, its size variable too (launcher.h).
bool present(const Environment& env, const Family& f) {
  if (!has(env, f.rank)) return false;
  if (f.launcher == Launcher::slurm || f.launcher == Launcher::torchrun) return has(env, f.size);
  return true;
}

}  // namespace

std::string launcher_name(Launcher launcher) {
  switch (launcher) {
    case Launcher::none:
      return "no launcher";
    case Launcher::open_mpi:
      return "Open MPI's mpirun (OMPI_COMM_WORLD_RANK/SIZE)";
    case Launcher::pmix:
      return "a PMIx launcher (PMIX_RANK: srun --mpi=pmix, Open MPI 5's mpirun)";
    case Launcher::pmi:
      return "a PMI launcher (PMI_RANK/PMI_SIZE: MPICH's mpiexec, srun --mpi=pmi2)";
    case Launcher::slurm:
      return "Slurm's srun (SLURM_PROCID/SLURM_STEP_NUM_TASKS)";
    case Launcher::torchrun:
      return "a torchrun-style launcher (RANK/WORLD_SIZE)";
  }
  return "?";
}

bool LaunchInfo::mpi_launched() const {
  switch (launcher) {
    case Launcher::none:
      return false;
    case Launcher::open_mpi:
    case Launcher::pmix:
    case Launcher::pmi:
      return true;
    case Launcher::slurm:
    case Launcher::torchrun:
      // A job of several: MPI is started so that it joins them, or — a torchrun-style launcher,
      // srun without an MPI plugin — so that check_launch_matches_mpi refuses the singletons
      // by name instead of letting each train alone. A job of one needs no MPI.
      return size > 1;
  }
  return false;
}

int slurm_tasks_on_node(const std::string& tasks_per_node, int node) {
  // Entries "N" or "N(xR)" (N tasks on each of R nodes), separated by commas. The whole list is
  // checked before it is indexed, so a malformed one is an error for every node.
  auto bad = [&] {
    fail("SLURM_STEP_TASKS_PER_NODE='", tasks_per_node.substr(0, 60),
         "' is not Slurm's list of tasks per node (such as 2(x3),1)");
  };
  struct Run {
    int tasks, nodes;
  };
  std::vector<Run> runs;
  std::size_t at = 0;
  for (;;) {
    std::size_t end = tasks_per_node.find(',', at);
    if (end == std::string::npos) end = tasks_per_node.size();
    const char* p = tasks_per_node.data() + at;
    const char* stop = tasks_per_node.data() + end;
    Run run{0, 1};
    const auto [after, error] = std::from_chars(p, stop, run.tasks);
    if (error != std::errc() || run.tasks < 0) bad();
    if (after != stop) {
      if (stop - after < 4 || after[0] != '(' || after[1] != 'x' || stop[-1] != ')') bad();
      const auto [r_end, r_error] = std::from_chars(after + 2, stop - 1, run.nodes);
      if (r_error != std::errc() || r_end != stop - 1 || run.nodes < 1) bad();
    }
    runs.push_back(run);
    if (end == tasks_per_node.size()) break;
    at = end + 1;
  }
  int64_t first_node = 0;
  for (const Run& run : runs) {
    if (node < first_node + run.nodes) return run.tasks;
    first_node += run.nodes;
  }
  return -1;
}

LaunchInfo detect_launch(const Environment& env) {
  LaunchInfo info;
  for (const Family& f : kFamilies) {
    if (!present(env, f)) continue;
    info.launcher = f.launcher;
    info.rank = *integer(env, f.rank);
    info.size = integer(env, f.size).value_or(-1);
    RG_CHECK(info.size != 0, f.size, "=0: a job of no processes");
    RG_CHECK(info.size < 0 || info.rank < info.size, f.rank, "=", info.rank, " is not below ",
             f.size, "=", info.size);
    break;
  }
  if (info.launcher == Launcher::none) return info;
  for (const Family& f : kFamilies) {
    const std::optional<int> local = integer(env, f.local_rank);
    if (!local) continue;
    info.local_rank = *local;
    info.local_source = f.local_rank;
    std::optional<int> local_size = integer(env, f.local_size);
    if (f.launcher == Launcher::slurm && has(env, "SLURM_STEP_TASKS_PER_NODE")) {
      const int on_node = slurm_tasks_on_node(env.at("SLURM_STEP_TASKS_PER_NODE"),
                                              integer(env, "SLURM_NODEID").value_or(0));
      if (on_node > 0) local_size = on_node;
    }
    if (local_size) {
      RG_CHECK(info.local_rank < *local_size, f.local_rank, "=", info.local_rank,
               " is not below the ", *local_size, " processes its launcher puts on this machine");
      info.local_size = *local_size;
    }
    break;
  }
  return info;
}

Environment process_environment() {
  Environment env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const std::size_t eq = text.find('=');
    if (eq != std::string::npos) env.emplace(text.substr(0, eq), text.substr(eq + 1));
  }
  return env;
}

void check_launch_matches_mpi(const LaunchInfo& launch, int mpi_rank, int mpi_size) {
  if (launch.launcher == Launcher::none) return;
  const bool size_differs = launch.size > 0 && launch.size != mpi_size;
  if (!size_differs && launch.rank == mpi_rank) return;
  const std::string said =
      "this process was started by " + launcher_name(launch.launcher) + " as rank " +
      std::to_string(launch.rank) + (launch.size > 0 ? " of " + std::to_string(launch.size) : "") +
      ", but MPI sees rank " + std::to_string(mpi_rank) + " of " + std::to_string(mpi_size);
  if (mpi_size == 1 && launch.launcher == Launcher::torchrun)
    fail(said,
         ". ringgrad's processes meet through MPI, which cannot join processes a torchrun-style "
         "launcher started: every one would train alone. Start them with mpirun -np N (or "
         "scripts/mpirun.sh N) or Slurm's srun --mpi=pmix");
  if (mpi_size == 1)
    fail(said,
         ". MPI could not join this launcher's processes, so every one would train alone: under "
         "Slurm start them with srun --mpi=pmix (or --mpi=pmi2; `srun --mpi=list` shows what the "
         "cluster has), or use mpirun");
  fail(said,
       ". The launcher and MPI disagree; start the job with one launcher (mpirun, or "
       "srun --mpi=pmix), not one inside another");
}

}  // namespace rg::parallel
