// Strided backward-data as stride-1 convolutions of gy, one per phase of gx (see
// conv2d_direct_common.h), on the forward's register tile.
//
// gx[c, h, w] = Σ_{o, i, j} W[o, c, i, j] · gy[o, ho, wo] over h = ho·sH − pH + i·dH (w alike).
// Split the rows of gx by phase, h = u·sH + a: only the taps i with i·dH ≡ a + pH (mod sH)
// reach them, each from gy row u + e_i, e_i = (a + pH − i·dH) / sH. So phase (a, b) of gx is a
// stride-1 correlation of gy with the taps of that phase (3×3 stride 2: 1, 2, 2 and 4 taps),
// and every phase reads gy padded by the same zeros: the forward by outputs' layout (rows of
// Wo + pad, the left padding doubling as the right one) with the kernel's tile, OR channels of
// gx × NV vectors of positions, K = O · taps deep. The phases of one image are computed into
// a buffer and interleaved into gx row by row.
//
// im2col + GEMM instead computes W^T·gy into a column matrix K = C·kH·kW tall and adds it back
// with col2im: at ~60-70 GFLOP/s on ResNet18's stride-2 layers (AVX2, measured), against the
// tile's 100-150 on stride-1 shapes. Phases without taps (1×1 stride 2: three of four) are zero.
// Where this kernel runs instead (overlapping kernels, AVX2) is decided in conv2d_direct_rules.cpp.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "ops/conv/conv2d/conv2d_direct_common.h"

namespace rg::detail {
namespace direct {
namespace {

// The phases of one axis of gx that some tap reaches.
struct AxisPhase {
  int64_t a;                          // positions u·s + a of gx
  int64_t n;                          // how many: ⌈(size − a) / s⌉
  std::vector<int64_t> taps, shifts;  // the taps i that reach them, and their e_i
};

std::vector<AxisPhase> axis_phases(int64_t size, int64_t k, int64_t p, int64_t d, int64_t s) {
  std::vector<AxisPhase> phases;
  for (int64_t a = 0; a < s && a < size; ++a) {
    AxisPhase ph{a, (size - a + s - 1) / s, {}, {}};
    for (int64_t i = 0; i < k; ++i)
      if (const int64_t r = a + p - i * d; r % s == 0) {  // r / s is exact, also below 0
        ph.taps.push_back(i);
        ph.shifts.push_back(r / s);
      }
    if (!ph.taps.empty()) phases.push_back(std::move(ph));
  }
  return phases;
}

// One phase (a, b) of gx as a stride-1 convolution over the padded gy: outputs q = u·Wq + v
// (v >= the phase's width are junk), K = O·taps offsets.
struct Phase {
  const AxisPhase *row, *col;
  int64_t K, Q, Qt;
  std::vector<int64_t> off;  // k = (o·row taps + ti)·col taps + tj
};

struct Plan {
  std::vector<AxisPhase> rows, cols;
  int64_t pad = 0;    // zeros around gy, on every side
  int64_t Wq, plane;  // padded gy: rows of Wo + pad (see Layout), Ho + 2·pad of them
  int64_t xp_size;    // one padded image, with zeros after its last plane
  std::vector<Phase> phases;
  int64_t Qt = 0;  // the widest phase's Qt: the row stride of the phases' outputs
  ForwardTile tile;

