#include "parallel/coalesced.h"

#include <map>

#include "core/autograd.h"

namespace rg::parallel {

void broadcast_coalesced(ProcessGroup& group, const std::vector<Tensor>& tensors, int root) {
  RG_CHECK(root >= 0 && root < group.size(), "broadcast_coalesced: root ", root,
           " is not a rank of a group of size ", group.size());
  NoGradGuard no_grad;
  // Dtypes in order of first appearance, which is the same on every rank.
  std::vector<DType> order;
  std::map<DType, std::vector<const Tensor*>> by_dtype;
  for (const Tensor& t : tensors) {
    RG_CHECK(t.defined(), "broadcast_coalesced: tensor ", &t - tensors.data(), " is undefined");
    if (!by_dtype.count(t.dtype())) order.push_back(t.dtype());
    by_dtype[t.dtype()].push_back(&t);
  }
  for (DType dtype : order) {
    const std::vector<const Tensor*>& list = by_dtype[dtype];
    int64_t total = 0;
    for (const Tensor* t : list) total += t->numel();
    if (total == 0) continue;
    Tensor flat = empty({total}, {dtype, list[0]->device()});
    auto slice = [&](int64_t& offset, const Tensor& t) {
      Tensor s = flat.narrow(0, offset, t.numel()).view(t.shape());
      offset += t.numel();
      return s;
    };
    if (group.rank() == root) {
      int64_t offset = 0;
      for (const Tensor* t : list) copy_strided(slice(offset, *t), *t);
    }
    group.broadcast(flat, root)->wait();
    if (group.rank() != root) {
      int64_t offset = 0;
      for (const Tensor* t : list) copy_strided(*t, slice(offset, *t));
    }
  }
}

}  // namespace rg::parallel
