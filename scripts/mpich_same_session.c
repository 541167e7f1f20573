/* Keeps MPICH's processes in the caller's session, for CI's MPICH runs
 * (scripts/test_mpich.sh preloads it into mpiexec, which hands the preload
 * on to its proxies; COLLECTIVE_MPICH_SAME_SESSION=0 runs without it).
 *
 * Hydra calls setsid() in every process it starts (its proxies, and each
 * rank: src/pm/hydra/utils/launch/launch.c, the result unused). Under the
 * kernel's autogroup (/proc/sys/kernel/sched_autogroup_enabled) a new
 * session is a new scheduling group, so every MPICH rank competed as a
 * group of its own with the whole of CI's session, which real hosts never
 * see, and yielding threads across such groups starved others: in one
 * fresh-clone CI run an MPICH drop-in test and an ASan test beside it both
 * went unscheduled for about 60 s and timed out. scripts/netns_cluster.sh
 * keeps Open MPI's simulated hosts in the caller's session for the same
 * reason (--leave-session-attached).
 *
 * This setsid() makes a new process group only: each process still leads
 * its own group, so Hydra's killpg() of a rank's group reaches the same
 * processes as before, but the session, and with it the scheduling group,
 * stays the caller's. */
#define _GNU_SOURCE
#include <sys/types.h>
#include <unistd.h>

pid_t setsid(void) {
  if (setpgid(0, 0) != 0) return (pid_t)-1;
  return getpid();
}
