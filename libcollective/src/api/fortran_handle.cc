#include "api/fortran_handle.h"

#include <string>
#include <type_traits>

#include "collective/errors.h"
#include "core/mpi_check.h"

namespace collective::internal {
namespace {

// MPI reports an invalid handle through MPI_COMM_WORLD's error handler,
// which aborts the job by default. While a handle is being checked, errors
// come back as codes; the program's handler is restored afterwards. The
// caller holds the library's MPI lock (core/mpi_thread_level.h), so below
// MPI_THREAD_MULTIPLE no other MPI call of the library sees the swap.
class ErrorsReturnOnWorld {
 public:
  ErrorsReturnOnWorld() {
    if (MPI_Comm_get_errhandler(MPI_COMM_WORLD, &previous_) != MPI_SUCCESS) return;
    swapped_ = MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN) == MPI_SUCCESS;
  }
  ~ErrorsReturnOnWorld() {
    if (swapped_) MPI_Comm_set_errhandler(MPI_COMM_WORLD, previous_);
    if (previous_ != MPI_ERRHANDLER_NULL) MPI_Errhandler_free(&previous_);
  }
  ErrorsReturnOnWorld(const ErrorsReturnOnWorld&) = delete;
  ErrorsReturnOnWorld& operator=(const ErrorsReturnOnWorld&) = delete;

 private:
  MPI_Errhandler previous_ = MPI_ERRHANDLER_NULL;
  bool swapped_ = false;
};

// Open MPI's MPI_Comm is a pointer and its MPI_Comm_f2c answers a null
// pointer for an index that holds no communicator; MPICH's is an int (a
// template, so that the pointer comparison is only compiled for pointers).
template <typename Handle>
bool is_null_pointer(Handle comm) {
  if constexpr (std::is_pointer_v<Handle>) {
    return comm == nullptr;
  } else {
    return false;
  }
}

}  // namespace

MPI_Comm intracommunicator_from_fortran_handle(int handle, const char* operation) {
  // The handle names no usable communicator: the rank in the message is
  // this process's in MPI_COMM_WORLD.
  int world_rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  auto refuse = [&](const std::string& cause) {
    throw InvalidArgumentError(operation, world_rank,
                               "the handle " + std::to_string(handle) + " " + cause);
  };
  constexpr const char* kNotACommunicator =
      "is not a communicator of this process (pass MPI_Comm_c2f(comm) of a communicator that "
      "is not freed)";
  const MPI_Comm comm = MPI_Comm_f2c(handle);
  if (is_null_pointer(comm)) refuse(kNotACommunicator);
  if (comm == MPI_COMM_NULL) refuse("is MPI_COMM_NULL (pass MPI_Comm_c2f(comm))");
  const ErrorsReturnOnWorld errors_return;
  // The round trip goes through MPI's handle table (Open MPI's f2c table
  // holds freed slots' indices no more); a handle MPI cannot resolve fails
  // MPI_Comm_test_inter, which makes no communication.
  if (MPI_Comm_c2f(comm) != handle) refuse(kNotACommunicator);
  int inter = 0;
  const int rc = MPI_Comm_test_inter(comm, &inter);
  if (rc != MPI_SUCCESS) refuse(std::string(kNotACommunicator) + ": " + mpi_error_text(rc));
  if (inter) {
    refuse(
        "is an intercommunicator: a Communicator wraps an intracommunicator (merge it with "
        "MPI_Intercomm_merge first)");
  }
  return comm;
}

}  // namespace collective::internal
