#pragma once
// DDP's communication hooks (PyTorch's register_comm_hook and its default_hooks.py): how one
// bucket of gradients is reduced across the ranks. DDP's Reducer only gathers ready gradients
// into buckets; when a bucket is complete it calls the hook, which starts the bucket's
// reduction and returns its Work. When that Work is done, the bucket's buffer must hold what the
// gradients are to be — for every hook here, the average over the ranks.
//
//   ddp.register_comm_hook(fp16_compress_hook);          // half the bytes on the wire
//   ddp.register_comm_hook([](ProcessGroup& g, GradBucket& b) {  // a learner's own
//     return g.allreduce(b.buffer, ReduceOp::average);
//   });
//
// A hook runs inside backward, on the thread that produced the bucket's last gradient, once per
// bucket per synchronised iteration, in bucket order on every rank; it must issue the same
// collectives on every rank, and leave the buffer alone until its Work is done.

#include <functional>
#include <memory>

#include "parallel/process_group.h"

namespace rg::parallel {

struct GradBucket {
  std::size_t index = 0;  // 0 is the first to be ready: the last layers' gradients
  Tensor buffer;          // (numel, padded): every gradient of the bucket is a view into it
  int64_t numel = 0;      // the gradients' elements; the rest of the buffer is zero padding
};

using CommHook = std::function<std::shared_ptr<Work>(ProcessGroup& group, GradBucket& bucket)>;

// The default: allreduce(average) of the buffer, in place.
std::shared_ptr<Work> allreduce_hook(ProcessGroup& group, GradBucket& bucket);

// The buffer travels as f16 (or bf16): half the bytes; each rank divides by N *before* the sum,
// because a sum of N large gradients could overflow f16's 65504 before the division. When the
// reduction is done the result is widened back into the buffer (Horovod's fp16 compression).
std::shared_ptr<Work> fp16_compress_hook(ProcessGroup& group, GradBucket& bucket);
std::shared_ptr<Work> bf16_compress_hook(ProcessGroup& group, GradBucket& bucket);

// The apps' --grad-compression, by name: allreduce_hook, fp16_compress_hook, bf16_compress_hook.
enum class GradCompression { none, fp16, bf16 };
CommHook compression_hook(GradCompression compression);

// A Work that runs `after` once, when `work` is done (the first wait()): a hook's decompression.
std::shared_ptr<Work> then(std::shared_ptr<Work> work, std::function<void()> after);

}  // namespace rg::parallel
