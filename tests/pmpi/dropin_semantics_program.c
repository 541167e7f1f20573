/* An ordinary MPI program, knowing nothing of libcollective, that checks
 * what an MPI program may rely on beyond the results themselves; run with
 * and without libcollective_mpi.so (run_dropin_test.py), it must behave
 * alike. One check per mode:
 *
 *   --in-place      the in-place and out-of-place forms of the served calls
 *                   touch only what MPI says they write: every element of
 *                   every block of MPI_Reduce_scatter_block's receive buffer
 *                   (the result in the first block, the others as the
 *                   caller left them), MPI_Reduce's buffers at the root and
 *                   elsewhere, MPI_Allgather's and MPI_Allreduce's; every
 *                   send buffer unchanged. 3, 1000 and 300000 elements per
 *                   block, int and double.
 *   --attributes    the program's attribute copy and delete callbacks run
 *                   exactly as often as its own MPI_Comm_dup and
 *                   MPI_Comm_free make them run.
 *   --signals       after served calls SIGUSR1 still has its default action
 *                   and the process has as many threads as before them
 *                   (--signals --expect-handler: a handler was installed).
 *   --communicators N [--keep-shm-under BYTES] [--window BYTES]
 *                   N communicators made and kept, one 8-byte MPI_Allreduce
 *                   and one MPI_Barrier each; every result exact; the
 *                   node segments this process maps (/proc/self/maps)
 *                   stay under BYTES in all; then, with all of them live,
 *                   the program's own MPI_Win_allocate_shared of BYTES per
 *                   rank must succeed and hold what each rank wrote.
 *   --stall         rank 0 comes to a served MPI_Barrier 3 s late (the
 *                   others log the library's stall warning).
 *
 * At the end every rank prints its call counts, as dropin_program does. */
#define _GNU_SOURCE
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_rank, g_size;
static long g_failures;
static long g_calls[6]; /* Allreduce, Reduce_scatter_block, Allgather, Bcast, Reduce, Barrier */
static const char* const kNames[6] = {"MPI_Allreduce", "MPI_Reduce_scatter_block",
                                      "MPI_Allgather", "MPI_Bcast",
                                      "MPI_Reduce",    "MPI_Barrier"};
enum { ALLREDUCE, REDUCE_SCATTER_BLOCK, ALLGATHER, BCAST, REDUCE, BARRIER };

/* Reports at most this many wrong elements per buffer, then a count. */
#define MAX_REPORTED 5

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

/* --- --in-place --------------------------------------------------------- */

/* Rank r's input for element i of block b: small integers, exact in both
 * types, different on every rank, block and element. */
static double input_value(int r, int b, size_t i) {
  return (double)((int)((i * 7u + (unsigned)b * 3u + (unsigned)r * 5u) % 11u) - 5);
}
/* What a rank keeps in a buffer MPI must not write: recognizably not an
 * input or a result. */
static double sentinel_value(int r, size_t i) { return 1000.0 + r * 100 + (double)(i % 97); }

typedef struct {
  MPI_Datatype type;
  const char* name;
  size_t bytes;
} Type;

static void put(const Type* t, void* buffer, size_t i, double v) {
  if (t->type == MPI_INT) ((int*)buffer)[i] = (int)v;
  else ((double*)buffer)[i] = v;
}
static double get(const Type* t, const void* buffer, size_t i) {
  return t->type == MPI_INT ? (double)((const int*)buffer)[i] : ((const double*)buffer)[i];
}

/* Compares `count` elements of `buffer` from `first` on against expect(i). */
#define CHECK_RANGE(what, t, buffer, first, count, expect_expr)                            \
  do {                                                                                     \
    long wrong_ = 0;                                                                       \
    for (size_t i = (first); i < (first) + (count); ++i) {                                 \
      const double expected_ = (expect_expr);                                              \
      const double actual_ = get((t), (buffer), i);                                        \
      if (actual_ != expected_ && ++wrong_ <= MAX_REPORTED) {                              \
        FAIL("%s (%s, %zu per block, %d ranks): element %zu: expected %g, got %g", (what), \
             (t)->name, per_block, g_size, i, expected_, actual_);                         \
      }                                                                                    \
    }                                                                                      \
    if (wrong_ > MAX_REPORTED) FAIL("%s: %ld elements wrong in all", (what), wrong_);      \
  } while (0)

