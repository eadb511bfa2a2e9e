#include "parallel/mpi/mpi_group.h"

#include <climits>
#include <cstring>
#include <sstream>

#include "core/trace.h"
#include "parallel/collective_checks.h"
#include "parallel/mpi/mpi_check.h"
#include "parallel/mpi/mpi_transport.h"
#include "parallel/reduce.h"
#include "parallel/ring_allreduce.h"

namespace rg::parallel::mpi {

namespace {
const char* kind_name(MpiGroup::Kind kind) {
  switch (kind) {
    case MpiGroup::Kind::allreduce:
      return "allreduce";
    case MpiGroup::Kind::broadcast:
      return "broadcast";
    case MpiGroup::Kind::allgather:
      return "allgather";
    case MpiGroup::Kind::reduce_scatter:
      return "reduce_scatter";
    case MpiGroup::Kind::barrier:
      return "barrier";
  }
  return "?";
}

int mpi_count(int64_t count, const char* collective) {
  RG_CHECK(count <= INT_MAX, collective, ": MPI counts are ints; ", count,
           " elements is too many for the native algorithm (the ring has no such limit)");
  return static_cast<int>(count);
}

MPI_Comm duplicate_world(Engine& engine) {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Request request = MPI_REQUEST_NULL;
  RG_MPI_CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &comm, &request));
  engine.wait_request(request, engine.timeout(), [] {
    return std::string("every rank to create the group (MPI_Comm_idup in parallel::new_group)");
  });
  RG_MPI_CHECK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  return comm;
}
}  // namespace

std::string MpiGroup::describe(const Call& call) {
  const auto kind = static_cast<Kind>(call.kind);
  const auto dtype = static_cast<DType>(call.dtype);
  const auto op = static_cast<ReduceOp>(call.op);
  const char* algorithm =
      static_cast<AllreduceAlgorithm>(call.algorithm) == AllreduceAlgorithm::ring ? "ring"
                                                                                  : "native";
  std::ostringstream out;
  out << kind_name(kind) << " #" << call.seq;
  switch (kind) {
    case Kind::allreduce:
      out << " (" << reduce_op_name(op) << ", " << call.count << " x " << dtype << ", " << algorithm
          << ")";
      break;
    case Kind::broadcast:
      out << " (root " << call.root << ", " << call.count << " x " << dtype << ")";
      break;
    case Kind::allgather:
      out << " (" << call.count << " x " << dtype << " from each rank, " << algorithm << ")";
      break;
    case Kind::reduce_scatter:
      out << " (" << reduce_op_name(op) << ", " << call.count << " x " << dtype << " to each rank, "
          << algorithm << ")";
      break;
    case Kind::barrier:
      break;
  }
  return out.str();
}

std::shared_ptr<MpiGroup> MpiGroup::create(Engine& engine, const ProcessGroupOptions& options) {
  check_options(options);
  std::shared_ptr<MpiGroup> group(new MpiGroup(engine, options));
  engine.run([&] {
    // A rank that left before creating this group never will (parallel/mpi/departures.h).
    Engine::Running creating(engine,
                             {.what = Waiting::What::group_creation, .group = engine.groups()});
    group->data_ = duplicate_world(engine);
    group->control_ = duplicate_world(engine);
    group->index_ = engine.add_group();
  });
  return group;
}

std::shared_ptr<Work> MpiGroup::issue(Call call, std::vector<Tensor> keep,
                                      std::function<void(const Call&)> body) {
  std::lock_guard lock(issue_mutex_);
  call.seq = next_seq_++;
  // The timeline: the collective on the communication thread, and the end of a span its caller
  // handed over (a DDP bucket: reduced when this body returns).
  const trace::HandOver handed = trace::on() ? trace::take_hand_over() : trace::HandOver{};
  return engine_.submit(
      [self = shared_from_this(), call, body = std::move(body), handed] {
        try {
          trace::Span span("collective", [&] { return describe(call); });
          // What a departed rank's notice is judged against (parallel/mpi/departures.h).
          Engine::Running running(self->engine_, {.what = Waiting::What::collective,
                                                  .group = self->index_,
                                                  .seq = call.seq,
                                                  .kind = kind_name(static_cast<Kind>(call.kind))});
          if (self->options_.check_sequence) self->check_sequence(call);
          body(call);
          self->engine_.completed(self->index_, call.seq);
        } catch (const std::exception& e) {
          trace::end_hand_over(handed);
          fail(describe(call), " on rank ", self->rank(), ": ", e.what());
        }
        trace::end_hand_over(handed);
      },
      std::move(keep));
}

