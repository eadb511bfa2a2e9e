#pragma once
// The MPI backend's plumbing: RG_MPI_CHECK around every MPI call, and the MPI names of
// ringgrad's dtypes and reduce ops. Only parallel/mpi/*.cpp include this (and mpi.h).

#include <mpi.h>

#include <string>

#include "core/dtype.h"
#include "parallel/process_group.h"

// RG_MPI_CHECK(MPI_Isend(...)): throws rg::Error with file:line, the call and MPI's own error
// string when the call does not return MPI_SUCCESS. The communicators use MPI_ERRORS_RETURN,
// so errors come back here instead of aborting inside MPI.
#define RG_MPI_CHECK(call) ::rg::parallel::mpi::check((call), #call, __FILE__, __LINE__)

namespace rg::parallel::mpi {

void check(int code, const char* call, const char* file, int line);
std::string error_string(int code);  // MPI_Error_string

// MPI_FLOAT, MPI_DOUBLE, MPI_INT64_T, MPI_UINT8_T; f16 and bf16 travel as MPI_UINT16_T and are
// reduced by our own operators (MPI has no 16-bit float types).
MPI_Datatype datatype(DType dtype);

// The operator for an MPI reduction of dtype: MPI_SUM (also for average, divided afterwards),
// MPI_MAX, MPI_MIN, or for f16/bf16 (and u8 sums, see the .cpp) one made with MPI_Op_create
// from parallel/reduce.h.
// create_ops() / free_ops() run once on the communication thread, after MPI_Init / before
// MPI_Finalize.
MPI_Op reduce_op(ReduceOp op, DType dtype);
void create_ops();
void free_ops();

}  // namespace rg::parallel::mpi
