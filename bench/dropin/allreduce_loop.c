/* An ordinary MPI program timing MPI_Allreduce (MPI_FLOAT, MPI_SUM, out of
 * place) from 8 B to 256 MiB: what scripts/bench_dropin.sh runs with and
 * without libcollective_mpi.so. Knows nothing of libcollective.
 *
 *   allreduce_loop [MAX_BYTES]
 * Prints "bytes microseconds" per size: the slowest rank's mean time per
 * call over a size-dependent number of calls after warm-up calls, and checks
 * the result of the last call exactly (integers in float). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const size_t max_bytes = argc > 1 ? strtoull(argv[1], NULL, 10) : (size_t)256 << 20;
  float* send = malloc(max_bytes);
  float* recv = malloc(max_bytes);
  for (size_t i = 0; i < max_bytes / sizeof(float); ++i) send[i] = (float)((i + rank) % 64);
  int failed = 0;
  for (size_t bytes = 8; bytes <= max_bytes;
       bytes = bytes * 4 > max_bytes && bytes < max_bytes ? max_bytes : bytes * 4) {
    const int count = (int)(bytes / sizeof(float));
    int iterations = (int)(((size_t)64 << 20) / bytes);
    iterations = iterations < 3 ? 3 : iterations > 2000 ? 2000 : iterations;
    const int warmup = iterations > 10 ? 10 : 1;
    for (int i = 0; i < warmup; ++i)
      MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int i = 0; i < iterations; ++i)
      MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    const double mean = (MPI_Wtime() - start) / iterations;
    double slowest_mean = 0;
    MPI_Reduce(&mean, &slowest_mean, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    for (int i = 0; i < count; ++i) {
      float want = 0;
      for (int r = 0; r < size; ++r) want += (float)((i + r) % 64);
      if (recv[i] != want) {
        fprintf(stderr, "rank %d: %zu bytes, index %d: expected %g, actual %g\n", rank, bytes, i,
                want, recv[i]);
        failed = 1;
        break;
      }
    }
    if (rank == 0) printf("%zu %.3f\n", bytes, slowest_mean * 1e6);
    if (bytes == max_bytes) break;
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return failed;
}
