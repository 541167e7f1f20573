/* An unmodified program's MPI_Iallreduce loop with compute in between (the
 * shape of PETSc's KSPPIPECG), measured as OSU's overlap: start + wait alone
 * (call), a compute calibrated to that time (compute), start + compute +
 * wait (both); overlap = 1 - (both - compute) / call. Run under the drop-in
 * (LD_PRELOAD=libcollective_mpi.so) it times the drop-in's MPI_Iallreduce
 * beside Open MPI's own (PMPI_Iallreduce, which the drop-in does not
 * intercept), alternating in the same run, 3 trials each.
 *   dropin_iallreduce_overlap SIZE_BYTES REPS
 * Results: docs/performance_history.md, "The MPI drop-in's nonblocking
 * calls". A benchmark: it asserts no time. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int g_rank, g_size;

/* The compute the call should hide: `units` of arithmetic, no MPI. */
static volatile double g_sink;
static void compute(long units) {
  double x = 1.0;
  for (long i = 0; i < units; ++i) x = x * 1.0000001 + 1e-9;
  g_sink = x;
}

typedef int (*Iallreduce_fn)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Request*);

static double timed(Iallreduce_fn start, double* send, double* recv, int count, long units,
                    int with_call, int reps) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int k = 0; k < reps; ++k) {
    MPI_Request request;
    if (with_call) start(send, recv, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &request);
    compute(units);
    if (with_call) MPI_Wait(&request, MPI_STATUS_IGNORE);
  }
  double elapsed = (MPI_Wtime() - t0) / reps, slowest = 0;
  PMPI_Allreduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

static void overlap(long bytes, int reps) {
  const int count = (int)(bytes / 8);
  double* send = malloc(sizeof(double) * (size_t)(count + 1));
  double* recv = malloc(sizeof(double) * (size_t)(count + 1));
  for (int i = 0; i < count; ++i) send[i] = g_rank + i;
  const char* names[2] = {"drop-in MPI_Iallreduce", "Open MPI PMPI_Iallreduce"};
  Iallreduce_fn fns[2] = {MPI_Iallreduce, PMPI_Iallreduce};
  /* Calibrate: units of compute per second, on rank 0's clock, shared. */
  double t0 = MPI_Wtime();
  compute(20000000);
  double per_second = 20000000 / (MPI_Wtime() - t0);
  MPI_Bcast(&per_second, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  double call[2] = {0, 0}, comp[2] = {0, 0}, both[2] = {0, 0};
  for (int trial = 0; trial < 3; ++trial) {
    for (int which = 0; which < 2; ++which) { /* alternating, same run */
      const double t_call = timed(fns[which], send, recv, count, 0, 1, reps);
      const long units = (long)(t_call * per_second);
      const double t_comp = timed(fns[which], send, recv, count, units, 0, reps);
      const double t_both = timed(fns[which], send, recv, count, units, 1, reps);
      call[which] += t_call;
      comp[which] += t_comp;
      both[which] += t_both;
    }
  }
  for (int which = 0; which < 2; ++which) {
    const double c = call[which] / 3, p = comp[which] / 3, b = both[which] / 3;
    double hidden = 100.0 * (1.0 - (b - p) / c);
    if (hidden < 0) hidden = 0;
    if (g_rank == 0) {
      printf(
          "overlap %ld B %d ranks %s: call %.1f us, compute %.1f us, start+compute+wait "
          "%.1f us, overlap %.0f%%\n",
          bytes, g_size, names[which], c * 1e6, p * 1e6, b * 1e6, hidden);
    }
  }
  free(send);
  free(recv);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: dropin_iallreduce_overlap SIZE_BYTES REPS\n");
    return 2;
  }
  const long bytes = atol(argv[1]);
  const int reps = atoi(argv[2]);
  if (bytes < 8 || reps < 1) {
    fprintf(stderr, "dropin_iallreduce_overlap: SIZE_BYTES must be >= 8 and REPS >= 1\n");
    return 2;
  }
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  overlap(bytes, reps);
  MPI_Finalize();
  return 0;
}