static double sum_over_ranks(int b, size_t i) {
  double sum = 0;
  for (int r = 0; r < g_size; ++r) sum += input_value(r, b, i);
  return sum;
}

static void check_in_place(const Type* t, size_t per_block, MPI_Comm comm) {
  const size_t p = (size_t)g_size;
  const size_t whole = per_block * p;
  char* recv = malloc(whole * t->bytes);
  char* send = malloc(whole * t->bytes);
  if (recv == NULL || send == NULL) {
    FAIL("out of memory for %zu elements", whole);
    exit(1);
  }

  /* MPI_Reduce_scatter_block in place: block b of the input at block b;
   * the result (block `rank` reduced) in block 0; blocks 1.. untouched. */
  for (size_t b = 0; b < p; ++b) {
    for (size_t i = 0; i < per_block; ++i)
      put(t, recv, b * per_block + i, input_value(g_rank, (int)b, i));
  }
  MPI_OK(MPI_Reduce_scatter_block(MPI_IN_PLACE, recv, (int)per_block, t->type, MPI_SUM, comm),
         REDUCE_SCATTER_BLOCK);
  CHECK_RANGE("MPI_Reduce_scatter_block in place: block 0 (the result)", t, recv, 0, per_block,
              sum_over_ranks(g_rank, i));
  CHECK_RANGE("MPI_Reduce_scatter_block in place: blocks 1.. (MPI does not write them)", t, recv,
              per_block, whole - per_block,
              input_value(g_rank, (int)(i / per_block), i % per_block));

  /* MPI_Reduce_scatter_block: send unchanged, recv = one block. */
  for (size_t b = 0; b < p; ++b) {
    for (size_t i = 0; i < per_block; ++i)
      put(t, send, b * per_block + i, input_value(g_rank, (int)b, i));
  }
  for (size_t i = 0; i < whole; ++i) put(t, recv, i, sentinel_value(g_rank, i));
  MPI_OK(MPI_Reduce_scatter_block(send, recv, (int)per_block, t->type, MPI_SUM, comm),
         REDUCE_SCATTER_BLOCK);
  CHECK_RANGE("MPI_Reduce_scatter_block: the result", t, recv, 0, per_block,
              sum_over_ranks(g_rank, i));
  CHECK_RANGE("MPI_Reduce_scatter_block: receive buffer past the result", t, recv, per_block,
              whole - per_block, sentinel_value(g_rank, i));
  CHECK_RANGE("MPI_Reduce_scatter_block: send buffer", t, send, 0, whole,
              input_value(g_rank, (int)(i / per_block), i % per_block));

  /* MPI_Reduce, every root: in place at the root; elsewhere send
   * unchanged and recv (not significant there) untouched. */
  for (int root = 0; root < g_size; ++root) {
    for (size_t i = 0; i < per_block; ++i) {
      put(t, g_rank == root ? recv : send, i, input_value(g_rank, 0, i));
      if (g_rank != root) put(t, recv, i, sentinel_value(g_rank, i));
    }
    MPI_OK(MPI_Reduce(g_rank == root ? MPI_IN_PLACE : send, recv, (int)per_block, t->type, MPI_SUM,
                      root, comm),
           REDUCE);
    if (g_rank == root) {
      CHECK_RANGE("MPI_Reduce in place at the root", t, recv, 0, per_block, sum_over_ranks(0, i));
    } else {
      CHECK_RANGE("MPI_Reduce (in place at the root): send buffer of a non-root", t, send, 0,
                  per_block, input_value(g_rank, 0, i));
      CHECK_RANGE("MPI_Reduce (in place at the root): receive buffer of a non-root", t, recv, 0,
                  per_block, sentinel_value(g_rank, i));
    }
  }

  /* MPI_Allgather in place: every block ends as its rank's input. */
  for (size_t b = 0; b < p; ++b) {
    for (size_t i = 0; i < per_block; ++i) {
      put(t, recv, b * per_block + i,
          (int)b == g_rank ? input_value(g_rank, 0, i) : sentinel_value(g_rank, i));
    }
  }
  MPI_OK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, (int)per_block, t->type, comm),
         ALLGATHER);
  CHECK_RANGE("MPI_Allgather in place", t, recv, 0, whole,
              input_value((int)(i / per_block), 0, i % per_block));
  /* MPI_Allgather: send unchanged. */
  for (size_t i = 0; i < per_block; ++i) put(t, send, i, input_value(g_rank, 1, i));
  MPI_OK(MPI_Allgather(send, (int)per_block, t->type, recv, (int)per_block, t->type, comm),
         ALLGATHER);
  CHECK_RANGE("MPI_Allgather", t, recv, 0, whole,
              input_value((int)(i / per_block), 1, i % per_block));
  CHECK_RANGE("MPI_Allgather: send buffer", t, send, 0, per_block, input_value(g_rank, 1, i));

  /* MPI_Allreduce in place, then out of place with send unchanged and the
   * receive buffer's tail untouched. */
  for (size_t i = 0; i < whole; ++i)
    put(t, recv, i, i < per_block ? input_value(g_rank, 2, i) : sentinel_value(g_rank, i));
  MPI_OK(MPI_Allreduce(MPI_IN_PLACE, recv, (int)per_block, t->type, MPI_SUM, comm), ALLREDUCE);
  CHECK_RANGE("MPI_Allreduce in place", t, recv, 0, per_block, sum_over_ranks(2, i));
  CHECK_RANGE("MPI_Allreduce in place: past the count", t, recv, per_block, whole - per_block,
              sentinel_value(g_rank, i));
  for (size_t i = 0; i < per_block; ++i) put(t, send, i, input_value(g_rank, 3, i));
  MPI_OK(MPI_Allreduce(send, recv, (int)per_block, t->type, MPI_SUM, comm), ALLREDUCE);
  CHECK_RANGE("MPI_Allreduce", t, recv, 0, per_block, sum_over_ranks(3, i));
  CHECK_RANGE("MPI_Allreduce: send buffer", t, send, 0, per_block, input_value(g_rank, 3, i));

  free(recv);
  free(send);
}

