// The packed layouts of the tile convolutions: geometry and output map (conv2d_tiles_layout.h;
// the packers are in conv2d_tiles_pack.cpp).
#include "ops/conv/conv2d/conv2d_tiles_layout.h"

#include <algorithm>

#include "core/error.h"
#include "core/thread_pool.h"

namespace rg::detail::tiles {

TileConv& TileConv::with_output_size() {
  Ho = (padded_h() - dH * (kH - 1) - 1) / sH + 1;
  Wo = (padded_w() - dW * (kW - 1) - 1) / sW + 1;
  return *this;
}

namespace {
// Positions per plane: at least `needed`, and an odd number of cache lines (see the header).
// (One more position than the reach: the odd pairs of the backward-weight read x[q + 1].)
// Pair planes hold 16 positions per cache line, plain planes 32; the transposes take blocks
// of that many positions.
int64_t plane_length(int64_t needed, PlaneKind kind) {
  const int64_t per_line = kind == PlaneKind::pairs ? 16 : 32;
  int64_t plane = round_up(needed + 1, per_line);
  if ((plane / per_line) % 2 == 0) plane += per_line;
  return plane;
}
}  // namespace

Layout make_layout(const TileConv& g, int64_t images, PlaneKind kind) {
  Layout l;
  l.Cp = round_up(g.C, kChannelBlock);
  l.Op = round_up(g.O, kChannelBlock);
  l.T = g.kH * g.kW;
  l.KB = l.Cp / kChannelBlock;
  // Shared padding needs stride 1, no inserted zeros and symmetric padding no wider than the
  // kernel's reach (then Ho <= H + pH and every tap's wrap into the next row lands on zeros).
  l.shared = g.sH == 1 && g.sW == 1 && g.up_h == 1 && g.up_w == 1 && g.pad_top == g.pad_bottom &&
             g.pad_left == g.pad_right && g.pad_top <= g.dH * (g.kH - 1) &&
             g.pad_left <= g.dW * (g.kW - 1);
  if (l.shared) {
    l.Hs = g.H + g.pad_top;
    l.Ws = g.W + g.pad_left;
  } else {
    l.phases_h = g.sH;
    l.phases_w = g.sW;
    l.Hs = (g.padded_h() + g.sH - 1) / g.sH;
    l.Ws = (g.padded_w() + g.sW - 1) / g.sW;
  }
  l.images = images;
  l.Q = images * l.Hs * l.Ws;
  l.Qpad = round_up(l.Q, kPositionBlock);
  int64_t reach = 0;
  for (int64_t i = 0; i < g.kH; ++i)
    for (int64_t j = 0; j < g.kW; ++j) {
      const int64_t ph = (i * g.dH) % g.sH, pw = (j * g.dW) % g.sW;
      l.tap_phase.push_back(ph * l.phases_w + pw);
      l.tap_shift.push_back((i * g.dH) / g.sH * l.Ws + (j * g.dW) / g.sW);
      reach = std::max(reach, l.tap_shift.back());
    }
  l.phase_used.assign(static_cast<std::size_t>(l.phases()), 0);
  for (int64_t p : l.tap_phase) l.phase_used[static_cast<std::size_t>(p)] = 1;
  l.channels = g.C;
  // In the shared layout the last image's bottom padding and the wrap of its last row lie
  // past Q; the reach covers them.
  l.plane = plane_length(l.Qpad + reach + (l.shared ? (g.pad_top + 1) * l.Ws : 0), kind);
  return l;
}

bool taps_fold(const TileConv& g) {
  return g.kH * g.kW > 1 && g.C * g.kH * g.kW <= kChannelBlock;
}

Layout fold_taps(const TileConv& g, const Layout& source, PlaneKind kind) {
  Layout l = source;
  l.folded = true;
  l.channels = g.C * source.T;
  l.Cp = round_up(l.channels, kChannelBlock);
  l.KB = l.Cp / kChannelBlock;
  l.T = 1;
  l.phases_h = l.phases_w = 1;
  l.tap_phase = {0};
  l.tap_shift = {0};
  l.phase_used = {1};
  l.plane = plane_length(l.Qpad, kind);
  return l;
}

int64_t chunk_images(const TileConv& g, int64_t bytes_per_image, int64_t budget) {
  const int64_t by_budget = std::max<int64_t>(1, budget / std::max<int64_t>(1, bytes_per_image));
  // Leave every thread several chunks, so that one slow core does not hold up the end.
  const int64_t by_balance =
      std::max<int64_t>(1, (g.N + 4 * num_threads() - 1) / (4 * int64_t{num_threads()}));
  return std::max<int64_t>(1, std::min({by_budget, by_balance, g.N}));
}

OutMap make_out_map(const TileConv& g, const Layout& l) {
  OutMap m;
  const int64_t per_image = l.Hs * l.Ws, blocks = l.Qpad / kPositionBlock;
  for (int64_t k = 0; k < blocks; ++k) {
    m.begin.push_back(static_cast<int64_t>(m.segments.size()));
    for (int64_t p = 0; p < kPositionBlock; ++p) {
      const int64_t q = k * kPositionBlock + p;
      if (q >= l.Q) break;
      const int64_t image = q / per_image, ho = q % per_image / l.Ws, wo = q % l.Ws;
      if (ho >= g.Ho || wo >= g.Wo) continue;
      if (m.segments.size() == static_cast<std::size_t>(m.begin.back()) ||
          m.segments.back().image != image)
        m.segments.push_back({.image = image, .dst = ho * g.Wo + wo, .mask = 0, .count = 0});
      m.segments.back().mask |= 1u << p;
      ++m.segments.back().count;
    }
  }
  m.begin.push_back(static_cast<int64_t>(m.segments.size()));
  return m;
}

}  // namespace rg::detail::tiles
