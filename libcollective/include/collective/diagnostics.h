// Diagnosis of hangs and slow calls: the flight recorder's dump on demand
// (docs/errors.md#flight-recorder) and slices of the user's own in the
// per-rank trace (COLLECTIVE_TRACE, docs/performance.md#trace).
#pragma once

#include <string>

namespace collective {

// Writes the flight record of this process (the last calls of every live
// communicator, COLLECTIVE_FLIGHT_RECORDER of them each) to
// `<directory>/collective_flight_record.<world rank>.json`, the format of
// docs/errors.md#the-dump-format, and returns the path. An empty
// directory means COLLECTIVE_FLIGHT_RECORDER_DIR, else the working
// directory. Local (no other rank takes part) and safe while another
// thread runs a collective. Throws CommunicationError when the file cannot
// be written, InvalidArgumentError when MPI is not initialized.
std::string dump_flight_record(const std::string& directory = "");

}  // namespace collective