void MpiGroup::check_sequence(const Call& call) {
  const int n = size(), me = rank();
  std::vector<Call> calls(static_cast<std::size_t>(n));
  calls[static_cast<std::size_t>(me)] = call;
  std::vector<MPI_Request> receives(calls.size(), MPI_REQUEST_NULL);
  std::vector<MPI_Request> sends(calls.size(), MPI_REQUEST_NULL);
  for (int r = 0; r < n; ++r) {
    if (r == me) continue;
    RG_MPI_CHECK(MPI_Irecv(&calls[static_cast<std::size_t>(r)], sizeof(Call), MPI_BYTE, r,
                           tag(call), control_, &receives[static_cast<std::size_t>(r)]));
    RG_MPI_CHECK(MPI_Isend(&call, sizeof(Call), MPI_BYTE, r, tag(call), control_,
                           &sends[static_cast<std::size_t>(r)]));
  }
  auto all_done = [](std::vector<MPI_Request>& requests) {
    for (MPI_Request& request : requests) {
      int flag = 1;
      if (request != MPI_REQUEST_NULL) RG_MPI_CHECK(MPI_Test(&request, &flag, MPI_STATUS_IGNORE));
      if (!flag) return false;
    }
    return true;
  };
  try {
    engine_.wait_until(
        [&] {
          const bool received = all_done(receives);
          return all_done(sends) && received;
        },
        options_.timeout,
        [&] {
          std::ostringstream who;
          for (int r = 0; r < n; ++r)
            if (receives[static_cast<std::size_t>(r)] != MPI_REQUEST_NULL)
              who << (who.tellp() > 0 ? ", " : "rank(s) ") << r;
          who << " to issue collective #" << call.seq << " (check_sequence)";
          return who.str();
        });
  } catch (...) {
    for (MPI_Request& request : receives)
      if (request != MPI_REQUEST_NULL) {
        MPI_Cancel(&request);
        MPI_Request_free(&request);
      }
    throw;
  }
  for (int r = 1; r < n; ++r)
    if (!(calls[static_cast<std::size_t>(r)] == calls[0]))
      fail("collective mismatch at #", call.seq, ": rank 0 called ", describe(calls[0]),
           " but rank ", r, " called ", describe(calls[static_cast<std::size_t>(r)]));
}

void MpiGroup::wait_native(MPI_Request& request, const char* function) {
  engine_.wait_request(request, options_.timeout, [&] {
    // With two ranks the late one is the other one; beyond, MPI does not say which.
    if (size() == 2)
      return "rank " + std::to_string(1 - rank()) + " (the only other rank) in " + function;
    return std::string("the other ranks in ") + function +
           " (MPI does not say which rank is late; ProcessGroupOptions::check_sequence "
           "names ranks that never arrive)";
  });
}

// Each collective goes to its device's backend: MPI for cpu tensors, NCCL for cuda ones.
std::shared_ptr<Work> MpiGroup::allreduce(const Tensor& tensor, ReduceOp op) {
  check_defined("allreduce", {tensor});
  return dispatch_device<Kernels::cpu_and_cuda>("allreduce", tensor.device(),
                                                [&](auto on) { return allreduce(on, tensor, op); });
}

std::shared_ptr<Work> MpiGroup::broadcast(const Tensor& tensor, int root) {
  check_defined("broadcast", {tensor});
  return dispatch_device<Kernels::cpu_and_cuda>(
      "broadcast", tensor.device(), [&](auto on) { return broadcast(on, tensor, root); });
}

std::shared_ptr<Work> MpiGroup::allgather(const Tensor& output, const Tensor& input) {
  check_defined("allgather", {output, input});
  return dispatch_device<Kernels::cpu_and_cuda>(
      "allgather", input.device(), [&](auto on) { return allgather(on, output, input); });
}

std::shared_ptr<Work> MpiGroup::reduce_scatter(const Tensor& output, const Tensor& input,
                                               ReduceOp op) {
  check_defined("reduce_scatter", {output, input});
  return dispatch_device<Kernels::cpu_and_cuda>("reduce_scatter", input.device(), [&](auto on) {
    return reduce_scatter(on, output, input, op);
  });
}

std::shared_ptr<Work> MpiGroup::allreduce(OnCpu, const Tensor& tensor, ReduceOp op) {
  check_cpu_tensor("mpi", "allreduce", tensor);
  Call call{.count = tensor.numel(),
            .kind = static_cast<int32_t>(Kind::allreduce),
            .op = static_cast<int32_t>(op),
            .dtype = static_cast<int32_t>(tensor.dtype()),
            .algorithm = static_cast<int32_t>(options_.algorithm)};
  return issue(call, {tensor}, [this, tensor, op](const Call& c) {
    if (options_.algorithm == AllreduceAlgorithm::ring) {
      MpiTransport transport(engine_, data_, rank(), size(), tag(c), options_.timeout);
      RingOptions ring{.chunk_bytes = options_.ring_chunk_bytes,
                       .label = "allreduce #" + std::to_string(c.seq)};
      ring_allreduce(transport, tensor.data_ptr(), tensor.numel(), tensor.dtype(), op, ring);
    } else {
      MPI_Request request = MPI_REQUEST_NULL;
      RG_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, tensor.data_ptr(),
                                  mpi_count(tensor.numel(), "allreduce"), datatype(tensor.dtype()),
                                  reduce_op(op, tensor.dtype()), data_, &request));
      wait_native(request, "MPI_Iallreduce");
      if (op == ReduceOp::average)
        divide_by(tensor.data_ptr(), tensor.numel(), tensor.dtype(), size());
    }
  });
}

