// A mistake for the grader to catch: the reduce-scatter alone (README.md).
#include <vector>

#include "parallel/textbook/textbook.h"

namespace rg::textbook {

void ring_allreduce(parallel::Transport& transport, float* data, int64_t n) {
  const int N = transport.size(), r = transport.rank();
  auto mod = [](int a, int m) { return ((a % m) + m) % m; };
  auto begin = [&](int c) { return c * (n / N) + std::min<int64_t>(c, n % N); };
  auto length = [&](int c) { return begin(c + 1) - begin(c); };
  std::vector<float> incoming(static_cast<std::size_t>(n / N + 1));
  for (int s = 0; s < N - 1; ++s) {
    const int send = mod(r - s - 1, N), recv = mod(r - s - 2, N);
    transport.send_recv(data + begin(send), length(send) * sizeof(float), mod(r + 1, N),
                        incoming.data(), length(recv) * sizeof(float), mod(r - 1, N));
    for (int64_t i = 0; i < length(recv); ++i) data[begin(recv) + i] += incoming[i];
  }
}

}  // namespace rg::textbook
