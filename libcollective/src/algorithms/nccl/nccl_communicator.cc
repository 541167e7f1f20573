#include "algorithms/nccl/nccl_communicator.h"

#include <sched.h>

#include "algorithms/nccl/nccl_bootstrap.h"
#include "algorithms/nccl/nccl_types.h"
#include "collective/errors.h"
#include "core/env_params.h"
#include "core/log.h"
#include "core/mpi_check.h"
#include "gpu/cuda_check.h"
#include "gpu/device_guard.h"

namespace collective::internal {

NcclCommunicator::NcclCommunicator(int device, int rank, std::string scope)
    : device_(device), error_rank_(rank), scope_(std::move(scope)) {}

std::unique_ptr<NcclCommunicator> NcclCommunicator::create(MPI_Comm comm, int device,
                                                           const Request& request, int rank,
                                                           std::string scope) {
  std::unique_ptr<NcclCommunicator> self(new NcclCommunicator(device, rank, std::move(scope)));
  check_mpi(MPI_Comm_size(comm, &self->size_), "MPI_Comm_size", request.label(), rank);
  check_mpi(MPI_Comm_rank(comm, &self->comm_rank_), "MPI_Comm_rank", request.label(), rank);
  const ncclUniqueId id = exchange_unique_id(comm, request, rank);

  gpu::DeviceGuard guard(device, request.label(), rank);
  // A blocking stream (not cudaStreamNonBlocking): work the caller queued
  // on the legacy default stream finishes before NCCL reads the buffers.
  gpu::check_cuda(cudaStreamCreateWithFlags(&self->stream_, cudaStreamDefault),
                  "cudaStreamCreateWithFlags", request.label(), rank);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const ncclResult_t result =
      ncclCommInitRankConfig(&self->comm_, self->size_, id, self->comm_rank_, &config);
  self->accept(result, "ncclCommInitRankConfig", request);
  COLLECTIVE_LOG(kDebug, request.label()
                             << ": NCCL " << nccl_runtime_version() << " communicator ready for "
                             << self->scope_ << " (" << self->size_ << " ranks, this one "
                             << self->comm_rank_ << ", CUDA device " << device << ")");
  return self;
}

NcclCommunicator::~NcclCommunicator() {
  try {
    if (comm_ != nullptr) {
      gpu::DeviceGuard guard(device_, "NCCL communicator release", error_rank_);
      if (!broken_) {
        // Finalize flushes outstanding work; bounded like any call, then
        // abandoned to ncclCommAbort.
        ncclResult_t state = ncclCommFinalize(comm_);
        const auto deadline = Clock::now() + env_params().timeout;
        while (state == ncclInProgress && Clock::now() < deadline) {
          sched_yield();
          if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) break;
        }
        if (state == ncclSuccess) {
          const ncclResult_t destroyed = ncclCommDestroy(comm_);
          if (destroyed != ncclSuccess) {
            COLLECTIVE_LOG(kWarn,
                           "ncclCommDestroy failed: " << nccl_error_text(destroyed, nullptr));
          }
          comm_ = nullptr;
        } else {
          COLLECTIVE_LOG(kWarn, "ncclCommFinalize did not finish (" << nccl_error_text(state, comm_)
                                                                    << "); aborting instead");
        }
      }
      abort();
    }
    if (stream_ != nullptr) {
      const cudaError_t error = cudaStreamDestroy(stream_);
      if (error != cudaSuccess) {
        (void)cudaGetLastError();
        COLLECTIVE_LOG(kDebug, "cudaStreamDestroy: " << gpu::cuda_error_text(error));
      }
    }
  } catch (const std::exception& error) {
    COLLECTIVE_LOG(kWarn, "releasing the NCCL communicator: " << error.what());
  } catch (...) {
  }
}

void NcclCommunicator::abort() noexcept {
  if (comm_ == nullptr) return;
  const ncclResult_t result = ncclCommAbort(comm_);
  if (result != ncclSuccess) {
    COLLECTIVE_LOG(kWarn, "ncclCommAbort failed: " << nccl_error_text(result, nullptr));
  }
  comm_ = nullptr;
}

void NcclCommunicator::fail(const Request& request, const std::string& cause) {
  broken_ = true;
  abort();
  throw CommunicationError(request.label(), error_rank_,
                           cause + " (NCCL communicator of " + scope_ + ", CUDA device " +
                               std::to_string(device_) + "; aborted)");
}

void NcclCommunicator::fail_timeout(const Request& request, const char* what) {
  broken_ = true;
  abort();
  throw TimeoutError(request.label(), error_rank_,
                     "waited " + std::to_string(request.timeout.count()) + " ms for " + what +
                         " on the NCCL communicator of " + scope_ + " (CUDA device " +
                         std::to_string(device_) + "); aborted it with ncclCommAbort");
}

void NcclCommunicator::wait_until_accepted(const Request& request, const char* what) {
  for (;;) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t queried = ncclCommGetAsyncError(comm_, &state);
    if (queried != ncclSuccess) {
      fail(request,
           std::string("ncclCommGetAsyncError failed: ") + nccl_error_text(queried, comm_));
    }
    if (state == ncclSuccess) return;
    if (state != ncclInProgress)
      fail(request, std::string(what) + " failed: " + nccl_error_text(state, comm_));
    if (Clock::now() >= request.deadline) fail_timeout(request, what);
    sched_yield();
  }
}

void NcclCommunicator::accept(ncclResult_t result, const char* call, const Request& request) {
  if (result == ncclSuccess) return;
  if (result != ncclInProgress) {
    fail(request, std::string(call) + " failed: " + nccl_error_text(result, comm_));
  }
  wait_until_accepted(request, call);
}

void NcclCommunicator::check(cudaError_t error, const char* call, const Request& request) {
  if (error == cudaSuccess) return;
  (void)cudaGetLastError();
  fail(request, std::string(call) + " failed: " + gpu::cuda_error_text(error));
}

void NcclCommunicator::synchronize(const Request& request, const char* what) {
  for (;;) {
    const cudaError_t error = cudaStreamQuery(stream_);
    if (error == cudaSuccess) return;
    if (error != cudaErrorNotReady) check(error, "cudaStreamQuery", request);
    ncclResult_t state = ncclSuccess;
    const ncclResult_t queried = ncclCommGetAsyncError(comm_, &state);
    if (queried != ncclSuccess) {
      fail(request,
           std::string("ncclCommGetAsyncError failed: ") + nccl_error_text(queried, comm_));
    }
    if (state != ncclSuccess && state != ncclInProgress) {
      fail(request, std::string(what) + " failed: " + nccl_error_text(state, comm_));
    }
    if (Clock::now() >= request.deadline) fail_timeout(request, what);
    sched_yield();
  }
}

}  // namespace collective::internal
