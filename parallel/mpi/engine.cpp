#include "parallel/mpi/engine.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <iterator>
#include <sstream>

#include "core/error.h"
#include "core/trace.h"
#include "parallel/launcher.h"
#include "parallel/mpi/mpi_check.h"

namespace rg::parallel::mpi {

namespace {

// How long a rank that hit a fault waits before MPI_Abort takes the whole job down: enough for
// the other ranks, which notice the same fault within one liveness check (50 ms) or at the
// same timeout, to print their own view of it first.
constexpr milliseconds kAbortGrace{1000};
constexpr milliseconds kLivenessPeriod{50};
// The least time MPI_Init gets (Engine::start).
constexpr milliseconds kMinStartTimeout{10000};

class QueuedWork final : public Work {
 public:
  void wait() override {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return done_; });
    if (error_) std::rethrow_exception(error_);
  }
  bool is_completed() override {
    std::lock_guard lock(mutex_);
    return done_;
  }
  void finish(std::exception_ptr error) {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
      error_ = std::move(error);
    }
    cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
};

// A process's state letter and start time (clock ticks after boot) from /proc/<pid>/stat;
// false when there is no such process. The start time tells a reused pid from the original.
bool read_stat(int pid, char& state, int64_t& start_time) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  if (!file) return false;
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const std::size_t paren = text.rfind(')');  // the command name may itself hold spaces
  if (paren == std::string::npos) return false;
  std::istringstream fields(text.substr(paren + 1));
  std::string field;
  fields >> state;
  for (int i = 4; i <= 22 && fields >> field; ++i)  // field 22 is starttime
    if (i == 22) start_time = std::stoll(field);
  return true;
}

// What every rank tells the others at start: enough to find its process again.
struct Identity {
  int32_t pid = 0;
  int32_t unused = 0;
  int64_t start_time = 0;
  char host[64] = {};
};

Engine* g_engine = nullptr;

std::string describe_exception(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

}  // namespace

struct Engine::Task {
  std::function<void()> fn;
  std::vector<Tensor> keep;
  std::shared_ptr<QueuedWork> work = std::make_shared<QueuedWork>();
  bool stop = false;  // the last task: shut down
};

Engine::Engine(milliseconds timeout, OnFault on_fault) : timeout_(timeout), on_fault_(on_fault) {}
Engine::~Engine() = default;

Engine& Engine::start(milliseconds timeout, OnFault on_fault) {
  RG_CHECK(g_engine == nullptr, "parallel: the MPI engine is already running");
  // Never deleted: collectives may still be queued while static objects are destroyed.
  auto* engine = new Engine(timeout, on_fault);
  // Shared: the thread may outlive this call (below).
  auto ready = std::make_shared<std::promise<void>>();
  engine->thread_ = std::thread([engine, ready] {
    trace::name_this_thread("communication (MPI)");
    try {
      engine->set_up();
    } catch (...) {
      ready->set_exception(std::current_exception());
      return;
    }
    ready->set_value();
    engine->loop();
  });
  // MPI_Init has no deadline of its own: a rank that dies while the job starts leaves the others
  // in it for good when the launcher lets survivors speak (orte_abort_on_non_zero_status=0, as
  // scripts/mpirun.sh runs jobs; found by tests/chaos). So the start gets the collectives'
  // timeout, but at least kMinStartTimeout: on a loaded machine MPI_Init alone can take seconds,
  // more than the short timeouts of tests. Past it the thread is left in MPI_Init — it cannot be
  // interrupted — and the error ends the program; what set_up() does after MPI_Init has
  // deadlines of its own.
  const milliseconds start_timeout = std::max(timeout, kMinStartTimeout);
  std::future<void> started = ready->get_future();
  const auto deadline = Clock::now() + start_timeout;
  while (started.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready) {
    if (!engine->mpi_started_ && Clock::now() >= deadline) {
      engine->thread_.detach();  // never deleted: the thread still uses it
      fail("parallel: MPI_Init did not return within ", start_timeout.count(),
           " ms: a rank died, or never started, while the job was starting");
    }
  }
  try {
    started.get();
  } catch (...) {
    engine->thread_.join();
    delete engine;
    throw;
  }
  g_engine = engine;
  return *engine;
}

Engine* Engine::instance() {
  return g_engine;
}

