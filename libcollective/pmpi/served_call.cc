#include "served_call.h"

#include <atomic>
#include <cstdio>
#include <string>

#include "collective/in_tree/parameters.h"

namespace collective::pmpi {
namespace {

std::atomic<bool> finalized{false};

}  // namespace

bool mpi_thread_multiple() {
  // Asked once: the level is fixed at MPI_Init.
  static const bool multiple = [] {
    int level = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&level);
    return level >= MPI_THREAD_MULTIPLE;
  }();
  return multiple;
}

bool mpi_finalized() { return finalized.load(std::memory_order_relaxed); }
void mark_mpi_finalized() { finalized.store(true, std::memory_order_relaxed); }

// Every thread level is served: MPI lets a program's threads call
// collectives on one communicator only one at a time, which is the rule of
// the Communicator mapped to it, and libcollective follows the level for
// separate communicators (docs/errors.md, "Threads on separate
// communicators").
Target Target::asked_of_mpi(MPI_Comm comm) {
  Target target;
  int initialized = 0;
  PMPI_Initialized(&initialized);
  if (!initialized || mpi_finalized()) {
    target.pass_reason = "MPI is not initialized, or finalized";
  } else if (comm == MPI_COMM_NULL) {
    target.pass_reason = "MPI_COMM_NULL";
  } else {
    int inter = 0;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) {
      target.pass_reason = "invalid communicator";
    } else if (inter) {
      target.pass_reason = "intercommunicator";
    } else {
      PMPI_Comm_rank(comm, &target.rank);
      PMPI_Comm_size(comm, &target.size);
    }
  }
  return target;
}

int rank_for_log(MPI_Comm comm) {
  int rank = -1;
  if (log_level() > 0 && comm != MPI_COMM_NULL) PMPI_Comm_rank(comm, &rank);
  return rank;
}

// COLLECTIVE_PMPI_TIMEOUT seconds (default one day): MPI programs expect a
// collective to wait as long as its peers take (a barrier while rank 0
// writes a checkpoint), yet nothing here may wait forever.
std::atomic<const TimeoutSetting*> timeout_setting_read{nullptr};

const TimeoutSetting& read_timeout_setting() {
  static const TimeoutSetting setting = [] {
    TimeoutSetting read;
    try {
      if (const auto seconds = seconds_parameter("COLLECTIVE_PMPI_TIMEOUT", 1e9)) {
        read.timeout = std::chrono::milliseconds(static_cast<long long>(*seconds * 1000));
      }
    } catch (const InvalidArgumentError& error) {
      read.error = error.cause();
    }
    return read;
  }();
  timeout_setting_read.store(&setting, std::memory_order_release);
  return setting;
}

void throw_timeout_error(int rank) {
  throw InvalidArgumentError("libcollective_mpi", rank, timeout_setting().error);
}

int error_class_of(const Error& error) {
  if (dynamic_cast<const InvalidArgumentError*>(&error) != nullptr) return MPI_ERR_ARG;
  if (dynamic_cast<const UnsupportedError*>(&error) != nullptr) {
    return MPI_ERR_UNSUPPORTED_OPERATION;
  }
  return MPI_ERR_OTHER;  // CommunicationError, TimeoutError
}

int raise_through_errhandler(Intercepted call, MPI_Comm comm, int error_class, const char* message,
                             Form form) {
  log_failed(call, rank_for_log(comm), form);
  std::fprintf(stderr, "libcollective_mpi: %s: %s\n", mpi_name(call, form), message);
  PMPI_Comm_call_errhandler(comm, error_class);
  return error_class;
}

void log_served_call(Intercepted call, const Communicator& communicator) {
  log_served(call, communicator.rank(), to_string(communicator.last_algorithm()).data());
}

}  // namespace collective::pmpi
