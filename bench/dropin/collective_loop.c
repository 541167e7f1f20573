/* An ordinary MPI program timing one MPI collective in a loop, from 8 B to
 * 256 MiB: what scripts/bench_dropin.sh runs with and without
 * libcollective_mpi.so. Knows nothing of libcollective.
 *
 *   collective_loop [MAX_BYTES] [allreduce|allreduce_band|alltoall|allgatherv]
 *
 * allreduce   MPI_Allreduce, MPI_FLOAT, MPI_SUM, out of place; a size is
 *             the buffer.
 * allreduce_band  MPI_Allreduce, MPI_INT, MPI_BAND (each rank clears one
 *             bit of every element), out of place.
 * alltoall    MPI_Alltoall, MPI_FLOAT; a size is what each rank sends (one
 *             block per rank), as in nccl-tests.
 * allgatherv  MPI_Allgatherv, MPI_FLOAT, every rank the same count; a size
 *             is the whole receive buffer.
 * Prints "bytes microseconds" per size: the slowest rank's mean time per
 * call over a size-dependent number of calls after warm-up calls, and checks
 * every element of the last call's result exactly (small integers in float).
 * Sizes whose blocks would hold no element are skipped. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum Collective { ALLREDUCE, ALLREDUCE_BAND, ALLTOALL, ALLGATHERV };

static int g_rank, g_size;
static int* g_counts;  // allgatherv: every rank's count
static int* g_displs;

/* The value rank r puts at element i of what it sends. */
static float input(int r, size_t i) { return (float)((i + (size_t)r * 7) % 64); }

/* The same for allreduce_band, in the int the buffers then hold. */
static int bits_input(int r, size_t i) { return ~(1 << ((i + (size_t)r) % 31)); }

/* Elements per block of a call of `bytes` (allreduce: the whole buffer). */
static int count_of(enum Collective c, size_t bytes) {
  const size_t elements = bytes / sizeof(float);
  return (int)(c == ALLREDUCE || c == ALLREDUCE_BAND ? elements : elements / (size_t)g_size);
}

static void call(enum Collective c, const float* send, float* recv, int count) {
  switch (c) {
    case ALLREDUCE: MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case ALLREDUCE_BAND: MPI_Allreduce(send, recv, count, MPI_INT, MPI_BAND, MPI_COMM_WORLD); break;
    case ALLTOALL:
      MPI_Alltoall(send, count, MPI_FLOAT, recv, count, MPI_FLOAT, MPI_COMM_WORLD);
      break;
    case ALLGATHERV:
      MPI_Allgatherv(send, count, MPI_FLOAT, recv, g_counts, g_displs, MPI_FLOAT, MPI_COMM_WORLD);
      break;
  }
}

/* The expected element i of this rank's result; send blocks of alltoall are
 * laid out as the peer's index times count plus the offset. */
static float expected(enum Collective c, size_t i, int count) {
  if (c == ALLREDUCE) {
    float want = 0;
    for (int r = 0; r < g_size; ++r) want += input(r, i);
    return want;
  }
  const int from = (int)(i / (size_t)count);
  const size_t offset = i % (size_t)count;
  if (c == ALLTOALL) return input(from, (size_t)g_rank * (size_t)count + offset);
  return input(from, offset);  // allgatherv: rank `from`'s whole send buffer
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  const size_t max_bytes = argc > 1 ? strtoull(argv[1], NULL, 10) : (size_t)256 << 20;
  enum Collective c = ALLREDUCE;
  if (argc > 2 && !strcmp(argv[2], "alltoall")) c = ALLTOALL;
  else if (argc > 2 && !strcmp(argv[2], "allreduce_band")) c = ALLREDUCE_BAND;
  else if (argc > 2 && !strcmp(argv[2], "allgatherv")) c = ALLGATHERV;
  else if (argc > 2 && strcmp(argv[2], "allreduce")) {
    if (g_rank == 0) fprintf(stderr, "collective_loop: unknown collective %s\n", argv[2]);
    MPI_Finalize();
    return 2;
  }
  float* send = malloc(max_bytes + sizeof(float));
  float* recv = malloc(max_bytes + sizeof(float));
  g_counts = malloc(sizeof(int) * (size_t)g_size);
  g_displs = malloc(sizeof(int) * (size_t)g_size);
  for (size_t i = 0; i < max_bytes / sizeof(float); ++i) {
    if (c == ALLREDUCE_BAND) {
      ((int*)send)[i] = bits_input(g_rank, i);
    } else {
      send[i] = input(g_rank, i);
    }
  }
  int failed = 0;
  for (size_t bytes = 8; bytes <= max_bytes;
       bytes = bytes * 4 > max_bytes && bytes < max_bytes ? max_bytes : bytes * 4) {
    const int count = count_of(c, bytes);
    if (count == 0) {
      if (bytes == max_bytes) break;
      continue;
    }
    for (int r = 0; r < g_size; ++r) {
      g_counts[r] = count;
      g_displs[r] = r * count;
    }
    const size_t results =
        c == ALLREDUCE || c == ALLREDUCE_BAND ? (size_t)count : (size_t)count * (size_t)g_size;
    int iterations = (int)(((size_t)64 << 20) / bytes);
    iterations = iterations < 3 ? 3 : iterations > 2000 ? 2000 : iterations;
    const int warmup = iterations > 10 ? 10 : 1;
    for (int i = 0; i < warmup; ++i) call(c, send, recv, count);
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int i = 0; i < iterations; ++i) call(c, send, recv, count);
    const double mean = (MPI_Wtime() - start) / iterations;
    double slowest_mean = 0;
    MPI_Reduce(&mean, &slowest_mean, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    for (size_t i = 0; c == ALLREDUCE_BAND && i < results; ++i) {
      int want = -1;
      for (int r = 0; r < g_size; ++r) want &= bits_input(r, i);
      if (((const int*)recv)[i] != want) {
        fprintf(stderr, "rank %d: allreduce_band of %zu bytes, index %zu: expected %d, actual %d\n",
                g_rank, bytes, i, want, ((const int*)recv)[i]);
        failed = 1;
        break;
      }
    }
    for (size_t i = 0; c != ALLREDUCE_BAND && i < results; ++i) {
      const float want = expected(c, i, count);
      if (recv[i] != want) {
        fprintf(stderr, "rank %d: %s of %zu bytes, index %zu: expected %g, actual %g\n", g_rank,
                argc > 2 ? argv[2] : "allreduce", bytes, i, want, recv[i]);
        failed = 1;
        break;
      }
    }
    if (g_rank == 0) printf("%zu %.3f\n", bytes, slowest_mean * 1e6);
    if (bytes == max_bytes) break;
  }
  free(send);
  free(recv);
  free(g_counts);
  free(g_displs);
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any_failed;
}
