/* An ordinary MPI program that watches what the drop-in asks MPI on the path
 * every served call takes. It defines the MPI query functions the drop-in
 * could call per call (PMPI_Initialized, PMPI_Comm_test_inter,
 * PMPI_Comm_get_attr, PMPI_Comm_rank, PMPI_Comm_size, PMPI_Type_size,
 * PMPI_Type_get_extent, PMPI_Type_get_true_extent), counting each call and
 * forwarding it to MPI's own (dlsym RTLD_NEXT); being the executable's,
 * these definitions come first for every library of the process
 * (the program is linked with -rdynamic). Run with and without
 * libcollective_mpi.so (run_dropin_test.py); it must behave alike. Modes:
 *
 *   --queries         after one call of each served function on a
 *                     communicator, 200 more on it (MPI_COMM_WORLD, then a
 *                     dup) ask MPI nothing: the counts above stay at 0, and
 *                     every result is exact. Without the drop-in MPI's own
 *                     collectives do not call these names either.
 *   --reused-handles  communicators freed and made again 60 times, over
 *                     groups and orders that differ from one to the next
 *                     (the world, its reverse, the even/odd halves, the
 *                     world without rank 0), so that a new communicator
 *                     often gets its predecessor's handle: each call's
 *                     result (a sum and a gather of world ranks) must be
 *                     the new communicator's, never the old one's. The run
 *                     fails if MPI never reused a handle (nothing tested).
 *
 * At the end every rank prints its call counts, as dropin_program does. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_rank, g_size;
static long g_failures;
static long g_calls[6]; /* Allreduce, Reduce_scatter_block, Allgather, Bcast, Reduce, Barrier */
static const char* const kNames[6] = {"MPI_Allreduce", "MPI_Reduce_scatter_block",
                                      "MPI_Allgather", "MPI_Bcast",
                                      "MPI_Reduce",    "MPI_Barrier"};
enum { ALLREDUCE, REDUCE_SCATTER_BLOCK, ALLGATHER, BCAST, REDUCE, BARRIER };

#define FAIL(...)                                                              \
  do {                                                                         \
    char detail_[600];                                                         \
    snprintf(detail_, sizeof detail_, __VA_ARGS__);                            \
    fprintf(stderr, "rank %d: FAIL line %d: %s\n", g_rank, __LINE__, detail_); \
    ++g_failures;                                                              \
  } while (0)

