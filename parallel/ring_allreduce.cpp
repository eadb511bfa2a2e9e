#include "parallel/ring_allreduce.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
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

// One ring: the steps of one phase. `first_step` and `total_steps` only number the steps for
// traces and errors (an allreduce runs both phases: steps 1..N−1, then N..2(N−1)).
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
    const int right = mod(r + 1, N), left = mod(r - 1, N);
    if (phase == Phase::reduce_scatter) {
      int64_t longest = 0;
      for (int c = 0; c < N; ++c) longest = std::max(longest, chunks.length(c));
      scratch_ = static_cast<char*>(
          t_.scratch(static_cast<std::size_t>(std::min(longest, segment_) * elem_)));
    }
    for (int s = 0; s < N - 1; ++s) {
      // In the reduce-scatter rank r ends with chunk r complete; the allgather starts there.
      const int send_chunk = phase == Phase::reduce_scatter ? mod(r - s - 1, N) : mod(r - s, N);
      const int recv_chunk = mod(send_chunk - 1, N);
      const int step = first_step + s;
      if (options_.trace == Trace::on)
        trace(step, total_steps, phase, chunks, send_chunk, right, recv_chunk, left);
      // The timeline: each step with what it moved (bench_allreduce fits its α-β model to these).
      trace::Span span("ring", [&] {
        return std::string(phase == Phase::reduce_scatter ? "reduce-scatter" : "allgather") +
               " step " + std::to_string(step) + "/" + std::to_string(total_steps);
      });
      if (span.recording())
        span.set_args(trace::args("collective", options_.label, "step", step, "steps", total_steps,
                                  "sent_bytes", chunks.length(send_chunk) * elem_, "to", right,
                                  "received_bytes", chunks.length(recv_chunk) * elem_, "from",
                                  left));
      try {
        exchange(phase, chunks, send_chunk, right, recv_chunk, left, op);
      } catch (const Error& e) {
        fail("step ", step, "/", total_steps, " ",
             phase == Phase::reduce_scatter ? "reduce-scatter" : "allgather", " (sending chunk ",
             send_chunk, " to rank ", right, ", receiving chunk ", recv_chunk, " from rank ", left,
             "): ", e.what());
      }
    }
  }

 private:
  // Moves chunk send_chunk to the right and chunk recv_chunk in from the left, one message of
  // at most segment_ elements each way at a time. Both ends of a message cut the same chunk the
  // same way, so message k of a chunk has the same size on both sides.
  void exchange(Phase phase, const Chunks& chunks, int send_chunk, int right, int recv_chunk,
                int left, ReduceOp op) {
    const int64_t send_len = chunks.length(send_chunk), recv_len = chunks.length(recv_chunk);
    for (int64_t at = 0; at < std::max(send_len, recv_len); at += segment_) {
      const int64_t n_send = std::clamp<int64_t>(send_len - at, 0, segment_);
      const int64_t n_recv = std::clamp<int64_t>(recv_len - at, 0, segment_);
      char* send = data_ + (chunks.start(send_chunk) + at) * elem_;
      char* own = data_ + (chunks.start(recv_chunk) + at) * elem_;
      // The reduce-scatter adds what arrives to its own copy; the allgather keeps it as it is.
      char* recv = phase == Phase::reduce_scatter ? scratch_ : own;
      t_.send_recv(send, static_cast<std::size_t>(n_send * elem_), right, recv,
                   static_cast<std::size_t>(n_recv * elem_), left);
      if (phase == Phase::reduce_scatter && n_recv > 0)
        t_.combine(own, scratch_, n_recv, dtype_, combine_of(op));
    }
  }

  void trace(int step, int total, Phase phase, const Chunks& chunks, int send_chunk, int right,
             int recv_chunk, int left) const {
    std::ostringstream line;
    line << "[" << options_.label << "] step " << step << "/" << total << " "
         << (phase == Phase::reduce_scatter ? "reduce-scatter" : "allgather") << ": rank "
         << t_.rank() << " sends chunk " << send_chunk << " [elements " << chunks.start(send_chunk)
         << ".." << chunks.end(send_chunk) << ") to rank " << right << ", receives chunk "
         << recv_chunk << " [elements " << chunks.start(recv_chunk) << ".."
         << chunks.end(recv_chunk) << ") from rank " << left
         << (phase == Phase::reduce_scatter ? " and adds it" : " and keeps it");
    if (options_.trace_sink) {
      options_.trace_sink(line.str());
    } else {
      // One write per line, so the lines of ranks sharing a terminal do not interleave.
      const std::string text = line.str() + "\n";
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    }
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
