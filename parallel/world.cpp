#include "parallel/world.h"

#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>

#include "core/error.h"
#include "parallel/collective_checks.h"
#include "parallel/launcher.h"
#include "parallel/mpi/departures.h"
#include "parallel/mpi/engine.h"
#include "parallel/mpi/mpi_group.h"
#include "parallel/single_group.h"

namespace rg::parallel {

namespace {
std::mutex world_mutex;
std::shared_ptr<ProcessGroup> process_world;
thread_local std::shared_ptr<ProcessGroup> thread_world;

std::string backend_choice() {
  const char* forced = std::getenv("RG_BACKEND");
  if (forced != nullptr && *forced != '\0') {
    const std::string choice = forced;
    RG_CHECK(choice == "mpi" || choice == "single",
             "parallel::init: RG_BACKEND must be mpi or single, got '", choice, "'");
    return choice;
  }
  // Without a launcher MPI_Init would start a singleton — slow (about a second) and
  // pointless for one process (parallel/launcher.h lists the launchers recognised).
  return detect_launch(process_environment()).mpi_launched() ? "mpi" : "single";
}

// At exit (main returned, or exit() was called): the others learn which, and how many
// collectives this rank completed, before it waits for them in shutdown's barrier.
void shutdown_on_exit(int status, void*) {
  if (mpi::Engine* engine = mpi::Engine::instance())
    engine->shutdown(mpi::describe_exit(mpi::exit_path(), status));
}

// An exception out of the program (or std::terminate) ends the process without exit's
// handlers: the others are told first, then the previous handler runs (and aborts).
std::terminate_handler previous_terminate = nullptr;
[[noreturn]] void announce_terminate() {
  std::string how = "its program called std::terminate";
  if (const std::exception_ptr error = std::current_exception()) {
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      how = std::string("an uncaught exception ended its program: ") + e.what();
    } catch (...) {
      how = "an uncaught exception (not a std::exception) ended its program";
    }
  }
  if (mpi::Engine* engine = mpi::Engine::instance()) engine->announce_ending(how);
  if (previous_terminate) previous_terminate();
  std::abort();
}
}  // namespace

std::shared_ptr<ProcessGroup> init(const ProcessGroupOptions& options, OnFault on_fault) {
  // Ranks that are threads (or a test's size-1 world) already have theirs: programs written
  // for mpirun run unchanged on them.
  if (thread_world) return thread_world;
  std::lock_guard lock(world_mutex);
  if (process_world) return process_world;
  check_options(options);
  if (backend_choice() == "mpi") {
    mpi::Engine& engine = mpi::Engine::start(options.timeout, on_fault);
    process_world = mpi::MpiGroup::create(engine, options);
    on_exit(shutdown_on_exit, nullptr);  // glibc's atexit that sees the exit status
    previous_terminate = std::set_terminate(announce_terminate);
  } else {
    process_world = std::make_shared<SingleGroup>();
  }
  return process_world;
}

void set_world(std::shared_ptr<ProcessGroup> group) {
  std::lock_guard lock(world_mutex);
  process_world = std::move(group);
}

ScopedThreadWorld::ScopedThreadWorld(std::shared_ptr<ProcessGroup> group)
    : previous_(std::move(thread_world)) {
  RG_CHECK(group != nullptr, "ScopedThreadWorld: the group is null");
  thread_world = std::move(group);
}

ScopedThreadWorld::~ScopedThreadWorld() {
  thread_world = std::move(previous_);
}

bool has_world() {
  if (thread_world) return true;
  std::lock_guard lock(world_mutex);
  return process_world != nullptr;
}

std::shared_ptr<ProcessGroup> world_ptr() {
  if (thread_world) return thread_world;
  std::lock_guard lock(world_mutex);
  RG_CHECK(process_world != nullptr,
           "rg::parallel: no world process group — call rg::parallel::init() first (it sets up "
           "MPI, or a world of size 1 without mpirun), or install one with set_world()");
  return process_world;
}

ProcessGroup& world() {
  return *world_ptr();
}

std::shared_ptr<ProcessGroup> new_group(const ProcessGroupOptions& options) {
  const std::shared_ptr<ProcessGroup> w = world_ptr();
  check_options(options);
  if (mpi::Engine* engine = mpi::Engine::instance(); engine && w->backend() == "mpi")
    return mpi::MpiGroup::create(*engine, options);
  RG_CHECK(w->size() == 1, "new_group: the world's backend '", w->backend(),
           "' cannot make new groups");
  return std::make_shared<SingleGroup>();
}

int rank() {
  return world().rank();
}
int size() {
  return world().size();
}
int local_rank() {
  return world().local_rank();
}
int local_size() {
  return world().local_size();
}

void end_job_after_error(const std::string& reason) {
  mpi::Engine* engine = mpi::Engine::instance();
  if (engine != nullptr && engine->size() > 1) engine->abort_job(reason);
}

void shutdown() {
  if (mpi::Engine* engine = mpi::Engine::instance()) engine->shutdown();
}

}  // namespace rg::parallel
