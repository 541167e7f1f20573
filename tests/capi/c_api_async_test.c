/* The C API's calls in flight (collective_*_async, collective_work_*):
 * several all-reduces in flight waited in reverse, other collectives
 * started beside them, every element checked; wait_for expiring while a
 * peer has not called (ordered by a second communicator, never a sleep); a
 * mismatch returned by collective_work_wait on every rank; argument errors
 * returned by the start; freed and NULL work handles. A failure prints
 * "FAIL rank <r>: ..." and exits non-zero, which fails the run. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collective/collective_c.h"

static int g_rank = -1;

static void fail(const char* what, int status) {
  printf("FAIL rank %d: %s (status %s: %s)\n", g_rank, what, collective_status_name(status),
         collective_last_error());
  fflush(stdout);
  exit(1);
}

static void ok(int status, const char* what) {
  if (status != COLLECTIVE_SUCCESS) fail(what, status);
}

static int64_t input_of(int rank, size_t i, int call) {
  return (int64_t)(rank + 1) * (int64_t)(i % 1000 + 1) + call;
}

static int64_t sum_of(int ranks, size_t i, int call) {
  return (int64_t)ranks * (ranks + 1) / 2 * (int64_t)(i % 1000 + 1) + (int64_t)ranks * call;
}

static void expect_sums(const int64_t* recv, size_t count, int ranks, int call) {
  for (size_t i = 0; i < count; ++i) {
    if (recv[i] != sum_of(ranks, i, call)) {
      printf("FAIL rank %d: all_reduce call %d index %zu: expected %lld, actual %lld\n", g_rank,
             call, i, (long long)sum_of(ranks, i, call), (long long)recv[i]);
      exit(1);
    }
  }
}

#define CALLS 6

int main(int argc, char** argv) {
  ok(collective_init(&argc, &argv), "collective_init");
  collective_comm_t comm = NULL, side = NULL;
  ok(collective_comm_world(&comm), "collective_comm_world");
  int rank = 0, ranks = 0;
  ok(collective_comm_rank(comm, &rank), "rank");
  ok(collective_comm_size(comm, &ranks), "size");
  g_rank = rank;
  ok(collective_comm_split(comm, 0, rank, &side), "split");

  /* Six all-reduces in flight, a broadcast, an all_gather_v and a barrier
   * beside them; waited last first. */
  static const size_t sizes[CALLS] = {1, 10, 1000, 100003, 3, 0};
  int64_t* send[CALLS];
  int64_t* recv[CALLS];
  collective_work_t works[CALLS + 3];
  for (int c = 0; c < CALLS; ++c) {
    send[c] = malloc((sizes[c] + 1) * sizeof(int64_t));
    recv[c] = malloc((sizes[c] + 1) * sizeof(int64_t));
    for (size_t i = 0; i < sizes[c]; ++i) {
      send[c][i] = input_of(rank, i, c);
      recv[c][i] = -1;
    }
    ok(collective_all_reduce_async(comm, send[c], recv[c], sizes[c], COLLECTIVE_INT64,
                                   COLLECTIVE_SUM, NULL, &works[c]),
       "collective_all_reduce_async");
  }
  int32_t broadcast[257];
  for (int i = 0; i < 257; ++i) broadcast[i] = rank == ranks - 1 ? 7 * i + 1 : -1;
  ok(collective_broadcast_async(comm, broadcast, 257, COLLECTIVE_INT32, ranks - 1, NULL,
                                &works[CALLS]),
     "collective_broadcast_async");
  size_t* counts = malloc((size_t)ranks * sizeof(size_t));
  size_t* places = malloc((size_t)ranks * sizeof(size_t));
  for (int q = 0; q < ranks; ++q) {
    counts[q] = (size_t)q + 1;
    places[q] = (size_t)q * (size_t)(q + 1) / 2;
  }
  int32_t mine[8];
  for (int i = 0; i <= rank; ++i) mine[i] = rank * 100 + i;
  int32_t* gathered = malloc(sizeof(int32_t) * (size_t)ranks * (size_t)(ranks + 1) / 2);
  ok(collective_all_gather_v_async(comm, mine, (size_t)rank + 1, gathered, counts, places,
                                   COLLECTIVE_INT32, NULL, &works[CALLS + 1]),
     "collective_all_gather_v_async");
  memset(counts, 0, (size_t)ranks * sizeof(size_t)); /* the call copied them */
  ok(collective_barrier_async(comm, NULL, &works[CALLS + 2]), "collective_barrier_async");
  for (int c = CALLS + 2; c >= 0; --c) {
    ok(collective_work_wait(works[c]), "collective_work_wait");
    int completed = 0;
    ok(collective_work_test(works[c], &completed), "collective_work_test");
    if (!completed) fail("a waited call is not completed", COLLECTIVE_SUCCESS);
    ok(collective_work_free(&works[c]), "collective_work_free");
    if (works[c] != NULL) fail("collective_work_free left the handle set", COLLECTIVE_SUCCESS);
  }
  for (int c = 0; c < CALLS; ++c) expect_sums(recv[c], sizes[c], ranks, c);
  for (int i = 0; i < 257; ++i) {
    if (broadcast[i] != 7 * i + 1) {
      printf("FAIL rank %d: broadcast index %d: expected %d, actual %d\n", rank, i, 7 * i + 1,
             broadcast[i]);
      return 1;
    }
  }
  for (int q = 0; q < ranks; ++q) {
    for (int i = 0; i <= q; ++i) {
      const int32_t actual = gathered[places[q] + (size_t)i];
      if (actual != q * 100 + i) {
        printf("FAIL rank %d: all_gather_v index %zu: expected %d, actual %d\n", rank,
               places[q] + (size_t)i, q * 100 + i, actual);
        return 1;
      }
    }
  }

  /* Argument errors come from the start, with the blocking call's status;
   * no handle is issued. */
  collective_work_t refused = (collective_work_t)1;
  int status = collective_all_gather_v_async(comm, mine, 1, gathered, NULL, places,
                                             COLLECTIVE_INT32, NULL, &refused);
  if (status != COLLECTIVE_ERR_INVALID_ARGUMENT || refused != NULL ||
      strstr(collective_last_error(), "recv_counts is NULL") == NULL) {
    fail("a NULL recv_counts was not refused by the start", status);
  }
  status = collective_barrier_async(comm, NULL, NULL);
  if (status != COLLECTIVE_ERR_INVALID_ARGUMENT) fail("a NULL work pointer accepted", status);

  /* A freed handle and a never-issued one. */
  collective_work_t work = NULL;
  ok(collective_barrier_async(comm, NULL, &work), "collective_barrier_async");
  collective_work_t copy = work;
  ok(collective_work_free(&work), "collective_work_free");
  status = collective_work_wait(copy);
  if (status != COLLECTIVE_ERR_INVALID_ARGUMENT ||
      strstr(collective_last_error(), "was freed") == NULL) {
    fail("a freed work handle was not refused", status);
  }
  status = collective_work_wait((collective_work_t)(uintptr_t)0x7fffffff);
  if (status != COLLECTIVE_ERR_INVALID_ARGUMENT ||
      strstr(collective_last_error(), "never issued") == NULL) {
    fail("a never-issued work handle was not refused", status);
  }

  if (ranks > 1) {
    /* wait_for expires: the others call only after rank 0 tells them on
     * the second communicator. */
    int64_t value = rank + 1, total = -1;
    if (rank == 0) {
      ok(collective_all_reduce_async(comm, &value, &total, 1, COLLECTIVE_INT64, COLLECTIVE_SUM,
                                     NULL, &work),
         "collective_all_reduce_async");
      int completed = 1;
      ok(collective_work_wait_for(work, 10, &completed), "collective_work_wait_for");
      if (completed) fail("the call finished before its peers made it", COLLECTIVE_SUCCESS);
      ok(collective_barrier(side, NULL), "barrier on the second communicator");
      ok(collective_work_wait_for(work, 600000, &completed), "collective_work_wait_for");
      if (!completed) fail("the call did not finish within 600 s", COLLECTIVE_SUCCESS);
      ok(collective_work_free(&work), "collective_work_free");
    } else {
      ok(collective_barrier(side, NULL), "barrier on the second communicator");
      ok(collective_all_reduce(comm, &value, &total, 1, COLLECTIVE_INT64, COLLECTIVE_SUM, NULL),
         "collective_all_reduce");
    }
    if (total != (int64_t)ranks * (ranks + 1) / 2) {
      printf("FAIL rank %d: total expected %lld, actual %lld\n", rank,
             (long long)ranks * (ranks + 1) / 2, (long long)total);
      return 1;
    }

    /* A mismatch is the status of collective_work_wait on every rank. */
    int64_t values[9] = {0}, results[9];
    ok(collective_all_reduce_async(comm, values, results, rank == 0 ? 8 : 9, COLLECTIVE_INT64,
                                   COLLECTIVE_SUM, NULL, &work),
       "collective_all_reduce_async");
    status = collective_work_wait(work);
    if (status != COLLECTIVE_ERR_MISMATCH || strstr(collective_last_error(), "disagree") == NULL) {
      fail("mismatched counts did not give COLLECTIVE_ERR_MISMATCH from collective_work_wait",
           status);
    }
    ok(collective_work_free(&work), "collective_work_free");
  }

  for (int c = 0; c < CALLS; ++c) {
    free(send[c]);
    free(recv[c]);
  }
  free(counts);
  free(places);
  free(gathered);
  ok(collective_comm_free(&side), "free side");
  ok(collective_comm_free(&comm), "free comm");
  ok(collective_finalize(), "collective_finalize");
  if (rank == 0) printf("c_api_async_test: %d ranks passed\n", ranks);
  return 0;
}
