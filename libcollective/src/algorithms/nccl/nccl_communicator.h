// One NCCL communicator and the CUDA stream its calls run on, for one MPI
// communicator and one CUDA device. Created once (collectively) and cached
// by NcclResources; every call through it is complete when it returns.
//
// The NCCL communicator is non-blocking (ncclConfig_t::blocking = 0), so
// no NCCL call can hold the thread: creation and every operation are
// polled with ncclCommGetAsyncError, yielding between polls, until done or
// until the call's deadline, when the communicator is aborted
// (ncclCommAbort) and TimeoutError names what did not finish.
#pragma once

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <memory>
#include <string>

#include "core/request.h"

namespace collective::internal {

class NcclCommunicator {
 public:
  // Collective over `comm`: every rank of comm calls it at the same call,
  // each with the device its buffers are on. `rank` is the caller's rank in
  // the library communicator, for error messages; `scope` names the
  // communicator in them ("all ranks", "this node").
  static std::unique_ptr<NcclCommunicator> create(MPI_Comm comm, int device, const Request& request,
                                                  int rank, std::string scope);

  // Finalizes and destroys the communicator, or aborts it when it failed
  // or does not finish in time. Never throws.
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  ncclComm_t get() const { return comm_; }
  cudaStream_t stream() const { return stream_; }
  int device() const { return device_; }
  int size() const { return size_; }
  int comm_rank() const { return comm_rank_; }
  bool broken() const { return broken_; }

  // Checks the result of an NCCL call that was just issued on this
  // communicator, and waits until NCCL has accepted it (a non-blocking
  // communicator may answer ncclInProgress). Throws CommunicationError
  // (after aborting the communicator) on failure.
  void accept(ncclResult_t result, const char* call, const Request& request);

  // Checks the result of a CUDA call on this communicator's stream.
  void check(cudaError_t error, const char* call, const Request& request);

  // Waits until everything issued on the stream has finished, watching for
  // NCCL's asynchronous errors. `what` names the work in a timeout.
  void synchronize(const Request& request, const char* what);

 private:
  NcclCommunicator(int device, int rank, std::string scope);
  void wait_until_accepted(const Request& request, const char* what);
  [[noreturn]] void fail(const Request& request, const std::string& cause);
  [[noreturn]] void fail_timeout(const Request& request, const char* what);
  void abort() noexcept;

  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  int device_ = -1;
  int size_ = 0;
  int comm_rank_ = 0;
  int error_rank_ = -1;  // rank in the library communicator
  std::string scope_;
  bool broken_ = false;
};

}  // namespace collective::internal
