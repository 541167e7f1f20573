// The note a PeerFailedError carries about the launcher: only under Open
// MPI's mpirun started without --enable-recovery (which then ends the
// whole job), never elsewhere.
#include "core/launcher_recovery.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace collective::internal {
namespace {

std::string note_for(const std::map<std::string, std::string>& environment) {
  return launcher_recovery_note([&](const char* name) -> const char* {
    const auto found = environment.find(name);
    return found == environment.end() ? nullptr : found->second.c_str();
  });
}

TEST(LauncherRecoveryTest, OpenMpiWithoutRecoveryIsNamed) {
  const std::string note = note_for({{"OMPI_COMM_WORLD_SIZE", "3"}});
  EXPECT_NE(note.find("without --enable-recovery"), std::string::npos) << note;
  EXPECT_NE(note.find("Communicator::shrink"), std::string::npos) << note;
  EXPECT_NE(note_for({{"OMPI_COMM_WORLD_SIZE", "3"}, {"OMPI_MCA_orte_enable_recovery", "0"}}), "");
}

TEST(LauncherRecoveryTest, RecoveryOrAnotherLauncherSaysNothing) {
  EXPECT_EQ(note_for({{"OMPI_COMM_WORLD_SIZE", "3"}, {"OMPI_MCA_orte_enable_recovery", "1"}}), "");
  EXPECT_EQ(note_for({}), "");
  EXPECT_EQ(note_for({{"PMI_SIZE", "3"}}), "");
}

}  // namespace
}  // namespace collective::internal
