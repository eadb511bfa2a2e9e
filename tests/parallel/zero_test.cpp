// ZeRO-1 (parallel/zero.h) against DDP with the plain optimizer, ranks as threads: the same
// weights — bit for bit on 2 ranks, to rounding on 3 and 4 — for SGD with momentum and AdamW,
// with mixed precision and clipping; 1/N of the state per rank; checkpoints that move between
// the two modes; and the mistakes it refuses.
#include <gtest/gtest.h>

#include "optim/amp.h"
#include "optim/clip_grad.h"
#include "parallel/found_inf.h"
#include "parallel/host_staged_group.h"
#include "tests/parallel/zero_bodies.h"

namespace rg::parallel {
namespace {
using namespace rg::parallel::testing;
using rg::testing::throws_error;

TEST(Zero, SgdMatchesDdpBitForBitOnTwoRanks) {
  on_threads(2, [](auto g) { zero_matches_ddp(g, Kind::sgd, DType::f32, Match::bits); });
}

TEST(Zero, AdamWMatchesDdpBitForBitOnTwoRanks) {
  on_threads(2, [](auto g) { zero_matches_ddp(g, Kind::adamw, DType::f32, Match::bits); });
}

TEST(Zero, MatchesDdpToRoundingOnThreeAndFourRanks) {
  for (int n : {3, 4})
    for (Kind kind : {Kind::sgd, Kind::adamw})
      on_threads(n, [kind](auto g) { zero_matches_ddp(g, kind, DType::f64, Match::tolerance); });
}

// Each rank's model on a device of its own (logical cpu:1 and cpu:2 standing in for two ranks
// sharing a GPU, --backend mpi): its buckets reduce-scattered and its parameters all-gathered
// through host memory (HostStagedGroup), the pieces and their state on the device.
TEST(Zero, ThroughHostMemoryOnDevicesOfTheirOwn) {
  for (Kind kind : {Kind::sgd, Kind::adamw})
    on_threads(2, [kind](std::shared_ptr<ProcessGroup> group) {
      const Device device = Device::cpu(1 + group->rank());
      CurrentCpuDevice current(device);
      zero_matches_ddp(std::make_shared<HostStagedGroup>(group), kind, DType::f32, Match::bits);
    });
}

// The optimizer holds a parameter the model does not train (train_cifar's quick preset: the
// whitening weights): ZeRO leaves it alone, as the plain optimizer does.
TEST(Zero, LeavesFrozenParametersAloneAsThePlainOptimizerDoes) {
  for (Kind kind : {Kind::sgd, Kind::adamw})
    on_threads(2,
               [kind](auto g) { zero_matches_ddp(g, kind, DType::f32, Match::bits, Frozen::yes); });
}

TEST(Zero, OneRankIsThePlainOptimizer) {
  on_threads(1, [](auto g) { zero_matches_ddp(g, Kind::adamw, DType::f32, Match::bits); });
}

// The whole state on rank 0, in the plain optimizer's format: a ZeRO checkpoint resumes under
// plain DDP and a DDP checkpoint under ZeRO, and both continue as one uninterrupted run.
TEST(Zero, CheckpointsMoveBetweenZeroAndDdp) {
  for (Kind kind : {Kind::sgd, Kind::adamw})
    on_threads(2, [kind](std::shared_ptr<ProcessGroup> group) {
      Pair p = make_pair_of(group, kind, DType::f32);
      for (int step = 0; step < 2; ++step) {
        train_step(*p.ddp, *p.plain, *group, step, DType::f32);
        train_step(*p.zero_ddp, *p.zero, *group, step, DType::f32);
      }
      p.zero->consolidate_state_dict(0);
      StateDict from_zero = group->rank() == 0 ? p.zero->state_dict() : StateDict{};
      const StateDict from_ddp = p.plain->state_dict();
      if (group->rank() == 0) {
        EXPECT_EQ(from_zero.metadata, from_ddp.metadata);
        ASSERT_EQ(from_zero.tensors.size(), from_ddp.tensors.size());
        for (const auto& [key, t] : from_ddp.tensors)
          EXPECT_EQ(from_zero.tensors.at(key).to_vector<double>(), t.to_vector<double>()) << key;
      } else {
        EXPECT_TRUE(throws_error([&] { p.zero->state_dict(); }, {"consolidate_state_dict"}));
      }
      // Rank 0's file is everyone's (load_checkpoint_on_root broadcasts it): swap the modes.
      broadcast_optimizer_state(*p.plain, 0, *group);  // every rank has rank 0's
      const StateDict whole = p.plain->state_dict();
      p.zero->load_state_dict(whole);                               // DDP's state -> ZeRO
      if (group->rank() == 0) p.plain->load_state_dict(from_zero);  // ZeRO's state -> DDP
      broadcast_optimizer_state(*p.plain, 0, *group);
      for (int step = 2; step < 4; ++step) {
        train_step(*p.ddp, *p.plain, *group, step, DType::f32);
        train_step(*p.zero_ddp, *p.zero, *group, step, DType::f32);
      }
      expect_same_weights(*p.zero_ddp, *p.ddp, Match::bits, DType::f32, "after the swap");
      // And against a run that never stopped.
      Pair q = make_pair_of(group, kind, DType::f32);
      for (int step = 0; step < 4; ++step) train_step(*q.ddp, *q.plain, *group, step, DType::f32);
      expect_same_weights(*p.ddp, *q.ddp, Match::bits, DType::f32, "uninterrupted");
    });
}

// Resuming on another number of ranks (train/global_batch.h): a ZeRO-1 checkpoint holds the
// whole state, gathered by consolidate_state_dict. Loaded on M ranks it is sliced anew (each
// rank keeps the state of its blocks, which fall elsewhere with M); gathered there again it must
// be the same state bit for bit — every slice taken from the right place — and training from it
// must go on as plain DDP does from the whole state.
TEST(Zero, StateReshardedOntoAnotherNumberOfRanksIsTheUnshardedState) {
  const std::vector<std::pair<int, int>> moves = {{2, 3}, {3, 2}, {4, 1}, {1, 4}, {2, 4}};
  for (const auto& move : moves)
    for (Kind kind : {Kind::sgd, Kind::adamw}) {
      const int from = move.first, to = move.second;  // named variables: lambdas capture them
      const std::string what = std::to_string(from) + " -> " + std::to_string(to) + " ranks, " +
                               (kind == Kind::sgd ? "SGD" : "AdamW");
      StateDict whole;  // rank 0's, consolidated on `from` ranks
      on_threads(from, [&](std::shared_ptr<ProcessGroup> group) {
        Pair p = make_pair_of(group, kind, DType::f64);
        for (int step = 0; step < 2; ++step)
          train_step(*p.zero_ddp, *p.zero, *group, step, DType::f64);
        p.zero->consolidate_state_dict(0);
        if (group->rank() == 0) whole = p.zero->state_dict();
      });
      ASSERT_FALSE(whole.tensors.empty()) << what;
      on_threads(to, [&](std::shared_ptr<ProcessGroup> group) {
        Pair q = make_pair_of(group, kind, DType::f64);
        q.zero->load_state_dict(whole);  // every rank gets the whole state, as on resume
        q.plain->load_state_dict(whole);
        q.zero->consolidate_state_dict(0);
        if (group->rank() == 0) {
          const StateDict again = q.zero->state_dict();
          EXPECT_EQ(again.metadata, whole.metadata) << what;
          ASSERT_EQ(again.tensors.size(), whole.tensors.size()) << what;
          for (const auto& [key, t] : whole.tensors)
            EXPECT_EQ(again.tensors.at(key).to_vector<double>(), t.to_vector<double>())
                << what << ": " << key;
        }
        for (int step = 2; step < 4; ++step) {
          train_step(*q.ddp, *q.plain, *group, step, DType::f64);
          train_step(*q.zero_ddp, *q.zero, *group, step, DType::f64);
        }
        expect_same_weights(*q.zero_ddp, *q.ddp, to <= 2 ? Match::bits : Match::tolerance,
                            DType::f64, what + ", trained on from the resharded state");
      });
    }
}

// Mixed precision, O2 in bf16 (f32 masters, the model in 16 bits) with the loss scaler, and
// clipping by the norm over every rank's pieces: ZeRO against DDP.
TEST(Zero, MixedPrecisionAndClippingMatchDdp) {
  for (double clip : {0.0, 0.5})
    on_threads(2, [clip](std::shared_ptr<ProcessGroup> group) {
      const auto seed = 100 + static_cast<uint64_t>(group->rank());
      auto net_a = seeded<SmallConvNet>(seed, DType::f32, Norm::batch);
      auto net_b = seeded<SmallConvNet>(seed, DType::f32, Norm::batch);
      const AmpOptions o2{.level = OptLevel::O2, .dtype = DType::bf16, .scaler = {}};
      MixedPrecision amp_a(*net_a, o2), amp_b(*net_b, o2);
      sync_found_inf(*amp_a.scaler(), group);
      sync_found_inf(*amp_b.scaler(), group);
      DistributedDataParallel ddp_a(net_a, group, kBuckets), ddp_b(net_b, group, kBuckets);
      amp_a.sync_masters_from_model();  // DDP broadcast rank 0's weights into the models
      amp_b.sync_masters_from_model();
      auto plain = make_optimizer(Kind::sgd, amp_a.optimizer_params());
      auto like = make_optimizer(Kind::sgd, amp_b.optimizer_params());
      ZeroRedundancyOptimizer zero(ddp_b, *like, amp_b.optimizer_params());
      amp_b.scaler()->set_param_names({});  // its parameters are this rank's pieces now
      for (int step = 0; step < 3; ++step) {
        const Tensor x = det_normal({kBatch, 3, 6, 6}, 1000 + step, DType::f32, 0.5, 2.0);
        const Tensor y = det_labels(kBatch, 5, 2000 + step);
        auto run = [&](DistributedDataParallel& ddp, MixedPrecision& amp, Optimizer& opt,
                       ZeroRedundancyOptimizer* z) {
          opt.zero_grad();
          amp.backward(cross_entropy(ddp.forward(amp.cast_input(rank_rows(x, *group))),
                                     rank_rows(y, *group)));
          if (clip > 0) {
            amp.unscale(opt);
            if (z)
              z->clip_grad_norm(clip);
            else
              clip_grad_norm(amp.optimizer_params(), clip);
          }
          EXPECT_TRUE(amp.step(opt));
          amp.update();
        };
        run(ddp_a, amp_a, *plain, nullptr);
        run(ddp_b, amp_b, zero, &zero);
      }
      // Without clipping the same sums in the same order: bit for bit. The clipping norm is
      // summed per rank first, another order: to rounding (f32 masters).
      expect_same_weights(*net_b, *net_a, clip > 0 ? Match::tolerance : Match::bits, DType::f32,
                          "O2, clip " + std::to_string(clip));
      for (std::size_t i = 0; i < amp_a.optimizer_params().size(); ++i)
        EXPECT_TRUE(all_close(amp_b.optimizer_params()[i], amp_a.optimizer_params()[i],
                              clip > 0 ? 1e-5 : 0, clip > 0 ? 1e-4 : 0))
            << "master " << amp_a.param_names()[i];
    });
}

TEST(Zero, RefusesWhatItCannotShard) {
  on_threads(2, [](std::shared_ptr<ProcessGroup> group) {
    auto ddp = std::make_shared<DistributedDataParallel>(
        seeded<SmallConvNet>(1, DType::f32, Norm::none), group, kBuckets);
    Tensor stranger = zeros({3}).set_requires_grad(true);
    SGD other({stranger}, {.lr = 0.1});
    EXPECT_TRUE(throws_error([&] { ZeroRedundancyOptimizer z(*ddp, other); },
                             {"ZeRO", "none of the model's trained parameters"}));
    auto allowing = std::make_shared<DistributedDataParallel>(
        seeded<SmallConvNet>(1, DType::f32, Norm::none), group,
        DDPOptions{.unused_parameters = UnusedParameters::allow});
    SGD sgd(allowing->parameters(), {.lr = 0.1});
    EXPECT_TRUE(throws_error([&] { ZeroRedundancyOptimizer z(*allowing, sgd); },
                             {"ZeRO", "unused_parameters"}));
    SGD fine(ddp->parameters(), {.lr = 0.1});
    EXPECT_TRUE(throws_error([&] { ZeroRedundancyOptimizer z(*ddp, fine, {zeros({1})}); },
                             {"ZeRO", "tensors to update"}));
  });
}

}  // namespace
}  // namespace rg::parallel
