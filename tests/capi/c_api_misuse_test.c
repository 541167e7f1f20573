/* Misuse of the C API from C under mpirun: handles that are stale (freed
 * through a copy, used after free) or were never issued, choose_algorithm
 * and from_fint with values out of range, and collective_init after
 * collective_finalize. Each gives a status and a message naming the C
 * function (or the C++ call it makes) and the rank, never a crash; the
 * communicators that are live keep working. A failure on any rank fails
 * the run, naming the rank and the check. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <collective/collective_c.h>

static int g_rank = -1;
static int g_size = 0;
static long g_failures = 0;

#define CHECK(cond, ...)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      char detail_[768];                                                                 \
      snprintf(detail_, sizeof detail_, __VA_ARGS__);                                    \
      fprintf(stderr, "rank %d: FAIL %s:%d: %s\n", g_rank, __FILE__, __LINE__, detail_); \
      ++g_failures;                                                                      \
    }                                                                                    \
  } while (0)

#define CHECK_OK(call)                                                \
  do {                                                                \
    int status_ = (call);                                             \
    CHECK(status_ == COLLECTIVE_SUCCESS, "%s returned %s: %s", #call, \
          collective_status_name(status_), collective_last_error());  \
  } while (0)

/* The call failed with INVALID_ARGUMENT, and its message holds the rank and
 * both fragments. */
static void expect_refused(const char* what, int status, const char* fragment1,
                           const char* fragment2) {
  char rank_text[32];
  snprintf(rank_text, sizeof rank_text, "(rank %d)", g_rank);
  const char* message = collective_last_error();
  CHECK(status == COLLECTIVE_ERR_INVALID_ARGUMENT, "%s: expected invalid_argument, actual %s (%s)",
        what, collective_status_name(status), message);
  CHECK(strstr(message, rank_text) != NULL, "%s: message \"%s\" lacks \"%s\"", what, message,
        rank_text);
  CHECK(fragment1 == NULL || strstr(message, fragment1) != NULL, "%s: message \"%s\" lacks \"%s\"",
        what, message, fragment1);
  CHECK(fragment2 == NULL || strstr(message, fragment2) != NULL, "%s: message \"%s\" lacks \"%s\"",
        what, message, fragment2);
  collective_clear_last_error();
}

/* An all_reduce of 1001 int32 on comm: every element exact. */
static void expect_sum_works(const char* what, collective_comm_t comm, int members) {
  int32_t values[1001];
  for (int i = 0; i < 1001; ++i) values[i] = g_rank + i;
  int size = 0;
  CHECK_OK(collective_comm_size(comm, &size));
  CHECK(size == members, "%s: size %d, expected %d", what, size, members);
  CHECK_OK(
      collective_all_reduce(comm, values, values, 1001, COLLECTIVE_INT32, COLLECTIVE_SUM, NULL));
  (void)size;
  for (int i = 0; i < 1001; ++i) {
    /* Every rank of world: sum of ranks + size*i; only used on world. */
    const int32_t expected = (int32_t)(g_size * (g_size - 1) / 2 + g_size * i);
    if (values[i] != expected) {
      CHECK(0, "%s: index %d expected %d actual %d", what, i, expected, values[i]);
      break;
    }
  }
}

