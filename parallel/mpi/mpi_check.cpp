#include "parallel/mpi/mpi_check.h"

#include "core/error.h"
#include "parallel/reduce.h"

namespace rg::parallel::mpi {

std::string error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

void check(int code, const char* call, const char* file, int line) {
  if (code != MPI_SUCCESS) [[unlikely]]
    fail(file, ":", line, ": ", call, " failed: ", error_string(code));
}

MPI_Datatype datatype(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return MPI_FLOAT;
    case DType::f64:
      return MPI_DOUBLE;
    case DType::f16:
    case DType::bf16:
      return MPI_UINT16_T;
    case DType::i64:
      return MPI_INT64_T;
    case DType::u8:
      return MPI_UINT8_T;
  }
  fail("MPI backend: invalid dtype ", static_cast<int>(dtype));
}

namespace {
// MPI calls a user operator as f(in, inout, len, type) and wants inout = in ⊕ inout; the ops
// are commutative, so the order of the operands does not matter.
template <DType D, ReduceOp Op>
void user_op(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce_into(inout, in, *len, D, Op);
}

constexpr int kOps = 3;  // sum, max, min
MPI_Op half_ops[kOps] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
MPI_Op bfloat_ops[kOps] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
MPI_Op byte_sum = MPI_OP_NULL;

int op_index(ReduceOp op) {
  return op == ReduceOp::max ? 1 : op == ReduceOp::min ? 2 : 0;  // average reduces as sum
}
}  // namespace

void create_ops() {
  RG_MPI_CHECK(MPI_Op_create(&user_op<DType::f16, ReduceOp::sum>, 1, &half_ops[0]));
  RG_MPI_CHECK(MPI_Op_create(&user_op<DType::f16, ReduceOp::max>, 1, &half_ops[1]));
  RG_MPI_CHECK(MPI_Op_create(&user_op<DType::f16, ReduceOp::min>, 1, &half_ops[2]));
  RG_MPI_CHECK(MPI_Op_create(&user_op<DType::bf16, ReduceOp::sum>, 1, &bfloat_ops[0]));
  RG_MPI_CHECK(MPI_Op_create(&user_op<DType::bf16, ReduceOp::max>, 1, &bfloat_ops[1]));
  RG_MPI_CHECK(MPI_Op_create(&user_op<DType::bf16, ReduceOp::min>, 1, &bfloat_ops[2]));
  RG_MPI_CHECK(MPI_Op_create(&user_op<DType::u8, ReduceOp::sum>, 1, &byte_sum));
}

void free_ops() {
  for (MPI_Op* ops : {half_ops, bfloat_ops})
    for (int i = 0; i < kOps; ++i)
      if (ops[i] != MPI_OP_NULL) MPI_Op_free(&ops[i]);
  if (byte_sum != MPI_OP_NULL) MPI_Op_free(&byte_sum);
}

MPI_Op reduce_op(ReduceOp op, DType dtype) {
  if (dtype == DType::f16) return half_ops[op_index(op)];
  if (dtype == DType::bf16) return bfloat_ops[op_index(op)];
  // Open MPI's AVX reduction adds 8-bit integers with saturation where its scalar code wraps
  // (open-mpi/ompi#8045, closed as wontfix): one array could get both. Ours always wraps.
  if (dtype == DType::u8 && op_index(op) == 0) return byte_sum;
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::average:
      return MPI_SUM;
    case ReduceOp::max:
      return MPI_MAX;
    case ReduceOp::min:
      return MPI_MIN;
  }
  return MPI_SUM;
}

}  // namespace rg::parallel::mpi
