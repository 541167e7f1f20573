// Who owns a shared-memory object of the library, and reclaiming the ones
// whose owner is gone.
//
// Every object the library puts in /dev/shm (node segments while they are
// set up, Communicator::allocate buffers while they are made) is named
// /collective-<kind>-<pid>-<start>-<n>: the creating process's pid and its
// start time (clock ticks after boot, /proc/<pid>/stat), which together
// name one process for the life of the machine, since a pid is reused only
// by a later process. A process killed with SIGKILL cannot unlink its
// objects; the next node segment made on the node removes every such
// object whose owner is no longer running (docs/errors.md). This assumes
// that the ranks of a node share a pid namespace, as mpirun's do.
#pragma once

#include <cstdint>
#include <string>

namespace collective::internal {

// "<pid>-<start>" of this process.
const std::string& owner_tag();
// "<pid>-<start>" of a running process, or "" when it is not running.
std::string owner_tag_of(std::int64_t pid);

// Unlinks every /dev/shm/collective-{seg,mem}-* object of this user whose
// owner is not running (by pid and start time; names without a start
// time, from older versions, by pid alone). Returns how many; logs each.
int reclaim_stale_shared_objects();

}  // namespace collective::internal
