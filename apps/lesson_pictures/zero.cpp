// ZeRO-1's picture (docs/learn/6-zero.md): check_equivalence's net under DDP on 3 ranks (threads),
// its buckets, the parameters in each, and the block of each bucket every rank owns — from the
// real DDP's buckets and a real ZeRO-1 step's state on each rank.
#include <cstdio>

#include "apps/check_equivalence/training.h"
#include "apps/lesson_pictures/pictures.h"
#include "apps/lesson_pictures/svg.h"
#include "ops/ops.h"
#include "parallel/thread_group.h"
#include "parallel/zero.h"

namespace rg::apps {

std::string draw_zero() {
  constexpr int n = 3;
  auto groups = parallel::ThreadGroup::create(n);
  std::vector<parallel::BucketInfo> buckets;
  std::vector<int64_t> state_bytes(n);
  int64_t model_bytes = 0;
  std::vector<std::shared_ptr<nn::Module>> nets;  // made before the threads (one generator)
  for (int r = 0; r < n; ++r) nets.push_back(make_net(DType::f32, Device::cpu()));
  parallel::run_ranks(n, [&](int r) {
    auto ddp = std::make_shared<parallel::DistributedDataParallel>(
        nets[static_cast<std::size_t>(r)], groups[static_cast<std::size_t>(r)],
        parallel::DDPOptions{.bucket_cap_bytes = 2048, .first_bucket_bytes = 512});
    SGD sgd = make_sgd(ddp->parameters());
    parallel::ZeroRedundancyOptimizer zero(*ddp, sgd);
    const Batch b = batch(12, 0, DType::f32, Device::cpu());
    cross_entropy(ddp->forward(b.images.narrow(0, 4 * r, 4)), b.labels.narrow(0, 4 * r, 4))
        .backward();
    zero.step();  // the momentum now exists, each rank its shard
    state_bytes[static_cast<std::size_t>(r)] = zero.state_bytes();
    if (r != 0) return;
    buckets = ddp->buckets();
    for (const Tensor& p : ddp->parameters()) model_bytes += static_cast<int64_t>(p.nbytes());
  });

  const double left = 20, width = 760, bar = 22, top = 60, per_bucket = 90;
  Svg svg(left * 2 + width, top + buckets.size() * per_bucket + 70);
  svg.text(left, 24,
           "ZeRO-1 on 3 ranks: each bucket padded to 3 equal blocks; rank r reduces, "
           "updates and keeps block r only.",
           13);
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    const parallel::BucketInfo& info = buckets[b];
    const int64_t block = (info.numel + n - 1) / n, padded = block * n;
    const double y = top + b * per_bucket, scale = width / static_cast<double>(padded);
    svg.text(left, y - 6,
             "bucket " + std::to_string(b) + ": " + std::to_string(info.numel) + " gradients (+" +
                 std::to_string(padded - info.numel) + " padding)",
             11);
    for (std::size_t j = 0; j < info.params.size(); ++j) {
      const int64_t numel =
          (j + 1 < info.params.size() ? info.offsets[j + 1] : info.numel) - info.offsets[j];
      const double x = left + info.offsets[j] * scale, w = numel * scale;
      svg.rect(x, y, w, bar, j % 2 ? "#d9d9d9" : "#bfbfbf", "white");
      if (w > 7.0 * info.params[j].size())
        svg.text(x + w / 2, y + 15, info.params[j], 10, "middle");
    }
    svg.rect(left + info.numel * scale, y, (padded - info.numel) * scale, bar, "#f4f4f4", "#ccc");
    for (int r = 0; r < n; ++r) {
      svg.rect(left + r * block * scale, y + bar + 4, block * scale, bar, palette(r), "white");
      svg.text(left + (r + 0.5) * block * scale, y + bar + 19,
               "rank " + std::to_string(r) + ": elements " + std::to_string(r * block) + ".." +
                   std::to_string((r + 1) * block),
               10, "middle", "white");
    }
  }
  double y = top + buckets.size() * per_bucket + 10;
  for (int r = 0; r < n; ++r) {
    char line[160];
    std::snprintf(line, sizeof line,
                  "rank %d keeps %lld bytes of momentum: %.1f %% of the %lld bytes plain DDP keeps "
                  "on every rank",
                  r, static_cast<long long>(state_bytes[static_cast<std::size_t>(r)]),
                  100.0 * state_bytes[static_cast<std::size_t>(r)] / model_bytes,
                  static_cast<long long>(model_bytes));
    svg.text(left, y + 16 * r, line, 11, "start", palette(r));
  }
  return svg.str();
}

}  // namespace rg::apps