#define MPI_OK(call, counter)                                   \
  do {                                                          \
    ++g_calls[counter];                                         \
    int rc_ = (call);                                           \
    if (rc_ != MPI_SUCCESS) FAIL("%s returned %d", #call, rc_); \
  } while (0)

/* --- the watched query functions ---------------------------------------- */

enum {
  Q_INITIALIZED,
  Q_TEST_INTER,
  Q_GET_ATTR,
  Q_COMM_RANK,
  Q_COMM_SIZE,
  Q_TYPE_SIZE,
  Q_EXTENT,
  Q_TRUE_EXTENT,
  NUM_QUERIES
};
static const char* const kQueryNames[NUM_QUERIES] = {
    "PMPI_Initialized",     "PMPI_Comm_test_inter",     "PMPI_Comm_get_attr",
    "PMPI_Comm_rank",       "PMPI_Comm_size",           "PMPI_Type_size",
    "PMPI_Type_get_extent", "PMPI_Type_get_true_extent"};
static _Atomic long g_queries[NUM_QUERIES];

static void* next_definition(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  if (f == NULL) {
    fprintf(stderr, "dropin_fast_path_program: dlsym(%s) failed\n", name);
    abort();
  }
  return f;
}

#define FORWARD(query, name, params, args)                     \
  int name params {                                            \
    static int(*real) params;                                  \
    if (real == NULL) *(void**)&real = next_definition(#name); \
    ++g_queries[query];                                        \
    return real args;                                          \
  }

FORWARD(Q_INITIALIZED, PMPI_Initialized, (int* flag), (flag))
FORWARD(Q_TEST_INTER, PMPI_Comm_test_inter, (MPI_Comm comm, int* flag), (comm, flag))
FORWARD(Q_GET_ATTR, PMPI_Comm_get_attr, (MPI_Comm comm, int key, void* value, int* flag),
        (comm, key, value, flag))
FORWARD(Q_COMM_RANK, PMPI_Comm_rank, (MPI_Comm comm, int* rank), (comm, rank))
FORWARD(Q_COMM_SIZE, PMPI_Comm_size, (MPI_Comm comm, int* size), (comm, size))
FORWARD(Q_TYPE_SIZE, PMPI_Type_size, (MPI_Datatype type, int* size), (type, size))
FORWARD(Q_EXTENT, PMPI_Type_get_extent, (MPI_Datatype type, MPI_Aint* lb, MPI_Aint* extent),
        (type, lb, extent))
FORWARD(Q_TRUE_EXTENT, PMPI_Type_get_true_extent,
        (MPI_Datatype type, MPI_Aint* lb, MPI_Aint* extent), (type, lb, extent))

/* --- --queries ------------------------------------------------------------ */

/* One call of each function the drop-in serves, results checked exactly;
 * `tag` varies the inputs from call to call. */
static void served_calls(MPI_Comm comm, int rank, int size, int tag) {
  double in[2] = {rank + tag, 2.0 * rank}, out[2] = {0, 0};
  MPI_OK(MPI_Allreduce(in, out, 2, MPI_DOUBLE, MPI_SUM, comm), ALLREDUCE);
  const double sum_ranks = size * (size - 1) / 2.0;
  if (out[0] != sum_ranks + (double)size * tag || out[1] != 2 * sum_ranks)
    FAIL("MPI_Allreduce #%d: expected [%g, %g], actual [%g, %g]", tag,
         sum_ranks + (double)size * tag, 2 * sum_ranks, out[0], out[1]);

  int blocks[64], mine = -1;
  for (int r = 0; r < size; ++r) blocks[r] = r * 10 + rank + tag;
  MPI_OK(MPI_Reduce_scatter_block(blocks, &mine, 1, MPI_INT, MPI_SUM, comm), REDUCE_SCATTER_BLOCK);
  const int want_block = size * (rank * 10 + tag) + (int)sum_ranks;
  if (mine != want_block)
    FAIL("MPI_Reduce_scatter_block #%d: expected %d, actual %d", tag, want_block, mine);

  int gathered[64];
  const int value = rank * 3 + tag;
  MPI_OK(MPI_Allgather(&value, 1, MPI_INT, gathered, 1, MPI_INT, comm), ALLGATHER);
  for (int r = 0; r < size; ++r)
    if (gathered[r] != r * 3 + tag)
      FAIL("MPI_Allgather #%d: index %d: expected %d, actual %d", tag, r, r * 3 + tag, gathered[r]);

  const int root = tag % size;
  long broadcast = rank == root ? 1000 + tag : -1;
  MPI_OK(MPI_Bcast(&broadcast, 1, MPI_LONG, root, comm), BCAST);
  if (broadcast != 1000 + tag)
    FAIL("MPI_Bcast #%d from %d: expected %d, actual %ld", tag, root, 1000 + tag, broadcast);

  long long contribution = rank + 1, reduced = -1;
  MPI_OK(MPI_Reduce(&contribution, &reduced, 1, MPI_LONG_LONG, MPI_MAX, root, comm), REDUCE);
  if (rank == root && reduced != size)
    FAIL("MPI_Reduce #%d at root %d: expected %d, actual %lld", tag, root, size, reduced);

  MPI_OK(MPI_Barrier(comm), BARRIER);
}

static void check_no_queries(MPI_Comm comm, const char* name) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  served_calls(comm, rank, size, 0); /* the first call on a communicator may ask MPI */
  long before[NUM_QUERIES];
  for (int q = 0; q < NUM_QUERIES; ++q) before[q] = g_queries[q];
  enum { kRounds = 200 };
  for (int tag = 1; tag <= kRounds; ++tag) served_calls(comm, rank, size, tag);
  for (int q = 0; q < NUM_QUERIES; ++q) {
    const long made = g_queries[q] - before[q];
    if (made != 0)
      FAIL("%s: %d rounds of the six served calls made %ld calls of %s (expected 0)", name, kRounds,
           made, kQueryNames[q]);
  }
}

static void run_queries(void) {
  check_no_queries(MPI_COMM_WORLD, "MPI_COMM_WORLD");
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  check_no_queries(dup, "a dup of MPI_COMM_WORLD");
  MPI_Comm_free(&dup);
}

/* --- --reused-handles ------------------------------------------------------ */

/* Round `round`'s communicator: its members and their order differ from
 * the previous round's. Ranks outside it get MPI_COMM_NULL. */
static MPI_Comm make_round_comm(int round) {
  MPI_Comm comm = MPI_COMM_NULL;
  switch (round % 4) {
    case 0: MPI_Comm_split(MPI_COMM_WORLD, 0, g_rank, &comm); break;          /* the world */
    case 1: MPI_Comm_split(MPI_COMM_WORLD, 0, g_size - g_rank, &comm); break; /* reversed */
    case 2: MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_rank, &comm); break; /* halves */
    default: /* the world without rank 0 (with one rank: the world) */
      MPI_Comm_split(MPI_COMM_WORLD, g_size > 1 && g_rank == 0 ? MPI_UNDEFINED : 0, g_rank, &comm);
  }
  return comm;
}