void Engine::set_up() {
  // Read before MPI_Init: a singleton start of Open MPI sets OMPI_COMM_WORLD_* (rank 0 of 1)
  // in this process's environment, hiding the launcher that really started it.
  const LaunchInfo launch = detect_launch(process_environment());
  int initialized = 0;
  RG_MPI_CHECK(MPI_Initialized(&initialized));
  if (!initialized) {
    // This thread makes every MPI call, so any level from FUNNELED up would do; MULTIPLE lets
    // the program call MPI from its own threads as well.
    int provided = 0;
    RG_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided));
    we_initialized_mpi_ = true;
  } else {
    int level = 0;
    RG_MPI_CHECK(MPI_Query_thread(&level));
    RG_CHECK(level >= MPI_THREAD_SERIALIZED,
             "parallel: the program initialised MPI with thread level ", level,
             "; ringgrad calls MPI from its communication thread and needs "
             "MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE");
  }
  mpi_started_ = true;
  RG_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  RG_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  RG_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));

  MPI_Request request = MPI_REQUEST_NULL;
  RG_MPI_CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &comm_, &request));
  wait_request(request, timeout_,
               [] { return std::string("every rank to start (MPI_Comm_idup)"); });
  RG_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  notices_ready_ = true;

  Identity me;
  me.pid = static_cast<int32_t>(getpid());
  char state = 0;
  read_stat(me.pid, state, me.start_time);
  gethostname(me.host, sizeof me.host - 1);
  std::vector<Identity> all(static_cast<std::size_t>(size_));
  RG_MPI_CHECK(
      MPI_Iallgather(&me, sizeof me, MPI_BYTE, all.data(), sizeof me, MPI_BYTE, comm_, &request));
  wait_request(request, timeout_,
               [] { return std::string("every rank to start (MPI_Iallgather)"); });

  // A launcher MPI could not join leaves every process a world of one: refuse by name.
  check_launch_matches_mpi(launch, rank_, size_);

  local_rank_ = local_size_ = 0;
  peers_.resize(all.size());
  hosts_.assign(all.size(), 0);
  for (int r = 0; r < size_; ++r) {
    const Identity& id = all[static_cast<std::size_t>(r)];
    for (int s = 0; s <= r; ++s)  // the host's number: its first rank
      if (std::strncmp(all[static_cast<std::size_t>(s)].host, id.host, sizeof id.host) == 0) {
        hosts_[static_cast<std::size_t>(r)] = s;
        break;
      }
    if (std::strncmp(id.host, me.host, sizeof me.host) != 0) continue;
    local_rank_ += r < rank_;
    ++local_size_;
    Peer& peer = peers_[static_cast<std::size_t>(r)];
    peer.pid = id.pid;
    peer.start_time = id.start_time;
    int64_t start_time = -1;
    // A peer in another pid namespace (same host name, other container) is not visible here;
    // it is then watched by the timeout only.
    peer.watched =
        r != rank_ && read_stat(id.pid, state, start_time) && start_time == id.start_time;
  }
  // The launcher knows which ranks share a node (parallel/launcher.h: mpirun's, Hydra's,
  // srun's variables); host names are the fallback.
  if (launch.local_rank >= 0) {
    local_rank_ = launch.local_rank;
    if (launch.local_size > 0) local_size_ = launch.local_size;
    RG_CHECK(local_rank_ < local_size_, "parallel: ", launch.local_source, "=", local_rank_,
             " but only ", local_size_, " ranks run on this host");
  }
  create_ops();
}

std::string Engine::dead_peers() const {
  std::ostringstream dead;
  for (int r = 0; r < static_cast<int>(peers_.size()); ++r)
    if (is_dead(r))
      dead << (dead.tellp() > 0 ? ", " : "") << "rank " << r << " (pid "
           << peers_[static_cast<std::size_t>(r)].pid << ")";
  return dead.str();
}

bool Engine::is_dead(int rank) const {
  if (rank < 0 || static_cast<std::size_t>(rank) >= peers_.size()) return false;  // not known yet
  const Peer& peer = peers_[static_cast<std::size_t>(rank)];
  if (!peer.watched) return false;
  char state = 0;
  int64_t start_time = -1;
  // A zombie has exited and waits for its parent (orted) to reap it.
  return !read_stat(peer.pid, state, start_time) || state == 'Z' || state == 'X' ||
         start_time != peer.start_time;
}

void Engine::record_lost_peers() const {
  const char* dir = std::getenv("RG_ELASTIC_DIR");
  if (dir == nullptr || *dir == '\0') return;
  std::ofstream out(std::string(dir) + "/lost." + std::to_string(rank_));
  for (int r = 0; r < size_; ++r)
    if (is_dead(r)) out << r << "\n";
}

void Engine::record_ending_the_job() const {
  // A rank that ends the job on purpose (a fault it found, an error of its own) is gone a
  // moment later, and another rank may see it dead: it is not a lost rank.
  const char* dir = std::getenv("RG_ELASTIC_DIR");
  if (dir == nullptr || *dir == '\0') return;
  std::ofstream(std::string(dir) + "/ended." + std::to_string(rank_)) << "MPI_Abort\n";
}

