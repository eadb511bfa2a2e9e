#include "parallel/zero.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/autograd.h"
#include "core/trace.h"
#include "ops/ops.h"
#include "optim/clip_grad.h"
#include "parallel/comm_hooks.h"

namespace rg::parallel {

namespace {
constexpr std::size_t npos = static_cast<std::size_t>(-1);

std::string state_key(std::size_t index, const std::string& name) {
  return "optim.state." + std::to_string(index) + "." + name;
}

// A 1-D view of a whole contiguous tensor, detached: what a piece slices.
Tensor flat_view(const Tensor& t) {
  return t.detach().view({t.numel()});
}

// Of a parameter of `numel` elements at `offset` in its bucket, the part inside the block
// [begin, begin + block): its first element, where that sits in the block, and how many.
struct Overlap {
  int64_t param_begin = 0, block_begin = 0, length = 0;
};
Overlap overlap(int64_t offset, int64_t numel, int64_t begin, int64_t block) {
  const int64_t lo = std::max(begin, offset), hi = std::min(begin + block, offset + numel);
  return lo < hi ? Overlap{lo - offset, lo - begin, hi - lo} : Overlap{};
}
}  // namespace

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(DistributedDataParallel& ddp, Optimizer& like,
                                                 std::vector<Tensor> updated,
                                                 std::optional<DType> compression)
    : Optimizer(like.name()), ddp_(ddp), like_(like), group_(ddp.group()) {
  NoGradGuard no_grad;
  const auto named = ddp.module().named_parameters();
  if (updated.empty())
    for (const auto& [_, p] : named) updated.push_back(p);
  RG_CHECK(updated.size() == named.size(), "ZeRO: ", updated.size(),
           " tensors to update for the model's ", named.size(),
           " parameters (pass amp.optimizer_params(), or nothing)");
  const std::vector<Tensor>& trained = ddp.trained_parameters();
  const std::vector<std::string>& names = ddp.trained_parameter_names();
  updated_.resize(trained.size());
  for (std::size_t t = 0; t < trained.size(); ++t) {
    for (std::size_t k = 0; k < named.size(); ++k)
      if (named[k].second.impl() == trained[t].impl()) updated_[t] = updated[k];
    const Tensor& u = updated_[t];
    RG_CHECK(u.defined() && u.numel() == trained[t].numel() && u.is_contiguous() &&
                 u.device() == trained[t].device(),
             "ZeRO: parameter '", names[t], "' ", trained[t].describe(), " is updated through ",
             u.defined() ? u.describe() : std::string("nothing"),
             "; it must be the parameter or a contiguous master copy of it on its device");
    model_elements_ += trained[t].numel();
  }
  // Which of `like`'s parameters is which of DDP's. A frozen parameter of the model (no
  // gradient, as airbench94's whitening weights) gets no piece: the plain optimizer never
  // steps it either, having no gradient to step with.
  const std::vector<Tensor> like_params = like.all_params();
  like_of_param_.assign(trained.size(), npos);
  for (std::size_t i = 0; i < like_params.size(); ++i) {
    std::size_t found = npos;
    for (std::size_t t = 0; t < trained.size(); ++t)
      if (updated_[t].impl() == like_params[i].impl()) found = t;
    bool frozen = false;
    for (std::size_t k = 0; k < named.size(); ++k)
      frozen |= updated[k].impl() == like_params[i].impl() && !named[k].second.requires_grad();
    if (frozen) continue;
    RG_CHECK(found != npos, "ZeRO: parameter ", i, " of the ", like.name(), " ",
             like_params[i].describe(),
             " is none of the model's trained parameters (or their masters): build the "
             "optimizer over the DDP model's parameters (or amp.optimizer_params())");
    like_of_param_[found] = i;
  }
  std::vector<std::size_t> group_of(like_params.size());
  for (std::size_t g = 0, i = 0; g < like.num_groups(); ++g)
    for (std::size_t k = 0; k < like.params(g).size(); ++k) group_of[i++] = g;

  RG_CHECK(ddp.options().unused_parameters == UnusedParameters::error,
           "ZeRO: DDPOptions::unused_parameters must be 'error' (a parameter no rank used would "
           "get a zero gradient and a step, where DDP leaves it alone)");
  RG_CHECK(!ddp.has_comm_hook(),
           "ZeRO: this DDP has a communication hook already (another ZeRO, or a compression "
           "hook); ZeRO's reduce-scatter replaces it: give ZeRO the compression instead");
  make_buckets(compression);
  make_pieces(group_of);
  // From now on each bucket is reduce-scattered instead of allreduced (into this rank's block).
  ddp.register_comm_hook(
      [this](ProcessGroup& g, GradBucket& bucket) { return reduce_scatter_hook(g, bucket); },
      group_.size());
}

void ZeroRedundancyOptimizer::make_buckets(std::optional<DType> compression) {
  const int64_t n = group_.size();
  for (BucketInfo& info : ddp_.buckets()) {
    const int64_t block = (info.numel + n - 1) / n;
    const Device device = updated_[info.param_index[0]].device();
    const DType wire = compression.value_or(info.dtype);
    RG_CHECK(wire == info.dtype || wire == DType::f16 || wire == DType::bf16,
             "ZeRO: gradients are compressed to f16 or bf16, not ", wire);
    const DType updated = updated_[info.param_index[0]].dtype();
    buckets_.push_back({std::move(info), block, zeros({block}, {wire, device}),
                        zeros({block * n}, {updated, device})});
  }
}

void ZeroRedundancyOptimizer::make_pieces(const std::vector<std::size_t>& group_of) {
  const std::vector<std::string>& names = ddp_.trained_parameter_names();
  Optimizer& like = like_;

  // This rank's pieces: in each bucket, the parameters' elements inside block `rank`.
  const int64_t r = group_.rank();
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    const BucketInfo& bucket = buckets_[b].info;
    const int64_t begin = r * buckets_[b].block;
    DType dtype = DType::f32;
    for (std::size_t j = 0; j < bucket.param_index.size(); ++j) {
      const std::size_t t = bucket.param_index[j];
      const Tensor& u = updated_[t];
      if (j == 0) dtype = u.dtype();
      RG_CHECK(u.dtype() == dtype, "ZeRO: bucket ", b, " mixes parameters updated in ", dtype,
               " and ", u.dtype(), " ('", names[t], "')");
      const Overlap o = overlap(bucket.offsets[j], u.numel(), begin, buckets_[b].block);
      if (o.length == 0 || like_of_param_[t] == npos) continue;
      pieces_.push_back({b, like_of_param_[t], o.param_begin, o.block_begin, o.length,
                         flat_view(u).narrow(0, o.param_begin, o.length)});
    }
  }
  // In `like`'s order, so that the local optimizer's groups and indices follow its own.
  std::stable_sort(pieces_.begin(), pieces_.end(),
                   [](const Piece& a, const Piece& b) { return a.like_index < b.like_index; });
  piece_groups_.assign(like.num_groups(), {});
  for (const Piece& p : pieces_) piece_groups_[group_of[p.like_index]].push_back(p.tensor);
  if (!pieces_.empty()) local_ = like.over(piece_groups_);