std::shared_ptr<Work> MpiGroup::broadcast(OnCpu, const Tensor& tensor, int root) {
  check_cpu_tensor("mpi", "broadcast", tensor);
  check_root("mpi", size(), root);
  Call call{.count = tensor.numel(),
            .kind = static_cast<int32_t>(Kind::broadcast),
            .root = root,
            .dtype = static_cast<int32_t>(tensor.dtype())};
  return issue(call, {tensor}, [this, tensor, root](const Call&) {
    MPI_Request request = MPI_REQUEST_NULL;
    RG_MPI_CHECK(MPI_Ibcast(tensor.data_ptr(), mpi_count(tensor.numel(), "broadcast"),
                            datatype(tensor.dtype()), root, data_, &request));
    wait_native(request, "MPI_Ibcast");
  });
}

std::shared_ptr<Work> MpiGroup::allgather(OnCpu, const Tensor& output, const Tensor& input) {
  check_allgather("mpi", size(), output, input);
  Call call{.count = input.numel(),
            .kind = static_cast<int32_t>(Kind::allgather),
            .dtype = static_cast<int32_t>(input.dtype()),
            .algorithm = static_cast<int32_t>(options_.algorithm)};
  return issue(call, {output, input}, [this, output, input](const Call& c) {
    const int64_t n = input.numel();
    // Our slice goes in place first; both algorithms then fill in the others'.
    std::memcpy(static_cast<char*>(output.data_ptr()) + rank() * input.nbytes(), input.data_ptr(),
                input.nbytes());
    if (options_.algorithm == AllreduceAlgorithm::ring) {
      MpiTransport transport(engine_, data_, rank(), size(), tag(c), options_.timeout);
      RingOptions ring{.chunk_bytes = options_.ring_chunk_bytes,
                       .label = "allgather #" + std::to_string(c.seq)};
      ring_allgather(transport, output.data_ptr(), n, input.dtype(), ring);
    } else {
      MPI_Request request = MPI_REQUEST_NULL;
      RG_MPI_CHECK(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, output.data_ptr(),
                                  mpi_count(n, "allgather"), datatype(input.dtype()), data_,
                                  &request));
      wait_native(request, "MPI_Iallgather");
    }
  });
}

std::shared_ptr<Work> MpiGroup::reduce_scatter(OnCpu, const Tensor& output, const Tensor& input,
                                               ReduceOp op) {
  check_reduce_scatter("mpi", size(), output, input);
  Call call{.count = output.numel(),
            .kind = static_cast<int32_t>(Kind::reduce_scatter),
            .op = static_cast<int32_t>(op),
            .dtype = static_cast<int32_t>(input.dtype()),
            .algorithm = static_cast<int32_t>(options_.algorithm)};
  return issue(call, {output, input}, [this, output, input, op](const Call& c) {
    const int64_t n = output.numel();
    if (options_.algorithm == AllreduceAlgorithm::ring) {
      // The ring reduces in place, and the input is the caller's: work on a copy.
      Tensor scratch = input.clone();
      MpiTransport transport(engine_, data_, rank(), size(), tag(c), options_.timeout);
      RingOptions ring{.chunk_bytes = options_.ring_chunk_bytes,
                       .label = "reduce_scatter #" + std::to_string(c.seq)};
      ring_reduce_scatter(transport, scratch.data_ptr(), n, input.dtype(), op, ring);
      std::memcpy(output.data_ptr(),
                  static_cast<const char*>(scratch.data_ptr()) + rank() * output.nbytes(),
                  output.nbytes());
    } else {
      MPI_Request request = MPI_REQUEST_NULL;
      RG_MPI_CHECK(MPI_Ireduce_scatter_block(
          input.data_ptr(), output.data_ptr(), mpi_count(n, "reduce_scatter"),
          datatype(input.dtype()), reduce_op(op, input.dtype()), data_, &request));
      wait_native(request, "MPI_Ireduce_scatter_block");
      if (op == ReduceOp::average) divide_by(output.data_ptr(), n, output.dtype(), size());
    }
  });
}

std::shared_ptr<Work> MpiGroup::barrier() {
  Call call{.kind = static_cast<int32_t>(Kind::barrier)};
  return issue(call, {}, [this](const Call&) {
    MPI_Request request = MPI_REQUEST_NULL;
    RG_MPI_CHECK(MPI_Ibarrier(data_, &request));
    wait_native(request, "MPI_Ibarrier");
  });
}

}  // namespace rg::parallel::mpi