static void test_stale_handles(collective_comm_t world) {
  float values[4] = {1, 2, 3, 4};

  /* A copy of a handle is the same handle: freeing it through one copy
   * makes every copy stale. */
  collective_comm_t split = NULL;
  CHECK_OK(collective_comm_split(world, 0, g_rank, &split));
  collective_comm_t copy = split;
  collective_comm_t another_copy = split;
  CHECK_OK(collective_comm_free(&split));
  CHECK(split == NULL, "collective_comm_free left the handle set");
  expect_refused("double free through a copy", collective_comm_free(&copy), "collective_comm_free",
                 "was freed");
  CHECK(copy == NULL, "a refused free left the copy set");
  expect_refused("all_reduce on a freed copy",
                 collective_all_reduce(another_copy, values, values, 4, COLLECTIVE_FLOAT32,
                                       COLLECTIVE_SUM, NULL),
                 "collective_all_reduce", "was freed");
  int rank = -7;
  expect_refused("rank of a freed copy", collective_comm_rank(another_copy, &rank),
                 "collective_comm_rank", "was freed");
  CHECK(rank == -7, "a refused collective_comm_rank wrote %d", rank);
  collective_comm_t child = NULL;
  expect_refused("split of a freed copy", collective_comm_split(another_copy, 0, 0, &child),
                 "collective_comm_split", "was freed");
  CHECK(child == NULL, "a refused split gave a handle");
  expect_refused("barrier on a freed copy", collective_barrier(another_copy, NULL),
                 "collective_barrier", "was freed");

  /* Values the library never issued: a number, the address of a local
   * variable, memory full of 0xff. */
  collective_comm_t made_up = (collective_comm_t)(uintptr_t)0x1234;
  expect_refused("a made-up handle",
                 collective_broadcast(made_up, values, 4, COLLECTIVE_FLOAT32, 0, NULL),
                 "collective_broadcast", "never issued");
  long local = 0;
  collective_comm_t stack_address = (collective_comm_t)(void*)&local;
  expect_refused("a stack address as a handle", collective_comm_size(stack_address, &rank),
                 "collective_comm_size", "never issued");
  unsigned char* garbage = malloc(256);
  memset(garbage, 0xff, 256);
  collective_comm_t heap_garbage = (collective_comm_t)(void*)garbage;
  expect_refused("heap garbage as a handle", collective_comm_free(&heap_garbage),
                 "collective_comm_free", "never issued");
  free(garbage);
  for (int i = 0; i < 4; ++i)
    CHECK(values[i] == (float)(i + 1), "a refused call touched the buffer: index %d is %g", i,
          values[i]);
}

static void test_values_out_of_range(collective_comm_t world) {
  int algorithm = -7;
  expect_refused("choose_algorithm with algorithm 99",
                 collective_comm_choose_algorithm(world, COLLECTIVE_KIND_ALL_REDUCE, 1024,
                                                  COLLECTIVE_FLOAT32, 99, &algorithm),
                 "choose_algorithm", "Algorithm value 99");
  CHECK(algorithm == -7, "a refused choose_algorithm wrote %d", algorithm);
  expect_refused("choose_algorithm with dtype 42",
                 collective_comm_choose_algorithm(world, COLLECTIVE_KIND_ALL_REDUCE, 1024, 42,
                                                  COLLECTIVE_ALGORITHM_AUTO, &algorithm),
                 "choose_algorithm", "DataType value 42");
  collective_comm_t wrapped = NULL;
  expect_refused("from_fint of a value that is no communicator",
                 collective_comm_from_fint(123456789, &wrapped), "from_mpi", "123456789");
  CHECK(wrapped == NULL, "a refused from_fint gave a handle");
}

int main(int argc, char** argv) {
  if (collective_init(&argc, &argv) != COLLECTIVE_SUCCESS) {
    fprintf(stderr, "collective_init: %s\n", collective_last_error());
    return 1;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  collective_comm_t world = NULL;
  CHECK_OK(collective_comm_world(&world));

  test_stale_handles(world);
  test_values_out_of_range(world);
  expect_sum_works("world after the refusals", world, g_size);

  long failures = g_failures, total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  CHECK_OK(collective_comm_free(&world));
  CHECK_OK(collective_finalize());

  /* MPI cannot start again in this process. */
  expect_refused("collective_init after collective_finalize", collective_init(&argc, &argv),
                 "collective_init", "MPI is already finalized");
  expect_refused("collective_init(NULL, NULL) after collective_finalize",
                 collective_init(NULL, NULL), "collective_init", "cannot be initialized again");
  CHECK(collective_initialized() == 0, "collective_initialized() is 1 after finalize");
  CHECK_OK(collective_finalize()); /* a second finalize is a no-op */
  total += g_failures - failures;  /* this rank's checks after finalize */
  if (g_rank == 0 || total != 0)
    printf("c_api_misuse_test: %s on %d ranks (rank %d: %ld failures)\n",
           total == 0 ? "OK" : "FAILED", g_size, g_rank, total);
  return total == 0 ? 0 : 1;
}