static void run_in_place(void) {
  const Type types[] = {{MPI_INT, "MPI_INT", sizeof(int)},
                        {MPI_DOUBLE, "MPI_DOUBLE", sizeof(double)}};
  const size_t sizes[] = {3, 1000, 300000};
  MPI_Comm comms[2] = {MPI_COMM_WORLD, MPI_COMM_NULL};
  MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
  for (int c = 0; c < 2; ++c) {
    for (size_t t = 0; t < sizeof types / sizeof *types; ++t) {
      for (size_t s = 0; s < sizeof sizes / sizeof *sizes; ++s)
        check_in_place(&types[t], sizes[s], comms[c]);
    }
  }
  MPI_Comm_free(&comms[1]);
}

/* --- --attributes ------------------------------------------------------- */

static long g_copies, g_deletes;

static int count_copy(MPI_Comm comm, int keyval, void* extra, void* in, void* out, int* flag) {
  (void)comm, (void)keyval, (void)extra;
  ++g_copies;
  *(void**)out = in;
  *flag = 1;
  return MPI_SUCCESS;
}

static int count_delete(MPI_Comm comm, int keyval, void* value, void* extra) {
  (void)comm, (void)keyval, (void)value, (void)extra;
  ++g_deletes;
  return MPI_SUCCESS;
}

static void expect_callbacks(const char* when, long copies, long deletes) {
  if (g_copies != copies || g_deletes != deletes) {
    FAIL(
        "after %s: the program's attribute callbacks ran %ld copies and %ld deletes, expected "
        "%ld and %ld",
        when, g_copies, g_deletes, copies, deletes);
  }
}

/* One call of every served function on comm. */
static void served_calls(MPI_Comm comm) {
  int rank = 0, size = 0, sum = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int value = rank + 1;
  MPI_OK(MPI_Allreduce(&value, &sum, 1, MPI_INT, MPI_SUM, comm), ALLREDUCE);
  if (sum != size * (size + 1) / 2) {
    FAIL("MPI_Allreduce: expected %d, got %d", size * (size + 1) / 2, sum);
  }
  MPI_OK(MPI_Barrier(comm), BARRIER);
  MPI_OK(MPI_Bcast(&value, 1, MPI_INT, 0, comm), BCAST);
}