std::string Engine::stopped_peers() const {
  std::ostringstream stopped;
  for (std::size_t r = 0; r < peers_.size(); ++r) {
    const Peer& peer = peers_[r];
    if (!peer.watched) continue;
    char state = 0;
    int64_t start_time = -1;
    // T: stopped by a signal (SIGSTOP, SIGTSTP, Ctrl-Z); t: stopped by a debugger.
    if (read_stat(peer.pid, state, start_time) && start_time == peer.start_time &&
        (state == 'T' || state == 't'))
      stopped << (stopped.tellp() > 0 ? ", " : "") << "rank " << r << " (pid " << peer.pid << ")";
  }
  return stopped.str();
}

void Engine::wait_until(const std::function<bool()>& done, milliseconds timeout,
                        const std::function<std::string()>& waiting_for) {
  const auto start = Clock::now();
  auto next_check = start + kLivenessPeriod;
  auto nap = std::chrono::microseconds(20);
  while (!done()) {
    const auto now = Clock::now();
    if (now >= next_check) {
      if (ending_requested_) serve_ending_request();
      // A peer that left says how, before its process is gone (or while it waits, alive).
      // In shutdown's barrier a dead peer is this rank's own finding, which the others' notices
      // ("rank 2 stopped on an error: ... rank 1 has exited") would only repeat: it goes first.
      receive_notices();
      const std::string dead = dead_peers();
      if (const std::string left = judge(notices_, waiting_, rank_);
          !left.empty() && (dead.empty() || waiting_.what != Waiting::What::shutdown))
        fail(left);
      if (!dead.empty()) record_lost_peers();
      if (!dead.empty())
        fail(dead, dead.find(',') == std::string::npos ? " has" : " have",
             " exited; this rank was waiting for ", waiting_for());
      next_check = now + kLivenessPeriod;
    }
    if (now - start >= timeout) {
      // A frozen peer is alive, so only the timeout catches it; on this machine /proc can
      // still say which one it is (MPI's own collectives cannot).
      const std::string stopped = stopped_peers();
      fail("timed out after ", timeout.count(), " ms waiting for ", waiting_for(),
           stopped.empty() ? "" : "; stopped (SIGSTOP or a debugger): " + stopped);
    }
    // Spin briefly (a message of a few MB takes well under a millisecond between processes
    // on one machine), then back off to sleeps of at most 1 ms so that a rank waiting for a
    // slow peer leaves the cores to the ranks still computing.
    if (now - start < milliseconds(2)) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(nap);
      nap = std::min<std::chrono::microseconds>(nap * 2, milliseconds(1));
    }
  }
}

void Engine::wait_request(MPI_Request& request, milliseconds timeout,
                          const std::function<std::string()>& waiting_for) {
  wait_until(
      [&] {
        int flag = 0;
        RG_MPI_CHECK(MPI_Test(&request, &flag, MPI_STATUS_IGNORE));
        return flag != 0;
      },
      timeout, waiting_for);
}

std::shared_ptr<Work> Engine::submit(std::function<void()> fn, std::vector<Tensor> keep) {
  auto task = std::make_unique<Task>();
  task->fn = std::move(fn);
  task->keep = std::move(keep);
  std::shared_ptr<Work> work = task->work;
  {
    std::lock_guard lock(mutex_);
    RG_CHECK(!stopping_, "parallel: collective issued after parallel::shutdown()");
    queue_.push_back(std::move(task));
  }
  cv_.notify_all();
  return work;
}

void Engine::run(std::function<void()> fn) {
  submit(std::move(fn), {})->wait();
}

void Engine::fault(const std::string& message) {
  {
    std::lock_guard lock(mutex_);
    if (!fault_.empty()) return;
    fault_ = message;
  }
  std::ostringstream text;
  text << "ringgrad: rank " << rank_ << " of " << size_ << ": " << message << "\n";
  if (on_fault_ == OnFault::abort_job)
    text << "ringgrad: rank " << rank_ << ": ending the job (MPI_Abort) in " << kAbortGrace.count()
         << " ms\n";
  const std::string line = text.str();
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
  // The ranks that announced they are leaving wait for this one in shutdown's barrier, which it
  // will not reach: tell them (on the communication thread, where every fault is found).
  if (notices_ready_ && std::this_thread::get_id() == thread_.get_id()) {
    std::vector<int> leavers;
    for (const auto& [r, notice] : notices_)
      if (notice.kind == NoticeKind::leaving && !is_dead(r)) leavers.push_back(r);
    send_notice(NoticeKind::failed, message, leavers);
  }
}