  // State the full optimizer already holds (a resumed run): this rank's slice of it, then
  // none in `like` — that is the memory ZeRO saves.
  take_shard_of(like.state_dict());
  like.clear_state();
}

void ZeroRedundancyOptimizer::take_shard_of(const StateDict& whole) {
  if (!local_) return;
  StateDict mine = local_->state_dict();
  mine.tensors.clear();
  for (auto it = mine.metadata.begin(); it != mine.metadata.end();)
    it = it->first.starts_with("optim.state.") ? mine.metadata.erase(it) : std::next(it);
  std::vector<std::size_t> group_of;
  for (std::size_t g = 0; g < piece_groups_.size(); ++g)
    for (std::size_t k = 0; k < piece_groups_[g].size(); ++k) group_of.push_back(g);
  for (std::size_t li = 0; li < pieces_.size(); ++li) {
    const Piece& p = pieces_[li];
    for (const std::string& name : like_.buffer_names(group_of[li])) {
      auto t = whole.tensors.find(state_key(p.like_index, name));
      if (t == whole.tensors.end()) continue;
      mine.tensors[state_key(li, name)] =
          flat_view(t->second.contiguous()).narrow(0, p.param_begin, p.length).clone();
    }
    auto step = whole.metadata.find(state_key(p.like_index, "step"));
    if (step != whole.metadata.end()) mine.metadata[state_key(li, "step")] = step->second;
  }
  local_->load_state_dict(mine);
}

// The bucket's communication: a reduce-scatter, so this rank receives its block of the averaged
// gradients (the ring's first half: (N−1)/N of an allreduce's bytes).
std::shared_ptr<Work> ZeroRedundancyOptimizer::reduce_scatter_hook(ProcessGroup& group,
                                                                   GradBucket& bucket) {
  NoGradGuard no_grad;
  const Tensor& shard = buckets_[bucket.index].shard;
  auto reduced = [this, b = bucket.index] { bucket_reduced(b); };
  if (shard.dtype() == bucket.buffer.dtype())
    return then(group.reduce_scatter(shard, bucket.buffer, ReduceOp::average), reduced);
  // Compressed: divided by N before the sum, which then cannot overflow f16.
  const Tensor on_wire = mul(bucket.buffer, 1.0 / group.size()).to(shard.dtype());
  return then(group.reduce_scatter(shard, on_wire, ReduceOp::sum),
              [on_wire, reduced] { reduced(); });
}

