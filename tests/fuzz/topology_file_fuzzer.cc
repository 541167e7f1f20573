// Fuzzes the topology file reader (topology/topology_file.h): the input is
// a whole COLLECTIVE_TOPOLOGY_FILE (a JSON dump, hwloc XML or an hwloc
// synthetic description). It is either read into at least one node, or
// refused with InvalidArgumentError naming the file; anything else is a
// finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "collective/errors.h"
#include "topology/topology_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto file = collective::internal::read_topology_text(text, "fuzz.topology");
    if (file.nodes.empty()) {
      std::fprintf(stderr, "topology_file_fuzzer: accepted a file without nodes\n");
      std::abort();
    }
  } catch (const collective::InvalidArgumentError& error) {
    if (std::strstr(error.what(), "fuzz.topology") == nullptr) {
      std::fprintf(stderr, "topology_file_fuzzer: refusal does not name the file: %s\n",
                   error.what());
      std::abort();
    }
  }
  return 0;
}