  template <class T>
  static Plan of(const DirectConv& g) {
    Plan p;
    p.rows = axis_phases(g.H, g.kH, g.pH, g.dH, g.sH);
    p.cols = axis_phases(g.W, g.kW, g.pW, g.dW, g.sW);
    // Row u + e of gy for u < n: the zeros must cover e < 0 above and u + e >= Ho below.
    // Columns alike, and a phase's outputs must fit in a row: n <= Wq = Wo + pad.
    for (const AxisPhase& r : p.rows)
      for (const int64_t e : r.shifts) p.pad = std::max({p.pad, -e, r.n + e - g.Ho});
    for (const AxisPhase& c : p.cols) {
      p.pad = std::max(p.pad, c.n - g.Wo);
      for (const int64_t f : c.shifts) p.pad = std::max({p.pad, -f, c.n + f - g.Wo});
    }
    p.Wq = g.Wo + p.pad;
    p.plane = (g.Ho + 2 * p.pad) * p.Wq;
    for (const AxisPhase& r : p.rows)
      for (const AxisPhase& c : p.cols) {
        Phase ph{&r,
                 &c,
                 g.O * static_cast<int64_t>(r.taps.size() * c.taps.size()),
                 (r.n - 1) * p.Wq + c.n,
                 0,
                 {}};
        for (int64_t o = 0; o < g.O; ++o)
          for (const int64_t e : r.shifts)
            for (const int64_t f : c.shifts)
              ph.off.push_back(o * p.plane + (e + p.pad) * p.Wq + f + p.pad);
        p.phases.push_back(std::move(ph));
      }
    // The tile that wastes the least work on padding rows (channels of gx) and columns.
    int64_t best = -1;
    for (const ForwardTile& t : kForwardTiles) {
      int64_t work = 0;
      for (const Phase& ph : p.phases)
        work += round_up(g.C, t.OR) * round_up(ph.Q, t.NV * Simd<T>::L) * ph.K;
      if (best < 0 || work < best) best = work, p.tile = t;
    }
    for (Phase& ph : p.phases)
      p.Qt = std::max(p.Qt, ph.Qt = round_up(ph.Q, p.tile.NV * Simd<T>::L));
    // Whole tiles read up to Qt past an offset, which stays inside its plane plus one.
    p.xp_size = round_up((g.O + 1) * p.plane + p.Qt, 64);
    return p;
  }
};

// The weights of every phase f at packed + offset[f], (G · blocks of OR channels of gx) ×
// (K × OR), zero past C, in the shared weights buffer; the threads take blocks of OR channels.
template <class T>
const T* pack_phase_weights(const DirectConv& g, const std::vector<Phase>& phases, int64_t OR,
                            const T* w, std::vector<int64_t>& offset) {
  const int64_t blocks = (g.C + OR - 1) / OR, F = static_cast<int64_t>(phases.size());
  offset.assign(1, 0);
  for (const Phase& ph : phases) offset.push_back(offset.back() + g.G * blocks * ph.K * OR);
  T* packed = shared_buffer<T, Shared::weights>(static_cast<std::size_t>(offset.back()));
  const auto pack = [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t f = b / (g.G * blocks), grp = b / blocks % g.G, c0 = b % blocks * OR;
      const Phase& ph = phases[static_cast<std::size_t>(f)];
      T* block =
          packed + offset[static_cast<std::size_t>(f)] + (grp * blocks + c0 / OR) * ph.K * OR;
      for (int64_t c = c0; c < c0 + OR; ++c) {
        T* dst = block + c - c0;
        for (int64_t o = 0; o < g.O; ++o)
          for (const int64_t i : ph.row->taps)
            for (const int64_t j : ph.col->taps) {
              *dst = c < g.C ? w[(((grp * g.O + o) * g.C + c) * g.kH + i) * g.kW + j] : T(0);
              dst += OR;
            }
      }
    }
  };
  parallel_for(F * g.G * blocks, copy_grain(offset.back() / (F * g.G * blocks)), pack);
  return packed;
}

// gy of one (image, group), O planes of Ho × Wo, into its place in the padded layout (whose
// zeros are already there).
template <class T>
void place_gy(const DirectConv& g, const Plan& p, const T* gy, T* xp) {
  for (int64_t o = 0; o < g.O; ++o)
    for (int64_t r = 0; r < g.Ho; ++r)
      copy_row(gy + (o * g.Ho + r) * g.Wo, g.Wo, xp + o * p.plane + (r + p.pad) * p.Wq + p.pad);
}

// One (image, group) of gx, C planes of H × W, from its phases ys[f] (Cr channels × Qt each).
template <class T>
void interleave(const DirectConv& g, const Plan& p, const T* ys, int64_t Cr, T* gx) {
  const auto ncols = static_cast<int64_t>(p.cols.size());
  for (int64_t c = 0; c < g.C; ++c)
    for (int64_t h = 0; h < g.H; ++h) {
      T* row = gx + (c * g.H + h) * g.W;
      const auto r = std::find_if(p.rows.begin(), p.rows.end(),
                                  [&](const AxisPhase& ph) { return ph.a == h % g.sH; });
      // Rows and columns that no tap reaches stay zero.
      if (r == p.rows.end() || ncols < g.sW) std::fill(row, row + g.W, T(0));
      if (r == p.rows.end()) continue;
      const int64_t u = h / g.sH, f0 = (r - p.rows.begin()) * ncols;
      for (int64_t f = 0; f < ncols; ++f) {
        const AxisPhase& col = p.cols[static_cast<std::size_t>(f)];
        const T* src = ys + ((f0 + f) * Cr + c) * p.Qt + u * p.Wq;
        if (g.sW == 2) {  // the common stride, as a constant: the loop vectorises
          for (int64_t v = 0; v < col.n; ++v) row[v * 2 + col.a] = src[v];
        } else {
          for (int64_t v = 0; v < col.n; ++v) row[v * g.sW + col.a] = src[v];
        }
      }
    }
}

}  // namespace
}  // namespace direct

