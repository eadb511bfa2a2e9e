#include "parallel/ring_allreduce.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "core/trace.h"
#include "parallel/reduce.h"

namespace rg::parallel {

namespace {

int mod(int a, int n) {
  return ((a % n) + n) % n;
}

// Chunk c covers elements [begin[c], begin[c + 1]).
struct Chunks {
  std::vector<int64_t> begin;
  int64_t start(int c) const { return begin[static_cast<std::size_t>(c)]; }
  int64_t end(int c) const { return begin[static_cast<std::size_t>(c) + 1]; }
  int64_t length(int c) const { return end(c) - start(c); }
};

// n elements in N chunks whose lengths differ by at most one (the first n mod N get one more).
Chunks balanced_chunks(int64_t n, int N) {
  Chunks chunks;
  const int64_t base = n / N, extra = n % N;
  for (int c = 0; c <= N; ++c) chunks.begin.push_back(c * base + std::min<int64_t>(c, extra));
  return chunks;
}

Chunks equal_chunks(int64_t block, int N) {
  Chunks chunks;
  for (int c = 0; c <= N; ++c) chunks.begin.push_back(c * block);
  return chunks;
}

enum class Phase { reduce_scatter, allgather };

// One step of a ring: which chunk goes to the right neighbour and which comes from the left.
struct Step {
  Phase phase;
  int number, total;  // an allreduce numbers its steps 1..N−1, then N..2(N−1)
  int send_chunk, right, recv_chunk, left;
};

// One ring: the steps of one phase.
class Ring {
 public:
  Ring(Transport& transport, char* data, DType dtype, const RingOptions& options)
      : t_(transport),
        data_(data),
        dtype_(dtype),
        elem_(static_cast<int64_t>(element_size(dtype))),
        segment_(std::max<int64_t>(1, options.chunk_bytes / elem_)),
        options_(options) {}

  void run(Phase phase, const Chunks& chunks, ReduceOp op, int first_step, int total_steps) {
    const int N = t_.size(), r = t_.rank();
    if (phase == Phase::reduce_scatter) reserve_scratch(chunks);
    for (int s = 0; s < N - 1; ++s) {
      // In the reduce-scatter rank r ends with chunk r complete; the allgather starts there.
      const int send = phase == Phase::reduce_scatter ? mod(r - s - 1, N) : mod(r - s, N);
      const Step step{phase,         first_step + s,   total_steps,  send,
                      mod(r + 1, N), mod(send - 1, N), mod(r - 1, N)};
      const trace::Span span("ring", [&] { return label(step, chunks); });
      exchange(step, chunks, op);
    }
  }

 private:
  // Moves chunk send_chunk to the right and chunk recv_chunk in from the left, one message of
  // at most segment_ elements each way at a time. Both ends of a message cut the same chunk the
  // same way, so message k of a chunk has the same size on both sides.
  void exchange(const Step& step, const Chunks& chunks, ReduceOp op) {
    try {
      exchange_messages(step, chunks, op);
    } catch (const Error& e) {
      fail(where(step), ": ", e.what());  // which step, which chunks, which neighbours
    }
  }
  void exchange_messages(const Step& step, const Chunks& chunks, ReduceOp op) {
    const int64_t send_len = chunks.length(step.send_chunk);
    const int64_t recv_len = chunks.length(step.recv_chunk);
    for (int64_t at = 0; at < std::max(send_len, recv_len); at += segment_) {
      const int64_t n_send = std::clamp<int64_t>(send_len - at, 0, segment_);
      const int64_t n_recv = std::clamp<int64_t>(recv_len - at, 0, segment_);
      char* send = data_ + (chunks.start(step.send_chunk) + at) * elem_;
      char* own = data_ + (chunks.start(step.recv_chunk) + at) * elem_;
      // The reduce-scatter adds what arrives to its own copy; the allgather keeps it as it is.
      char* recv = step.phase == Phase::reduce_scatter ? scratch_ : own;
      t_.send_recv(send, static_cast<std::size_t>(n_send * elem_), step.right, recv,
                   static_cast<std::size_t>(n_recv * elem_), step.left);
      if (step.phase == Phase::reduce_scatter && n_recv > 0)
        t_.combine(own, scratch_, n_recv, dtype_, combine_of(op));
    }
  }

  void reserve_scratch(const Chunks& chunks) {
    int64_t longest = 0;
    for (int c = 0; c + 1 < std::ssize(chunks.begin); ++c)
      longest = std::max(longest, chunks.length(c));
    scratch_ = static_cast<char*>(
        t_.scratch(static_cast<std::size_t>(std::min(longest, segment_) * elem_)));
  }