static void run_reused_handles(void) {
  enum { kRounds = 60 };
  long reused = 0;
  MPI_Comm previous = MPI_COMM_NULL;
  for (int round = 0; round < kRounds; ++round) {
    MPI_Comm comm = make_round_comm(round);
    if (comm != MPI_COMM_NULL) {
      if (comm == previous) ++reused;
      int size;
      MPI_Comm_size(comm, &size);
      /* The members in order, as world ranks: what both calls must show. */
      int members[64];
      MPI_Group world_group, group;
      MPI_Comm_group(MPI_COMM_WORLD, &world_group);
      MPI_Comm_group(comm, &group);
      int order[64];
      for (int r = 0; r < size; ++r) order[r] = r;
      MPI_Group_translate_ranks(group, size, order, world_group, members);
      MPI_Group_free(&group);
      MPI_Group_free(&world_group);

      long mine = g_rank + 1 + 100L * round, sum = -1, want = 0;
      for (int r = 0; r < size; ++r) want += members[r] + 1 + 100L * round;
      MPI_OK(MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, comm), ALLREDUCE);
      if (sum != want)
        FAIL("round %d: MPI_Allreduce over %d ranks: expected %ld, actual %ld", round, size, want,
             sum);
      int gathered[64];
      MPI_OK(MPI_Allgather(&g_rank, 1, MPI_INT, gathered, 1, MPI_INT, comm), ALLGATHER);
      for (int r = 0; r < size; ++r)
        if (gathered[r] != members[r])
          FAIL("round %d: MPI_Allgather: index %d: expected world rank %d, actual %d", round, r,
               members[r], gathered[r]);
      previous = comm; /* the handle itself: MPI_Comm_free sets comm to MPI_COMM_NULL */
      MPI_Comm_free(&comm);
    }
  }
  long total = 0;
  PMPI_Allreduce(&reused, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) printf("dropin_fast_path_program: handles reused %ld times\n", total);
  if (total == 0) FAIL("MPI never gave a new communicator a freed one's handle: nothing tested");
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  if (g_size > 64) MPI_Abort(MPI_COMM_WORLD, 2);
  const char* mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "--queries") == 0) {
    run_queries();
  } else if (strcmp(mode, "--reused-handles") == 0) {
    run_reused_handles();
  } else {
    if (g_rank == 0) fprintf(stderr, "usage: %s --queries|--reused-handles\n", argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  /* One write per line, so that ranks' lines do not interleave. */
  char line[400];
  int used = snprintf(line, sizeof line, "dropin_program rank %d calls:", g_rank);
  for (int i = 0; i < 6; ++i)
    used += snprintf(line + used, sizeof line - (size_t)used, " %s %ld;", kNames[i], g_calls[i]);
  printf("%s\n", line);
  fflush(stdout);
  long failures = 0;
  PMPI_Allreduce(&g_failures, &failures, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) {
    if (failures == 0) printf("dropin_fast_path_program: OK on %d ranks (%s)\n", g_size, mode);
    else
      printf("dropin_fast_path_program: %ld failures on %d ranks (%s)\n", failures, g_size, mode);
  }
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