using namespace direct;

template <class T>
void direct_conv_backward_data(const DirectConv& g, const T* gy, const T* w, T* gx) {
  const Plan p = Plan::of<T>(g);
  const int OR = p.tile.OR;
  const int64_t CB = (g.C + OR - 1) / OR, Cr = CB * OR, Qs = p.Qt;
  const auto F = static_cast<int64_t>(p.phases.size());
  std::vector<int64_t> wp_at;
  const T* wp = pack_phase_weights(g, p.phases, OR, w, wp_at);
  // Images per pass: enough positions that each block of packed weights serves several
  // tiles, in at most 512 KB of padded gy and phases together.
  const int64_t per_image = p.xp_size + F * Cr * Qs;
  const int64_t fit = std::max<int64_t>(1, (512 << 10) / (per_image * int64_t{sizeof(T)}));
  const int64_t B = std::clamp<int64_t>((128 + g.Ho * g.Wo - 1) / (g.Ho * g.Wo), 1, fit);
  const int64_t batches = (g.N + B - 1) / B, items = batches * g.G;
  const int64_t gy_group = g.O * g.Ho * g.Wo, gx_group = g.C * g.H * g.W;
  auto make_scratch = [&] {
    T* xp = thread_buffer<T>(static_cast<std::size_t>(B * per_image));
    std::fill(xp, xp + B * p.xp_size, T(0));  // the zeros of the layout, the same for every image
    return xp;
  };
  parallel_claim(items, make_scratch, [&](int64_t it, T* xp) {
    T* ys = xp + B * p.xp_size;
    const int64_t grp = it % g.G, n0 = it / g.G * B, b = std::min(B, g.N - n0);
    for (int64_t i = 0; i < b; ++i)
      place_gy(g, p, gy + ((n0 + i) * g.G + grp) * gy_group, xp + i * p.xp_size);
    with_forward_tile(p.tile, [&]<int TR, int TV>() {
      constexpr int64_t TW = TV * Simd<T>::L;
      for (int64_t f = 0; f < F; ++f) {
        const Phase& ph = p.phases[static_cast<std::size_t>(f)];
        for (int64_t cb = 0; cb < CB; ++cb) {
          const T* wb = wp + wp_at[static_cast<std::size_t>(f)] + (grp * CB + cb) * ph.K * TR;
          for (int64_t i = 0; i < b; ++i)
            for (int64_t q = 0; q < ph.Qt; q += TW)
              forward_tile<T, TR, TV>(xp + i * p.xp_size + q, ph.off.data(), ph.K, wb,
                                      ys + ((i * F + f) * Cr + cb * TR) * Qs + q, Qs);
        }
      }
    });
    for (int64_t i = 0; i < b; ++i)
      interleave(g, p, ys + i * F * Cr * Qs, Cr, gx + ((n0 + i) * g.G + grp) * gx_group);
  });
}

template void direct_conv_backward_data<float>(const DirectConv&, const float*, const float*,
                                               float*);
template void direct_conv_backward_data<double>(const DirectConv&, const double*, const double*,
                                                double*);

}  // namespace rg::detail
