// Lesson 1: the ring allreduce (docs/learn/1-ring.md). N ranks stand in a ring; each cuts its
// data into N chunks as equal as can be (the first n mod N one longer).
//
//   reduce-scatter: N−1 steps. In step s, rank r sends chunk (r−s−1) mod N to its right
//     neighbour and receives chunk (r−s−2) mod N from its left one, adding it to its own.
//     After the last step rank r holds chunk r summed over every rank.
//   allgather: N−1 steps. In step s, rank r sends chunk (r−s) mod N (complete) to the right
//     and receives chunk (r−s−1) mod N from the left, keeping it.
//
// Each rank sends 2(N−1) chunks of n/N values: 2(N−1)/N · n in all, whatever N.
#include <algorithm>
#include <vector>

#include "parallel/textbook/textbook.h"

namespace rg::textbook {

namespace {
int mod(int a, int n) {
  return ((a % n) + n) % n;
}
}  // namespace

void ring_allreduce(parallel::Transport& transport, float* data, int64_t n) {
  const int N = transport.size(), r = transport.rank();
  const int right = mod(r + 1, N), left = mod(r - 1, N);
  auto begin = [&](int c) {
    return c * (n / N) + std::min<int64_t>(c, n % N);
  };  // chunk c: [begin(c), begin(c + 1))
  auto length = [&](int c) { return begin(c + 1) - begin(c); };
  std::vector<float> incoming(static_cast<std::size_t>(n / N + 1));

  for (int s = 0; s < N - 1; ++s) {  // reduce-scatter
    const int send = mod(r - s - 1, N), recv = mod(r - s - 2, N);
    transport.send_recv(data + begin(send), length(send) * sizeof(float), right, incoming.data(),
                        length(recv) * sizeof(float), left);
    for (int64_t i = 0; i < length(recv); ++i) data[begin(recv) + i] += incoming[i];
  }
  for (int s = 0; s < N - 1; ++s) {  // allgather
    const int send = mod(r - s, N), recv = mod(r - s - 1, N);
    transport.send_recv(data + begin(send), length(send) * sizeof(float), right, data + begin(recv),
                        length(recv) * sizeof(float), left);
  }
}

}  // namespace rg::textbook
