#pragma once
// The elementwise arithmetic of the collectives, shared by the ring allreduce and the MPI
// backend's own reduction operators (MPI has no 16-bit float types), so that both
// algorithms compute with the very same rules (written once, in reduce_functors.h, for these
// host loops and for the GPU kernels of reduce_kernels.cuh):
// - f16 and bf16 are combined in float and rounded back after every step, as NCCL does;
// - integers wrap around like unsigned arithmetic (u8 sums are mod 256, i64 mod 2^64);
// - average is a sum followed by one division by the number of ranks (integers truncate
//   toward zero), so every rank divides the same bits the same way.
// NaN handling of max and min is not specified (MPI leaves it open too).

#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "parallel/process_group.h"
#include "parallel/reduce_functors.h"

namespace rg::parallel {

// The elementwise combination of op (average combines as sum).
Combine combine_of(ReduceOp op);

// acc[i] = acc[i] ⊕ in[i] for n elements of dtype; average combines as sum.
void reduce_into(void* acc, const void* in, int64_t n, DType dtype, ReduceOp op);
void combine_into(void* acc, const void* in, int64_t n, DType dtype, Combine how);

// data[i] /= divisor: the last step of an average.
void divide_by(void* data, int64_t n, DType dtype, int64_t divisor);

const char* reduce_op_name(ReduceOp op);  // "sum", "average", "max", "min"

}  // namespace rg::parallel