// This rank's block of the bucket's averaged gradients, as its pieces' gradients: a view of the
// block, or widened to the masters' dtype (AMP O2).
void ZeroRedundancyOptimizer::bucket_reduced(std::size_t bucket) {
  NoGradGuard no_grad;
  for (Piece& p : pieces_) {
    if (p.bucket != bucket) continue;
    const Tensor slice = buckets_[bucket].shard.narrow(0, p.block_begin, p.length);
    p.tensor.set_grad(slice.dtype() == p.tensor.dtype() ? slice : slice.to(p.tensor.dtype()));
  }
}

void ZeroRedundancyOptimizer::step() {
  consolidated_.reset();
  {
    const trace::Span span("optimizer", "ZeRO: step of this rank's shard");
    if (local_) {
      local_->copy_hyperparameters(like_);  // an LR schedule drives `like`
      local_->step();
    }
  }
  all_gather_parameters();
}

// The ring's second half: each rank sends its block of the updated tensors; every rank then has
// every parameter again. Every bucket in flight at once.
void ZeroRedundancyOptimizer::all_gather_parameters() {
  const trace::Span span("optimizer", "ZeRO: all-gather the parameters");
  NoGradGuard no_grad;
  const int64_t r = group_.rank();
  std::vector<std::shared_ptr<Work>> works;
  for (Bucket& b : buckets_) {
    Tensor mine = zeros({b.block}, {b.gathered.dtype(), b.gathered.device()});
    for (std::size_t j = 0; j < b.info.param_index.size(); ++j) {
      const Tensor& u = updated_[b.info.param_index[j]];
      const Overlap o = overlap(b.info.offsets[j], u.numel(), r * b.block, b.block);
      if (o.length > 0)
        copy_strided(mine.narrow(0, o.block_begin, o.length),
                     flat_view(u).narrow(0, o.param_begin, o.length));
    }
    works.push_back(group_.allgather(b.gathered, mine));
  }
  for (std::size_t k = 0; k < buckets_.size(); ++k) {
    works[k]->wait();
    const Bucket& b = buckets_[k];
    for (std::size_t j = 0; j < b.info.param_index.size(); ++j) {
      const Tensor& u = updated_[b.info.param_index[j]];
      copy_strided(flat_view(u), b.gathered.narrow(0, b.info.offsets[j], u.numel()));
    }
  }
}

void ZeroRedundancyOptimizer::zero_grad() {
  for (const Tensor& p : ddp_.trained_parameters()) Tensor(p).zero_grad();
  for (const Tensor& u : updated_) Tensor(u).zero_grad();  // AMP O2's masters
  for (Piece& p : pieces_) p.tensor.zero_grad();
}

double ZeroRedundancyOptimizer::clip_grad_norm(double max_norm, double norm_type) {
  RG_CHECK(norm_type > 0, "ZeRO clip_grad_norm: norm_type must be > 0, got ", norm_type);
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Piece& p : pieces_)
    if (p.tensor.grad().defined()) grads.push_back(p.tensor);
  const bool inf = std::isinf(norm_type);
  const double local = grad_norm(grads, norm_type);
  // The pieces partition the gradient: Σ|g|^p adds up over ranks, max|g| is the max of maxima.
  Tensor t = full({1}, inf ? local : std::pow(local, norm_type), {.dtype = DType::f64});
  group_.allreduce(t, inf ? ReduceOp::max : ReduceOp::sum)->wait();
  const double total = inf ? t.item() : std::pow(t.item(), 1.0 / norm_type);
  const double coef = max_norm / (total + 1e-6);
  if (std::isfinite(total) && coef < 1)
    for (const Tensor& p : grads) copy_strided(p.grad(), mul(p.grad(), coef));
  return total;
}

