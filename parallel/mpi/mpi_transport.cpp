#include "parallel/mpi/mpi_transport.h"

#include <climits>

#include "core/error.h"
#include "parallel/mpi/mpi_check.h"

namespace rg::parallel::mpi {

void MpiTransport::send_recv(const void* send, std::size_t send_bytes, int to, void* recv,
                             std::size_t recv_bytes, int from) {
  RG_CHECK(send_bytes <= INT_MAX && recv_bytes <= INT_MAX,
           "MpiTransport: messages are limited to 2^31 - 1 bytes, got ", send_bytes, " and ",
           recv_bytes);
  // The receive is posted first, so a sender that arrives early finds it waiting.
  MPI_Request recv_request = MPI_REQUEST_NULL, send_request = MPI_REQUEST_NULL;
  if (recv_bytes > 0)
    RG_MPI_CHECK(
        MPI_Irecv(recv, static_cast<int>(recv_bytes), MPI_BYTE, from, tag_, comm_, &recv_request));
  if (send_bytes > 0)
    RG_MPI_CHECK(
        MPI_Isend(send, static_cast<int>(send_bytes), MPI_BYTE, to, tag_, comm_, &send_request));
  // MPI_Test sets a finished request to MPI_REQUEST_NULL, so what is left names whom we wait for.
  auto test = [](MPI_Request& request) {
    int flag = 1;
    if (request != MPI_REQUEST_NULL) RG_MPI_CHECK(MPI_Test(&request, &flag, MPI_STATUS_IGNORE));
    return flag != 0;
  };
  try {
    engine_.wait_until(
        [&] {
          const bool received = test(recv_request);
          const bool sent = test(send_request);
          return received && sent;
        },
        timeout_,
        [&] {
          std::string who;
          if (recv_request != MPI_REQUEST_NULL)
            who = "rank " + std::to_string(from) + " to send " + std::to_string(recv_bytes) +
                  " bytes";
          if (send_request != MPI_REQUEST_NULL)
            who += (who.empty() ? "" : " and ") + std::string("rank ") + std::to_string(to) +
                   " to receive " + std::to_string(send_bytes) + " bytes";
          return who;
        });
  } catch (...) {
    // A late message must not land in a buffer that is about to be freed.
    if (recv_request != MPI_REQUEST_NULL) {
      MPI_Cancel(&recv_request);
      MPI_Request_free(&recv_request);
    }
    throw;
  }
}

}  // namespace rg::parallel::mpi
