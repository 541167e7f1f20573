// The drop-in's MPI_Init and MPI_Init_thread: MPI is asked for
// MPI_THREAD_MULTIPLE whatever the program asked for, so that the MPI_I*
// calls can be served (the library's progress thread calls MPI while the
// program does), and the program is told the level MPI gave, which MPI
// allows to exceed the one required. COLLECTIVE_PMPI_THREAD_MULTIPLE=0
// keeps the program's own request; the MPI_I* calls are then passed to
// PMPI_, each with its log line (docs/embedding.md, "Nonblocking
// collectives").
#include <mpi.h>

#include <string>

#include "collective/errors.h"
#include "collective/in_tree/log.h"
#include "collective/in_tree/parameters.h"
#include "served_call.h"

namespace {

int level_to_ask(int required) {
  bool raise = true;
  try {
    raise = collective::integer_parameter("COLLECTIVE_PMPI_THREAD_MULTIPLE", 0, 1).value_or(1) != 0;
  } catch (const collective::InvalidArgumentError& error) {
    // An MPI program's start never throws: one WARN line, the default.
    collective::log_line(collective::LogLevel::kWarn, "collective.mpi",
                         std::string(error.cause()) + "; MPI_THREAD_MULTIPLE asked");
  }
  return raise && required < MPI_THREAD_MULTIPLE ? MPI_THREAD_MULTIPLE : required;
}

}  // namespace

extern "C" {

COLLECTIVE_PMPI_ENTRY int MPI_Init(int* argc, char*** argv) {
  int provided = MPI_THREAD_SINGLE;
  return PMPI_Init_thread(argc, argv, level_to_ask(MPI_THREAD_SINGLE), &provided);
}

COLLECTIVE_PMPI_ENTRY int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  return PMPI_Init_thread(argc, argv, level_to_ask(required), provided);
}

}  // extern "C"
