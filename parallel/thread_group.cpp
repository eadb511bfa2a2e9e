#include "parallel/thread_group.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <sstream>
#include <thread>

#include "parallel/collective_checks.h"
#include "parallel/reduce.h"

namespace rg::parallel {

namespace {
constexpr const char* kBackend = "threads";
std::shared_ptr<Work> done() {
  return std::make_shared<CompletedWork>();
}
}  // namespace

// Every collective is a rendezvous: each rank posts its tensors and waits at a generation
// barrier; once all have arrived, the last one in does the data movement for everybody while
// the others wait for a second barrier (so no rank reuses its buffers too early).
struct ThreadGroup::Shared {
  int size;
  std::chrono::milliseconds timeout;
  std::mutex mutex;
  std::condition_variable cv;
  int arrived = 0;
  uint64_t generation = 0;
  std::vector<Tensor> inputs, outputs;
  std::vector<std::string> descriptions;  // what each rank called, to catch mismatches
  std::vector<char> present;              // who has arrived in this generation
  std::string error;

  // Blocks until all ranks called it with `description`; the last arrival runs `work`.
  void meet(int rank, const std::string& description, const Tensor& in, const Tensor& out,
            const std::function<void()>& work) {
    std::unique_lock lock(mutex);
    const uint64_t my_generation = generation;
    inputs[rank] = in;
    outputs[rank] = out;
    descriptions[rank] = description;
    present[rank] = 1;
    if (++arrived == size) {
      error.clear();
      for (int r = 0; r < size; ++r)
        if (descriptions[r] != descriptions[0])
          error = "collective mismatch: rank 0 called " + descriptions[0] + " but rank " +
                  std::to_string(r) + " called " + descriptions[r];
      if (error.empty()) {
        try {
          work();
        } catch (const std::exception& e) {
          error = e.what();
        }
      }
      arrived = 0;
      std::fill(present.begin(), present.end(), 0);
      ++generation;
      for (auto& t : inputs) t = Tensor();
      for (auto& t : outputs) t = Tensor();
      cv.notify_all();
    } else {
      const bool done = cv.wait_for(lock, timeout, [&] { return generation != my_generation; });
      if (!done) {
        std::ostringstream missing;
        for (int r = 0; r < size; ++r)
          if (!present[r]) missing << ' ' << r;
        fail("ThreadGroup: ", description, " on rank ", rank, " timed out after ", timeout.count(),
             " ms waiting for rank(s)", missing.str());
      }
    }
    if (!error.empty()) fail("ThreadGroup: ", error);
  }
};

std::vector<std::shared_ptr<ThreadGroup>> ThreadGroup::create(int size,
                                                              std::chrono::milliseconds timeout) {
  RG_CHECK(size >= 1, "ThreadGroup: size must be >= 1, got ", size);
  auto shared = std::make_shared<Shared>();
  shared->size = size;
  shared->timeout = timeout;
  shared->inputs.resize(size);
  shared->outputs.resize(size);
  shared->descriptions.resize(size);
  shared->present.assign(size, 0);
  std::vector<std::shared_ptr<ThreadGroup>> groups;
  for (int r = 0; r < size; ++r)
    groups.push_back(std::shared_ptr<ThreadGroup>(new ThreadGroup(shared, r)));
  return groups;
}

int ThreadGroup::size() const {
  return shared_->size;
}

std::shared_ptr<Work> ThreadGroup::allreduce(const Tensor& tensor, ReduceOp op) {
  check_cpu_tensor(kBackend, "allreduce", tensor);
  Shared& s = *shared_;
  std::ostringstream d;
  d << "allreduce(" << reduce_op_name(op) << ", " << tensor.numel() << " x " << tensor.dtype()
    << ")";
  s.meet(rank_, d.str(), tensor, Tensor(), [&] {
    // The reduction rules of the MPI backend and the ring (parallel/reduce.h), applied in rank
    // order, so the result never depends on which thread arrived last.
    const int64_t n = tensor.numel();
    Tensor acc = s.inputs[0].clone();
    for (int r = 1; r < s.size; ++r)
      reduce_into(acc.data_ptr(), s.inputs[r].data_ptr(), n, tensor.dtype(), op);
    if (op == ReduceOp::average) divide_by(acc.data_ptr(), n, tensor.dtype(), s.size);
    for (int r = 0; r < s.size; ++r)
      std::memcpy(s.inputs[r].data_ptr(), acc.data_ptr(), acc.nbytes());
  });
  return done();
}

std::shared_ptr<Work> ThreadGroup::broadcast(const Tensor& tensor, int root) {
  check_cpu_tensor(kBackend, "broadcast", tensor);
  check_root(kBackend, size(), root);
  Shared& s = *shared_;
  std::ostringstream d;
  d << "broadcast(root " << root << ", " << tensor.numel() << " x " << tensor.dtype() << ")";
  s.meet(rank_, d.str(), tensor, Tensor(), [&] {
    for (int r = 0; r < s.size; ++r)
      if (r != root)
        std::memcpy(s.inputs[r].data_ptr(), s.inputs[root].data_ptr(), tensor.nbytes());
  });
  return done();
}

std::shared_ptr<Work> ThreadGroup::allgather(const Tensor& output, const Tensor& input) {
  check_allgather(kBackend, size(), output, input);
  Shared& s = *shared_;
  std::ostringstream d;
  d << "allgather(" << input.numel() << " x " << input.dtype() << ")";
  s.meet(rank_, d.str(), input, output, [&] {
    for (int dst = 0; dst < s.size; ++dst)
      for (int src = 0; src < s.size; ++src)
        std::memcpy(static_cast<char*>(s.outputs[dst].data_ptr()) + src * input.nbytes(),
                    s.inputs[src].data_ptr(), input.nbytes());
  });
  return done();
}

std::shared_ptr<Work> ThreadGroup::reduce_scatter(const Tensor& output, const Tensor& input,
                                                  ReduceOp op) {
  check_reduce_scatter(kBackend, size(), output, input);
  // Reduce a copy of the whole input, then each rank keeps its slice.
  Tensor full = input.clone();
  allreduce(full, op)->wait();
  std::memcpy(output.data_ptr(),
              static_cast<const char*>(full.data_ptr()) + rank_ * output.nbytes(), output.nbytes());
  return done();
}

std::shared_ptr<Work> ThreadGroup::barrier() {
  shared_->meet(rank_, "barrier", Tensor(), Tensor(), [] {});
  return done();
}

void run_ranks(int size, const std::function<void(int rank)>& fn) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace rg::parallel