void ZeroRedundancyOptimizer::consolidate_state_dict(int root) {
  RG_CHECK(root >= 0 && root < group_.size(), "ZeRO consolidate_state_dict: no rank ", root);
  NoGradGuard no_grad;
  const StateDict local = local_ ? local_->state_dict() : StateDict{};
  const std::size_t count = like_.all_params().size();
  // Per parameter: 0 when no rank has state for it, else its step count + 1 (every piece of a
  // parameter has taken the same steps); the last entry: whether the optimizer counts steps.
  Tensor codes = zeros({static_cast<int64_t>(count) + 1}, {.dtype = DType::i64});
  int64_t* code = codes.data<int64_t>();
  for (std::size_t li = 0; li < pieces_.size(); ++li) {
    const std::string prefix = "optim.state." + std::to_string(li) + ".";
    bool has = false;
    for (auto it = local.tensors.lower_bound(prefix);
         it != local.tensors.end() && it->first.starts_with(prefix); ++it)
      has = true;
    int64_t steps = 0;
    if (auto s = local.metadata.find(prefix + "step"); s != local.metadata.end()) {
      has = true;
      steps = std::stoll(s->second);
      code[count] = 1;
    }
    if (has) code[pieces_[li].like_index] = std::max(code[pieces_[li].like_index], steps + 1);
  }
  group_.allreduce(codes, ReduceOp::max)->wait();

  std::vector<std::size_t> group_of;
  for (std::size_t g = 0; g < like_.num_groups(); ++g)
    for (std::size_t k = 0; k < like_.params(g).size(); ++k) group_of.push_back(g);
  std::vector<std::string> names;  // every group's buffer names, in a fixed order
  for (std::size_t g = 0; g < like_.num_groups(); ++g)
    for (const std::string& name : like_.buffer_names(g))
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);

  const bool here = group_.rank() == root;
  StateDict whole;
  if (here) whole.metadata = like_.state_dict().metadata;  // type and groups; like holds no state
  const int64_t n = group_.size();
  const std::vector<Tensor> like_params = like_.all_params();
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    const BucketInfo& bucket = buckets_[b].info;
    const Tensor& first = updated_[bucket.param_index[0]];
    const int64_t block = buckets_[b].block;
    for (const std::string& name : names) {
      Tensor mine = zeros({block}, {first.dtype(), first.device()});
      for (std::size_t li = 0; li < pieces_.size(); ++li) {
        const Piece& p = pieces_[li];
        auto t = local.tensors.find(state_key(li, name));
        if (p.bucket == b && t != local.tensors.end())
          copy_strided(mine.narrow(0, p.block_begin, p.length), flat_view(t->second));
      }
      // An allgather, not a gather (ProcessGroup has none): the other ranks drop what they get.
      Tensor all = empty({block * n}, {first.dtype(), first.device()});
      group_.allgather(all, mine)->wait();
      if (!here) continue;
      for (std::size_t j = 0; j < bucket.param_index.size(); ++j) {
        const std::size_t i = like_of_param_[bucket.param_index[j]];
        if (i == npos || code[i] == 0) continue;
        const auto& wanted = like_.buffer_names(group_of[i]);
        if (std::find(wanted.begin(), wanted.end(), name) == wanted.end()) continue;
        whole.tensors[state_key(i, name)] = all.narrow(0, bucket.offsets[j], like_params[i].numel())
                                                .view(like_params[i].shape())
                                                .clone();
      }
    }
  }
  if (here && code[count] == 1)
    for (std::size_t i = 0; i < count; ++i)
      if (code[i] > 0) whole.metadata[state_key(i, "step")] = std::to_string(code[i] - 1);
  consolidated_ = here ? std::optional<StateDict>(std::move(whole)) : std::nullopt;
}

StateDict ZeroRedundancyOptimizer::state_dict() const {
  RG_CHECK(consolidated_.has_value(),
           "ZeRO: state_dict() holds the whole state only on the rank that consolidated it, "
           "until the next step: call consolidate_state_dict(root) on every rank first (it "
           "gathers every rank's shard), then state_dict() on the root");
  return *consolidated_;
}

void ZeroRedundancyOptimizer::load_state_dict(const StateDict& whole) {
  like_.load_state_dict(whole);  // validates everything against the whole parameters
  take_shard_of(like_.state_dict());
  like_.clear_state();
  consolidated_.reset();
}

int64_t ZeroRedundancyOptimizer::state_bytes() const {
  return local_ ? local_->state_bytes() : 0;
}

double ZeroRedundancyOptimizer::shard_fraction() const {
  int64_t mine = 0;
  for (const Piece& p : pieces_) mine += p.length;
  return model_elements_ > 0 ? static_cast<double>(mine) / static_cast<double>(model_elements_) : 0;
}

nlohmann::json ZeroRedundancyOptimizer::options_json(std::size_t group) const {
  nlohmann::json g =
      nlohmann::json::parse(like_.state_dict().metadata.at("optim.param_groups"))[group];
  g.erase("params");
  return g;
}

void ZeroRedundancyOptimizer::load_options_json(std::size_t, const nlohmann::json&) {
  fail("ZeRO: hyperparameters are the wrapped ", like_.name(), "'s: set them there");
}

bool ZeroRedundancyOptimizer::counts_steps() const {
  return false;  // its state_dict() is the consolidated one; the base's bookkeeping is unused
}

}  // namespace rg::parallel
