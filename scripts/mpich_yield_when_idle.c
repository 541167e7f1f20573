/* MPICH's missing yield_when_idle, for CI's MPICH runs (scripts/test_mpich.sh
 * preloads it; COLLECTIVE_MPICH_YIELD=0 runs without it).
 *
 * MPICH 4.0's ch4 progress loop polls UCX without ever yielding, so with more
 * ranks than cores every message waits for the scheduler to end the spinning
 * rank's time slice: collective_mpi_tests took 28.7 s at 3 ranks on 2 cores
 * against 2.4 s with this shim, and 1.2 s at 2 ranks. Open MPI yields by
 * itself when oversubscribed (mpi_yield_when_idle). This wraps the one UCX call
 * MPICH's loop makes and yields when it moved nothing: the library and MPICH
 * run unchanged, only the idle turns of the loop give the core away. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct ucp_worker* ucp_worker_h;
typedef unsigned (*progress_function)(ucp_worker_h);

unsigned ucp_worker_progress(ucp_worker_h worker) {
  static progress_function real_progress;
  if (real_progress == NULL) {
    real_progress = (progress_function)dlsym(RTLD_NEXT, "ucp_worker_progress");
    if (real_progress == NULL) {
      fprintf(stderr, "mpich_yield_when_idle: no ucp_worker_progress after this library\n");
      abort();
    }
  }
  const unsigned events = real_progress(worker);
  if (events == 0) sched_yield();
  return events;
}