static void run_attributes(void) {
  int keyval = MPI_KEYVAL_INVALID;
  MPI_Comm_create_keyval(count_copy, count_delete, &keyval, NULL);
  static int value = 42;
  /* On MPI_COMM_WORLD before its first served call. */
  MPI_Comm_set_attr(MPI_COMM_WORLD, keyval, &value);
  served_calls(MPI_COMM_WORLD);
  expect_callbacks("served calls on MPI_COMM_WORLD", 0, 0);

  MPI_Comm mine = MPI_COMM_NULL, copy = MPI_COMM_NULL, split = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &mine); /* copies WORLD's attribute: 1 */
  expect_callbacks("MPI_Comm_dup of MPI_COMM_WORLD", 1, 0);
  served_calls(mine);
  expect_callbacks("served calls on a duplicate", 1, 0);
  MPI_Comm_dup(mine, &copy); /* 2 */
  served_calls(copy);
  expect_callbacks("served calls on a duplicate of a duplicate", 2, 0);
  MPI_Comm_split(mine, g_rank % 2, -g_rank, &split); /* split copies nothing */
  MPI_Comm_set_attr(split, keyval, &value);
  served_calls(split);
  expect_callbacks("served calls on a split", 2, 0);
  MPI_Comm_free(&copy); /* deletes 1 */
  expect_callbacks("MPI_Comm_free of the second duplicate", 2, 1);
  MPI_Comm_free(&split); /* 2 */
  MPI_Comm_free(&mine);  /* 3 */
  expect_callbacks("MPI_Comm_free of every communicator but MPI_COMM_WORLD", 2, 3);
  MPI_Comm_delete_attr(MPI_COMM_WORLD, keyval); /* 4 */
  expect_callbacks("MPI_Comm_delete_attr on MPI_COMM_WORLD", 2, 4);
  MPI_Comm_free_keyval(&keyval);
}

/* --- --signals ---------------------------------------------------------- */

static long thread_count(void) {
  FILE* status = fopen("/proc/self/status", "r");
  char line[256];
  long threads = -1;
  while (status != NULL && fgets(line, sizeof line, status) != NULL) {
    if (sscanf(line, "Threads: %ld", &threads) == 1) break;
  }
  if (status != NULL) fclose(status);
  return threads;
}

static void run_signals(int expect_handler) {
  /* Open MPI's own threads start in MPI_Init; a PMPI barrier settles them. */
  PMPI_Barrier(MPI_COMM_WORLD);
  const long before = thread_count();
  served_calls(MPI_COMM_WORLD);
  MPI_Comm mine = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &mine);
  served_calls(mine);
  const long after = thread_count();
  struct sigaction current;
  memset(&current, 0, sizeof current);
  sigaction(SIGUSR1, NULL, &current);
  const int default_action = !(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_DFL;
  if (expect_handler) {
    if (default_action) FAIL("SIGUSR1 still has its default action; a handler was asked for");
  } else {
    if (!default_action) FAIL("SIGUSR1 no longer has its default action after served calls");
    if (after != before) {
      FAIL("the process had %ld threads before the served calls and %ld after", before, after);
    }
  }
  MPI_Comm_free(&mine);
}

/* --- --communicators ----------------------------------------------------- */

/* Bytes of node segments (/dev/shm/collective-seg-*) mapped in this process. */
static unsigned long long mapped_segment_bytes(void) {
  FILE* maps = fopen("/proc/self/maps", "r");
  char line[1024];
  unsigned long long total = 0;
  while (maps != NULL && fgets(line, sizeof line, maps) != NULL) {
    unsigned long long from = 0, to = 0;
    if (strstr(line, "/collective-seg-") != NULL && sscanf(line, "%llx-%llx", &from, &to) == 2) {
      total += to - from;
    }
  }
  if (maps != NULL) fclose(maps);
  return total;
}

/* MPI_Win_allocate_shared of `bytes` per rank; each rank writes its part,
 * every rank reads every part. */
