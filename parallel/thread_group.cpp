#include "parallel/thread_group.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <sstream>
#include <thread>

#include "core/dispatch.h"

namespace rg::parallel {

namespace {
class DoneWork final : public Work {
 public:
  void wait() override {}
  bool is_completed() override { return true; }
};

const char* op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::average:
      return "average";
    case ReduceOp::max:
      return "max";
    case ReduceOp::min:
      return "min";
  }
  return "?";
}

void check_cpu_contiguous(const Tensor& t, const char* what) {
  RG_CHECK(t.defined() && t.device().is_cpu() && t.is_contiguous(), "ThreadGroup ", what,
           ": expected a contiguous cpu tensor, got ", t.describe());
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
  check_cpu_contiguous(tensor, "allreduce");
  Shared& s = *shared_;
  std::ostringstream d;
  d << "allreduce(" << op_name(op) << ", " << tensor.numel() << " x " << tensor.dtype() << ")";
  s.meet(rank_, d.str(), tensor, Tensor(), [&] {
    // Reduce in rank order into a double buffer (same result whatever the arrival order),
    // then write back to every rank.
    const int64_t n = tensor.numel();
    dispatch_all(tensor.dtype(), [&](auto tag) {
      using T = decltype(tag);
      std::vector<double> acc(static_cast<std::size_t>(n));
      for (int r = 0; r < s.size; ++r) {
        const T* p = static_cast<const T*>(s.inputs[r].data_ptr());
        for (int64_t i = 0; i < n; ++i) {
          const auto v = static_cast<double>(convert<double>(p[i]));
          double& a = acc[static_cast<std::size_t>(i)];
          if (r == 0)
            a = v;
          else if (op == ReduceOp::max)
            a = std::max(a, v);
          else if (op == ReduceOp::min)
            a = std::min(a, v);
          else
            a += v;
        }
      }
      if (op == ReduceOp::average)
        for (double& a : acc) a /= s.size;
      for (int r = 0; r < s.size; ++r) {
        T* p = static_cast<T*>(s.inputs[r].data_ptr());
        for (int64_t i = 0; i < n; ++i) p[i] = convert<T>(acc[static_cast<std::size_t>(i)]);
      }
    });
  });
  return std::make_shared<DoneWork>();
}

std::shared_ptr<Work> ThreadGroup::broadcast(const Tensor& tensor, int root) {
  check_cpu_contiguous(tensor, "broadcast");
  RG_CHECK(root >= 0 && root < size(), "ThreadGroup broadcast: root ", root, " out of range");
  Shared& s = *shared_;
  std::ostringstream d;
  d << "broadcast(root " << root << ", " << tensor.numel() << " x " << tensor.dtype() << ")";
  s.meet(rank_, d.str(), tensor, Tensor(), [&] {
    for (int r = 0; r < s.size; ++r)
      if (r != root)
        std::memcpy(s.inputs[r].data_ptr(), s.inputs[root].data_ptr(), tensor.nbytes());
  });
  return std::make_shared<DoneWork>();
}

std::shared_ptr<Work> ThreadGroup::allgather(const Tensor& output, const Tensor& input) {
  check_cpu_contiguous(output, "allgather");
  check_cpu_contiguous(input, "allgather");
  RG_CHECK(output.numel() == input.numel() * size() && output.dtype() == input.dtype(),
           "ThreadGroup allgather: output ", output.describe(), " must hold ", size(), " x input ",
           input.describe());
  Shared& s = *shared_;
  std::ostringstream d;
  d << "allgather(" << input.numel() << " x " << input.dtype() << ")";
  s.meet(rank_, d.str(), input, output, [&] {
    for (int dst = 0; dst < s.size; ++dst)
      for (int src = 0; src < s.size; ++src)
        std::memcpy(static_cast<char*>(s.outputs[dst].data_ptr()) + src * input.nbytes(),
                    s.inputs[src].data_ptr(), input.nbytes());
  });
  return std::make_shared<DoneWork>();
}

std::shared_ptr<Work> ThreadGroup::reduce_scatter(const Tensor& output, const Tensor& input,
                                                  ReduceOp op) {
  check_cpu_contiguous(output, "reduce_scatter");
  check_cpu_contiguous(input, "reduce_scatter");
  RG_CHECK(input.numel() == output.numel() * size() && output.dtype() == input.dtype(),
           "ThreadGroup reduce_scatter: input ", input.describe(), " must hold ", size(),
           " x output ", output.describe());
  // Reduce a copy of the whole input, then each rank keeps its slice.
  Tensor full = input.clone();
  allreduce(full, op)->wait();
  std::memcpy(output.data_ptr(),
              static_cast<const char*>(full.data_ptr()) + rank_ * output.nbytes(), output.nbytes());
  return std::make_shared<DoneWork>();
}

std::shared_ptr<Work> ThreadGroup::barrier() {
  shared_->meet(rank_, "barrier", Tensor(), Tensor(), [] {});
  return std::make_shared<DoneWork>();
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
