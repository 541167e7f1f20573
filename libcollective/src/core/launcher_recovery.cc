#include "core/launcher_recovery.h"

#include <cstdlib>
#include <cstring>

namespace collective::internal {

std::string launcher_recovery_note(const EnvLookup& lookup) {
  if (lookup("OMPI_COMM_WORLD_SIZE") == nullptr) return {};
  const char* recovery = lookup("OMPI_MCA_orte_enable_recovery");
  if (recovery != nullptr && std::strcmp(recovery, "1") == 0) return {};
  return "; mpirun was started without --enable-recovery, so Open MPI ends the whole job now: "
         "start it with `mpirun --enable-recovery` for the survivors to go on "
         "(Communicator::shrink)";
}

const std::string& launcher_recovery_note() {
  static const std::string note =
      launcher_recovery_note([](const char* name) { return std::getenv(name); });
  return note;
}

}  // namespace collective::internal