static void check_shared_window(MPI_Aint bytes) {
  MPI_Win win = MPI_WIN_NULL;
  unsigned char* mine = NULL;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rc = MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mine, &win);
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(rc, text, &length);
    FAIL("MPI_Win_allocate_shared of %ld bytes per rank failed: %s", (long)bytes, text);
    return;
  }
  memset(mine, 0x40 + g_rank, (size_t)bytes);
  MPI_Win_fence(0, win);
  for (int r = 0; r < g_size; ++r) {
    MPI_Aint size = 0;
    int unit = 0;
    unsigned char* theirs = NULL;
    MPI_Win_shared_query(win, r, &size, &unit, &theirs);
    for (MPI_Aint i = 0; i < size; ++i) {
      if (theirs[i] != 0x40 + r) {
        FAIL("shared window: rank %d's byte %ld: expected %d, got %d", r, (long)i, 0x40 + r,
             theirs[i]);
        break;
      }
    }
  }
  MPI_Win_fence(0, win);
  MPI_Win_free(&win);
}

static void run_communicators(int count, unsigned long long limit, MPI_Aint window) {
  MPI_Comm* comms = calloc((size_t)count, sizeof *comms);
  for (int c = 0; c < count; ++c) {
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[c]);
    long value = g_rank + c, sum = 0;
    MPI_OK(MPI_Allreduce(&value, &sum, 1, MPI_LONG, MPI_SUM, comms[c]), ALLREDUCE);
    const long expected = (long)g_size * (g_size - 1) / 2 + (long)g_size * c;
    if (sum != expected)
      FAIL("communicator %d: MPI_Allreduce: expected %ld, got %ld", c, expected, sum);
    MPI_OK(MPI_Barrier(comms[c]), BARRIER);
  }
  const unsigned long long mapped = mapped_segment_bytes();
  printf("dropin_semantics_program rank %d: %d communicators map %llu bytes of node segments\n",
         g_rank, count, mapped);
  if (limit > 0 && mapped > limit) {
    FAIL(
        "%d live communicators with one small call each map %llu bytes of node segments, more "
        "than %llu",
        count, mapped, limit);
  }
  if (window > 0) check_shared_window(window);
  for (int c = 0; c < count; ++c) MPI_Comm_free(&comms[c]);
  free(comms);
}

/* --- --stall ------------------------------------------------------------- */

static void run_stall(void) {
  served_calls(MPI_COMM_WORLD);
  PMPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) sleep(3);
  MPI_OK(MPI_Barrier(MPI_COMM_WORLD), BARRIER);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  const char* mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "--in-place") == 0) {
    run_in_place();
  } else if (strcmp(mode, "--attributes") == 0) {
    run_attributes();
  } else if (strcmp(mode, "--signals") == 0) {
    run_signals(argc > 2 && strcmp(argv[2], "--expect-handler") == 0);
  } else if (strcmp(mode, "--communicators") == 0 && argc > 2) {
    unsigned long long limit = 0;
    MPI_Aint window = 0;
    for (int i = 3; i + 1 < argc; i += 2) {
      if (strcmp(argv[i], "--keep-shm-under") == 0) limit = strtoull(argv[i + 1], NULL, 10);
      if (strcmp(argv[i], "--window") == 0) window = (MPI_Aint)strtoll(argv[i + 1], NULL, 10);
    }
    run_communicators(atoi(argv[2]), limit, window);
  } else if (strcmp(mode, "--stall") == 0) {
    run_stall();
  } else {
    if (g_rank == 0)
      fprintf(stderr, "usage: %s --in-place|--attributes|--signals|--communicators N|--stall\n",
              argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  printf("dropin_program rank %d calls:", g_rank);
  for (int i = 0; i < 6; ++i) printf(" %s %ld;", kNames[i], g_calls[i]);
  printf("\n");
  fflush(stdout);
  long failures = 0;
  PMPI_Allreduce(&g_failures, &failures, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) {
    if (failures == 0) printf("dropin_semantics_program: OK on %d ranks (%s)\n", g_size, mode);
    else
      printf("dropin_semantics_program: %ld failures on %d ranks (%s)\n", failures, g_size, mode);
  }
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