void Engine::abort_job(const std::string& reason) {
  {
    std::lock_guard lock(mutex_);
    if (fault_.empty()) fault_ = reason;  // a collective still queued fails rather than runs
  }
  const std::string line = "ringgrad: rank " + std::to_string(rank_) + " of " +
                           std::to_string(size_) + ": " + reason + "; ending the job (MPI_Abort)\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
  record_ending_the_job();
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);  // MPI_Abort does not return; should it, the rank still ends
}

void Engine::loop() {
  std::unique_lock lock(mutex_);
  auto abort_at = Clock::time_point::max();
  for (;;) {
    if (abort_at != Clock::time_point::max()) {
      // After a fault with OnFault::abort_job: fail what comes in, hold a shutdown until the
      // abort (the process must not exit with status 0), then end the job.
      cv_.wait_until(lock, abort_at, [&] {
        return ending_requested_ ||
               std::any_of(queue_.begin(), queue_.end(), [](auto& t) { return !t->stop; });
      });
      if (Clock::now() >= abort_at) {
        lock.unlock();
        record_ending_the_job();
        MPI_Abort(MPI_COMM_WORLD, 1);
        std::_Exit(1);  // MPI_Abort does not return; should it, still never hang
      }
    } else {
      cv_.wait(lock, [&] { return !queue_.empty() || ending_requested_; });
    }
    if (ending_requested_) {
      lock.unlock();
      serve_ending_request();
      lock.lock();
      continue;
    }
    auto it = std::find_if(queue_.begin(), queue_.end(), [&](auto& t) {
      return !t->stop || abort_at == Clock::time_point::max();
    });
    if (it == queue_.end()) continue;
    std::unique_ptr<Task> task = std::move(*it);
    queue_.erase(it);
    const std::string earlier = fault_;
    lock.unlock();

    if (task->stop) {
      tear_down();
      lock.lock();
      if (!fault_.empty() && on_fault_ == OnFault::abort_job) {
        abort_at = Clock::now() + kAbortGrace;  // the final barrier failed: hold the shutdown
        queue_.push_front(std::move(task));
        continue;
      }
      stopped_ = true;
      task->work->finish(nullptr);
      return;
    }
    if (!earlier.empty()) {
      task->work->finish(
          std::make_exception_ptr(Error("not run: this process group failed earlier: " + earlier)));
    } else {
      try {
        task->fn();
        task->work->finish(nullptr);
      } catch (...) {
        fault(describe_exception(std::current_exception()));
        task->work->finish(std::current_exception());
        lock.lock();
        kept_.push_back(std::move(task->keep));  // messages may still arrive into them
        if (on_fault_ == OnFault::abort_job) abort_at = Clock::now() + kAbortGrace;
        continue;
      }
    }
    lock.lock();
  }
}

void Engine::tear_down() {
  if (!fault_.empty()) {
    // Peers may be gone: MPI_Finalize could wait for them. Those still waiting for this rank —
    // in a collective, or in their own final barrier — learn that it will not come.
    send_notice_to_all(NoticeKind::ending, "it stopped on an earlier error: " + fault_);
    return;
  }
  try {
    send_notice_to_all(NoticeKind::leaving, leaving_how_);
    {
      Running in_barrier(*this, {.what = Waiting::What::shutdown});
      MPI_Request request = MPI_REQUEST_NULL;
      RG_MPI_CHECK(MPI_Ibarrier(comm_, &request));
      wait_request(request, timeout_, [] {
        return std::string("the other ranks to finish (the barrier in parallel::shutdown)");
      });
    }
    // Every rank sent its notice before the barrier: take them all, and let ours arrive, so
    // that no message is left over when MPI ends.
    wait_until(
        [&] {
          receive_notices();
          return static_cast<int>(notices_.size()) >= size_ - 1 && sends_done();
        },
        timeout_, [] { return std::string("the other ranks' departure notices"); });
  } catch (const std::exception& e) {
    fault(std::string("shutdown: ") + e.what());
    return;
  }
  // Best effort from here on: every rank is done, nothing is left to wait for.
  free_ops();
  MPI_Comm_free(&comm_);
  if (we_initialized_mpi_)
    if (const int code = MPI_Finalize(); code != MPI_SUCCESS)
      fault("shutdown: MPI_Finalize failed: " + error_string(code));
}

void Engine::shutdown(const std::string& how) {
  std::shared_ptr<Work> done;
  {
    std::lock_guard lock(mutex_);
    if (stopping_) {
      if (stopped_ && thread_.joinable() && std::this_thread::get_id() != thread_.get_id())
        thread_.join();
      return;
    }
    stopping_ = true;
    leaving_how_ = how;
    auto task = std::make_unique<Task>();
    task->stop = true;
    done = task->work;
    queue_.push_back(std::move(task));
  }
  cv_.notify_all();
  done->wait();  // with abort_job after a fault this never returns: MPI_Abort ends the process
  thread_.join();
}

}  // namespace rg::parallel::mpi