  // ---- text: the step as the timeline and the explain sink show it, and in errors ----------
  static const char* phase_name(Phase phase) {
    return phase == Phase::reduce_scatter ? "reduce-scatter" : "allgather";
  }
  std::string chunk_text(const Chunks& chunks, int c) const {
    return "chunk " + std::to_string(c) + " [elements " + std::to_string(chunks.start(c)) + ".." +
           std::to_string(chunks.end(c)) + ")";
  }
  trace::Label label(const Step& step, const Chunks& chunks) const {
    return {std::string(phase_name(step.phase)) + " step " + std::to_string(step.number) + "/" +
                std::to_string(step.total),
            trace::args(
                "collective", options_.label, "send",
                chunk_text(chunks, step.send_chunk) + " to rank " + std::to_string(step.right),
                "receive",
                chunk_text(chunks, step.recv_chunk) + " from rank " + std::to_string(step.left) +
                    (step.phase == Phase::reduce_scatter ? ", add it" : ", keep it"),
                "sent_bytes", chunks.length(step.send_chunk) * elem_, "received_bytes",
                chunks.length(step.recv_chunk) * elem_)};
  }
  std::string where(const Step& step) const {
    return "step " + std::to_string(step.number) + "/" + std::to_string(step.total) + " " +
           phase_name(step.phase) + " (sending chunk " + std::to_string(step.send_chunk) +
           " to rank " + std::to_string(step.right) + ", receiving chunk " +
           std::to_string(step.recv_chunk) + " from rank " + std::to_string(step.left) + ")";
  }

  Transport& t_;
  char* data_;
  DType dtype_;
  int64_t elem_;
  int64_t segment_;  // elements per message
  const RingOptions& options_;
  char* scratch_ = nullptr;  // the incoming message of the reduce-scatter (transport memory)
};

void check_args(const Transport& t, const void* data, int64_t n, const RingOptions& options) {
  RG_CHECK(t.size() >= 1 && t.rank() >= 0 && t.rank() < t.size(), options.label,
           ": bad transport (rank ", t.rank(), " of ", t.size(), ")");
  RG_CHECK(n >= 0 && (data != nullptr || n == 0), options.label, ": bad buffer (", n, " elements)");
  RG_CHECK(options.chunk_bytes > 0, options.label, ": ring chunk size must be positive, got ",
           options.chunk_bytes);
}

}  // namespace

void* Transport::scratch(std::size_t bytes) {
  host_scratch_.resize(bytes);
  return host_scratch_.data();
}

void Transport::combine(void* acc, const void* in, int64_t n, DType dtype, Combine how) {
  combine_into(acc, in, n, dtype, how);
}

void Transport::divide(void* data, int64_t n, DType dtype, int64_t divisor) {
  divide_by(data, n, dtype, divisor);
}

void ring_allreduce(Transport& transport, void* data, int64_t count, DType dtype, ReduceOp op,
                    const RingOptions& options) {
  check_args(transport, data, count, options);
  const int N = transport.size();
  if (N > 1) {
    const Chunks chunks = balanced_chunks(count, N);
    Ring ring(transport, static_cast<char*>(data), dtype, options);
    ring.run(Phase::reduce_scatter, chunks, op, 1, 2 * (N - 1));
    ring.run(Phase::allgather, chunks, op, N, 2 * (N - 1));
  }
  if (op == ReduceOp::average) transport.divide(data, count, dtype, N);
}

void ring_reduce_scatter(Transport& transport, void* data, int64_t block, DType dtype, ReduceOp op,
                         const RingOptions& options) {
  check_args(transport, data, block, options);
  const int N = transport.size();
  if (N > 1) {
    Ring ring(transport, static_cast<char*>(data), dtype, options);
    ring.run(Phase::reduce_scatter, equal_chunks(block, N), op, 1, N - 1);
  }
  if (op == ReduceOp::average)
    transport.divide(static_cast<char*>(data) + transport.rank() * block * element_size(dtype),
                     block, dtype, N);
}

void ring_allgather(Transport& transport, void* data, int64_t block, DType dtype,
                    const RingOptions& options) {
  check_args(transport, data, block, options);
  const int N = transport.size();
  if (N > 1) {
    Ring ring(transport, static_cast<char*>(data), dtype, options);
    ring.run(Phase::allgather, equal_chunks(block, N), ReduceOp::sum, 1, N - 1);
  }
}

}  // namespace rg::parallel
