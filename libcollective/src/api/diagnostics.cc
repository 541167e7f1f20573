#include "collective/diagnostics.h"

#include "core/flight_recorder.h"
#include "core/mpi_lifetime.h"

namespace collective {

std::string dump_flight_record(const std::string& directory) {
  internal::require_mpi_running("dump_flight_record", -1);
  return internal::dump_flight_records(directory, "dump_flight_record (on demand)");
}

}  // namespace collective
