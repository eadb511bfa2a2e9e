// The ring's picture (docs/learn/1-ring.md): 3 ranks, 8 elements, rank r holding r + 1 in each;
// every chunk's value on every rank after every step, as the real ring's trace events of a real
// run say it moved.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <map>
#include <set>

#include "apps/lesson_pictures/pictures.h"
#include "apps/lesson_pictures/svg.h"
#include "core/tensor.h"
#include "core/trace.h"
#include "parallel/ring_allreduce.h"
#include "parallel/thread_group.h"
#include "parallel/thread_transport.h"

namespace rg::apps {

namespace {

struct Move {
  int step, rank, sent, received;
  bool adds;
};

// The ring's steps, from the events of a real allreduce over threads.
std::vector<Move> run_ring(int n, int64_t elements) {
  parallel::Wires wires(n);
  trace::start();
  parallel::run_ranks(n, [&](int r) {
    trace::name_this_thread("rank " + std::to_string(r));
    Tensor x = full({elements}, r + 1);
    parallel::ThreadTransport t(wires, r);
    parallel::ring_allreduce(t, x.data_ptr(), elements, DType::f32, parallel::ReduceOp::sum, {});
  });
  trace::stop();
  const trace::Recorded recorded = trace::take();
  std::map<int, int> rank_of_track;
  for (const auto& [track, name] : recorded.tracks)
    if (name.starts_with("rank ")) rank_of_track[track] = std::stoi(name.substr(5));
  std::vector<Move> moves;
  for (const trace::Event& e : recorded.events) {
    if (std::string(e.category) != "ring" || !rank_of_track.count(e.track)) continue;
    const auto args = nlohmann::json::parse("{" + e.args + "}");
    Move m{0, rank_of_track[e.track], 0, 0, e.name.starts_with("reduce-scatter")};
    std::sscanf(e.name.c_str() + e.name.find("step ") + 5, "%d", &m.step);
    std::sscanf(args["send"].get<std::string>().c_str(), "chunk %d", &m.sent);
    std::sscanf(args["receive"].get<std::string>().c_str(), "chunk %d", &m.received);
    moves.push_back(m);
  }
  return moves;
}

}  // namespace

std::string draw_ring() {
  constexpr int n = 3, steps = 2 * (n - 1);
  const std::vector<Move> moves = run_ring(n, 8);
  // who[k][r][c]: the ranks whose values chunk c on rank r holds after step k.
  std::vector<std::vector<std::vector<std::set<int>>>> who(
      steps + 1, std::vector<std::vector<std::set<int>>>(n, std::vector<std::set<int>>(n)));
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < n; ++c) who[0][r][c] = {r};
  std::vector<std::map<int, Move>> received(steps + 1);  // by step, by rank
  for (int k = 1; k <= steps; ++k) {
    who[k] = who[k - 1];
    for (const Move& m : moves) {
      if (m.step != k) continue;
      const int left = (m.rank + n - 1) % n;
      std::set<int> arriving = who[k - 1][left][m.received];
      if (m.adds)
        arriving.insert(who[k - 1][m.rank][m.received].begin(),
                        who[k - 1][m.rank][m.received].end());
      who[k][m.rank][m.received] = arriving;
      received[k][m.rank] = m;
    }
  }
  const double box = 34, gap = 4, cell = n * (box + gap) + 24, left = 70, top = 70, row = 52;
  Svg svg(left + (steps + 1) * cell + 90, top + n * row + 60);
  svg.text(10, 22,
           "The ring allreduce: 3 ranks, 8 elements in 3 chunks; rank r starts with r + 1 "
           "everywhere. Each box: one chunk's value on that rank.",
           13);
  for (int k = 0; k <= steps; ++k) {
    const double x0 = left + k * cell;
    const std::string head = k == 0  ? "start"
                             : k < n ? "reduce-scatter " + std::to_string(k)
                                     : "allgather " + std::to_string(k - n + 1);
    svg.text(x0 + cell / 2 - 12, top - 22, head, 12, "middle");
    for (int r = 0; r < n; ++r) {
      const double y = top + r * row;
      if (k == 0) svg.text(10, y + box * 0.7, "rank " + std::to_string(r), 12);
      for (int c = 0; c < n; ++c) {
        const std::set<int>& s = who[k][r][c];
        int value = 0;
        for (int q : s) value += q + 1;
        const bool complete = static_cast<int>(s.size()) == n;
        const bool arrived = received[k].count(r) && received[k][r].received == c;
        svg.rect(x0 + c * (box + gap), y, box, box * 0.75,
                 complete       ? "#59a14f"
                 : s.size() > 1 ? "#a0cbe8"
                                : "#eeeeee",
                 arrived ? "#222" : "#999", arrived ? 2.5 : 1);
        svg.text(x0 + c * (box + gap) + box / 2, y + box * 0.5, std::to_string(value), 12, "middle",
                 complete ? "white" : "#222");
      }
    }
  }
  const double yk = top + n * row + 10;
  svg.text(10, yk,
           "Column k: after step k. Outlined: the chunk that arrived from the left "
           "neighbour in that step (reduce-scatter adds it, allgather keeps it).",
           11);
  svg.text(10, yk + 18,
           "Green: the complete sum 1 + 2 + 3 = 6. Chunk r is complete on rank r "
           "after the reduce-scatter; the allgather passes the complete chunks on.",
           11);
  return svg.str();
}

}  // namespace rg::apps
