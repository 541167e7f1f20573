/* The C API's persistent plans (collective_all_reduce_init and every other
 * collective's collective_X_init,
 * collective_plan_start/free, waited with collective_work_*): many starts
 * with the buffers rewritten between them, every element checked, counts
 * 0, 7 and 70001, in place and out, int64 and float64; a start refused
 * while the previous one is unfinished and a free refused with a start in
 * flight (held by a second communicator, never a sleep), with their exact
 * text; a mismatched creation; freed and NULL handles. A failure prints
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

static int64_t input_of(int rank, size_t i, int round) {
  return (int64_t)((i * 7 + (size_t)rank * 13 + (size_t)round * 31) % 1009) - 500;
}

static int64_t sum_of(int ranks, size_t i, int round) {
  int64_t sum = 0;
  for (int r = 0; r < ranks; ++r) sum += input_of(r, i, round);
  return sum;
}

/* Leaves the part after "#<digits>" sequences comparable: "#N". */
static void without_numbers(const char* text, char* out, size_t size) {
  size_t o = 0;
  for (size_t i = 0; text[i] != '\0' && o + 2 < size; ++i) {
    out[o++] = text[i];
    if (text[i] == '#' && text[i + 1] >= '0' && text[i + 1] <= '9') {
      out[o++] = 'N';
      while (text[i + 1] >= '0' && text[i + 1] <= '9') ++i;
    }
  }
  out[o] = '\0';
}

static void rounds(collective_comm_t comm, int rank, int ranks, size_t count, int float64,
                   int in_place) {
  const size_t bytes = count * 8 + 8;
  int64_t* send_i = malloc(bytes);
  int64_t* recv_i = malloc(bytes);
  double* send_d = (double*)send_i;
  double* recv_d = (double*)recv_i;
  collective_plan_t plan = NULL;
  ok(collective_all_reduce_init(comm, in_place ? (const void*)recv_i : (const void*)send_i, recv_i,
                                count, float64 ? COLLECTIVE_FLOAT64 : COLLECTIVE_INT64,
                                COLLECTIVE_SUM, NULL, &plan),
     "collective_all_reduce_init");
  for (int round = 0; round < 8; ++round) {
    for (size_t i = 0; i < count; ++i) {
      const int64_t v = input_of(rank, i, round);
      if (float64) {
        (in_place ? recv_d : send_d)[i] = (double)v;
        if (!in_place) recv_d[i] = -777777.0;
      } else {
        (in_place ? recv_i : send_i)[i] = v;
        if (!in_place) recv_i[i] = -777777;
      }
    }
    collective_work_t work = NULL;
    ok(collective_plan_start(plan, &work), "collective_plan_start");
    ok(collective_work_wait(work), "collective_work_wait on a start");
    ok(collective_work_free(&work), "collective_work_free");
    for (size_t i = 0; i < count; ++i) {
      const int64_t expected = sum_of(ranks, i, round);
      const int64_t actual = float64 ? (int64_t)recv_d[i] : recv_i[i];
      if (actual != expected || (float64 && recv_d[i] != (double)expected)) {
        printf("FAIL rank %d: plan count %zu %s%s round %d index %zu: expected %lld, actual %lld\n",
               rank, count, float64 ? "float64" : "int64", in_place ? " in place" : "", round, i,
               (long long)expected, (long long)actual);
        exit(1);
      }
    }
  }
  ok(collective_plan_free(&plan), "collective_plan_free");
  if (plan != NULL) fail("collective_plan_free left the handle set", COLLECTIVE_SUCCESS);
  free(send_i);
  free(recv_i);
}

/* Every other collective's plan (collective_X_init): N int64 per block,
 * rank r's element i is r*100+i plus 1000*round; three starts each, the
 * inputs rewritten and the outputs reset to -1 before every start, every
 * element checked after it. The v-forms' arrays are overwritten right
 * after creation: the plan holds its own copies. */
#define N 5
#define MAX_RANKS 8
static int64_t element(int r, size_t i, int round) {
  return (int64_t)r * 100 + (int64_t)i + 1000 * (int64_t)round;
}

static void expect(const int64_t* got, size_t n, const int64_t* want, const char* what, int round) {
  for (size_t i = 0; i < n; ++i) {
    if (got[i] != want[i]) {
      printf("FAIL rank %d: %s start %d index %zu expected %lld actual %lld\n", g_rank, what, round,
             i, (long long)want[i], (long long)got[i]);
      fflush(stdout);
      exit(1);
    }
  }
}

static void every_collective(collective_comm_t comm, int rank, int ranks) {
  const int root = ranks - 1;
  const size_t all = (size_t)ranks * N;
  int64_t send[MAX_RANKS * N], recv[MAX_RANKS * N], want[MAX_RANKS * N];
  size_t counts[MAX_RANKS], displs[MAX_RANKS], given_counts[MAX_RANKS], given_displs[MAX_RANKS];
  for (int r = 0; r < ranks; ++r) {
    counts[r] = N;
    displs[r] = (size_t)r * N;
  }
  for (int kind = 0; kind < 13; ++kind) {
    memcpy(given_counts, counts, sizeof counts);
    memcpy(given_displs, displs, sizeof displs);
    collective_plan_t plan = NULL;
    const char* what = "?";
    int status = COLLECTIVE_SUCCESS;
    switch (kind) {
      case 0:
        what = "reduce_scatter";
        status = collective_reduce_scatter_init(comm, send, recv, N, COLLECTIVE_INT64,
                                                COLLECTIVE_SUM, NULL, &plan);
        break;
      case 1:
        what = "all_gather";
        status = collective_all_gather_init(comm, send, recv, N, COLLECTIVE_INT64, NULL, &plan);
        break;
      case 2:
        what = "broadcast";
        status = collective_broadcast_init(comm, recv, N, COLLECTIVE_INT64, root, NULL, &plan);
        break;
      case 3:
        what = "reduce";
        status = collective_reduce_init(comm, send, recv, N, COLLECTIVE_INT64, COLLECTIVE_SUM, root,
                                        NULL, &plan);
        break;
      case 4:
        what = "barrier";
        status = collective_barrier_init(comm, NULL, &plan);
        break;
      case 5:
        what = "all_to_all";
        status = collective_all_to_all_init(comm, send, recv, N, COLLECTIVE_INT64, NULL, &plan);
        break;
      case 6:
        what = "all_to_all_v";
        status =
            collective_all_to_all_v_init(comm, send, given_counts, given_displs, recv, given_counts,
                                         given_displs, COLLECTIVE_INT64, NULL, &plan);
        break;
      case 7:
        what = "all_gather_v";
        status = collective_all_gather_v_init(comm, send, N, recv, given_counts, given_displs,
                                              COLLECTIVE_INT64, NULL, &plan);
        break;
      case 8:
        what = "reduce_scatter_v";
        status = collective_reduce_scatter_v_init(comm, send, recv, given_counts, COLLECTIVE_INT64,
                                                  COLLECTIVE_SUM, NULL, &plan);
        break;
      case 9:
        what = "gather";
        status = collective_gather_init(comm, send, recv, N, COLLECTIVE_INT64, root, NULL, &plan);
        break;
      case 10:
        what = "gather_v";
        status = collective_gather_v_init(comm, send, N, recv, given_counts, given_displs,
                                          COLLECTIVE_INT64, root, NULL, &plan);
        break;
      case 11:
        what = "scatter";
        status = collective_scatter_init(comm, send, recv, N, COLLECTIVE_INT64, root, NULL, &plan);
        break;
      case 12:
        what = "scatter_v";
        status = collective_scatter_v_init(comm, send, given_counts, given_displs, recv, N,
                                           COLLECTIVE_INT64, root, NULL, &plan);
        break;
    }
    ok(status, what);
    memset(given_counts, 0xff, sizeof given_counts);
    memset(given_displs, 0xff, sizeof given_displs);
    for (int round = 0; round < 3; ++round) {
      size_t out = 0;
      for (size_t i = 0; i < all; ++i) {
        /* Block b of rank r's send holds what r sends to rank b. */
        send[i] = element(rank, i, round);
        recv[i] = -1;
      }
      if (kind == 2) {
        for (size_t i = 0; i < N; ++i) recv[i] = rank == root ? element(root, i, round) : -1;
      }
      collective_work_t work = NULL;
      ok(collective_plan_start(plan, &work), "collective_plan_start");
      ok(collective_work_wait(work), what);
      ok(collective_work_free(&work), "collective_work_free");
      switch (kind) {
        case 0:
        case 8: /* block `rank` summed over ranks */
          out = N;
          for (size_t i = 0; i < N; ++i) {
            want[i] = 0;
            for (int r = 0; r < ranks; ++r) want[i] += element(r, (size_t)rank * N + i, round);
          }
          break;
        case 1:
        case 7:
        case 9:
        case 10: /* block r = rank r's first N */
          out = (kind >= 9 && rank != root) ? 0 : all;
          for (int r = 0; r < ranks; ++r)
            for (size_t i = 0; i < N; ++i) want[(size_t)r * N + i] = element(r, i, round);
          break;
        case 2:
          out = N;
          for (size_t i = 0; i < N; ++i) want[i] = element(root, i, round);
          break;
        case 3:
          out = rank == root ? N : 0;
          for (size_t i = 0; i < N; ++i) {
            want[i] = 0;
            for (int r = 0; r < ranks; ++r) want[i] += element(r, i, round);
          }
          break;
        case 5:
        case 6: /* block r = rank r's block `rank` */
          out = all;
          for (int r = 0; r < ranks; ++r)
            for (size_t i = 0; i < N; ++i)
              want[(size_t)r * N + i] = element(r, (size_t)rank * N + i, round);
          break;
        case 11:
        case 12: /* the root's block `rank` */
          out = N;
          for (size_t i = 0; i < N; ++i) want[i] = element(root, (size_t)rank * N + i, round);
          break;
      }
      expect(recv, out, want, what, round);
    }
    ok(collective_plan_free(&plan), "collective_plan_free");
  }
}

int main(int argc, char** argv) {
  ok(collective_init(&argc, &argv), "collective_init");
  collective_comm_t comm = NULL, side = NULL;
  ok(collective_comm_world(&comm), "collective_comm_world");
  int rank = 0, ranks = 0;
  ok(collective_comm_rank(comm, &rank), "rank");
  ok(collective_comm_size(comm, &ranks), "size");
  g_rank = rank;
  ok(collective_comm_split(comm, 0, rank, &side), "split");
  if (ranks > MAX_RANKS) fail("more ranks than the test's arrays hold", COLLECTIVE_SUCCESS);
  every_collective(comm, rank, ranks);

  static const size_t counts[3] = {0, 7, 70001};
  for (int c = 0; c < 3; ++c) {
    for (int float64 = 0; float64 < 2; ++float64) {
      for (int in_place = 0; in_place < 2; ++in_place) {
        rounds(comm, rank, ranks, counts[c], float64, in_place);
      }
    }
  }

  /* Rank 0 starts while its peers are held back: a second start and a free
   * are refused, the handle stays valid; then the peers start. */
  int64_t send[7], recv[7];
  for (int i = 0; i < 7; ++i) send[i] = input_of(rank, (size_t)i, 3);
  collective_plan_t plan = NULL;
  ok(collective_all_reduce_init(comm, send, recv, 7, COLLECTIVE_INT64, COLLECTIVE_SUM, NULL, &plan),
     "collective_all_reduce_init");
  collective_work_t work = NULL;
  if (ranks > 1 && rank == 0) {
    char text[1024];
    ok(collective_plan_start(plan, &work), "collective_plan_start");
    collective_work_t refused = NULL;
    int status = collective_plan_start(plan, &refused);
    without_numbers(collective_last_error(), text, sizeof text);
    if (status != COLLECTIVE_ERR_INVALID_ARGUMENT || refused != NULL ||
        strcmp(text,
               "all_reduce plan #N (count 7, int64, sum) start (rank 0): the plan's previous "
               "start (all_reduce #N) is still in flight: wait for its Work (or test it until "
               "complete) before starting the plan again") != 0) {
      fail("a second start with the first unfinished was not refused as documented", status);
    }
    collective_plan_t kept = plan;
    status = collective_plan_free(&plan);
    without_numbers(collective_last_error(), text, sizeof text);
    if (status != COLLECTIVE_ERR_INVALID_ARGUMENT || plan != kept ||
        strcmp(text,
               "collective_plan_free (rank 0): all_reduce plan #N (count 7, int64, sum) has a "
               "start in flight (all_reduce #N): wait for its work (collective_work_wait) before "
               "freeing the plan") != 0) {
      fail("freeing a plan with a start in flight was not refused as documented", status);
    }
    ok(collective_barrier(side, NULL), "barrier on the second communicator");
  } else {
    if (ranks > 1) ok(collective_barrier(side, NULL), "barrier on the second communicator");
    ok(collective_plan_start(plan, &work), "collective_plan_start");
  }
  ok(collective_work_wait(work), "collective_work_wait");
  ok(collective_work_free(&work), "collective_work_free");
  for (int i = 0; i < 7; ++i) {
    if (recv[i] != sum_of(ranks, (size_t)i, 3)) {
      printf("FAIL rank %d: held start index %d: expected %lld, actual %lld\n", rank, i,
             (long long)sum_of(ranks, (size_t)i, 3), (long long)recv[i]);
      exit(1);
    }
  }
  ok(collective_plan_free(&plan), "collective_plan_free after the wait");
  collective_plan_t stale = (collective_plan_t)(uintptr_t)1;
  int status = collective_plan_start(stale, &work);
  if (status != COLLECTIVE_ERR_INVALID_ARGUMENT ||
      strstr(collective_last_error(), "was freed") == NULL)
    fail("a freed plan handle was started", status);
  status = collective_plan_start(NULL, &work);
  if (status != COLLECTIVE_ERR_INVALID_ARGUMENT) fail("a NULL plan handle was started", status);
  ok(collective_plan_free(&plan), "collective_plan_free of NULL");

  /* A mismatched creation: COLLECTIVE_ERR_MISMATCH on every rank, no plan. */
  if (ranks > 1) {
    status = collective_all_reduce_init(comm, send, recv, rank == 0 ? 7 : 6, COLLECTIVE_INT64,
                                        COLLECTIVE_SUM, NULL, &plan);
    if (status != COLLECTIVE_ERR_MISMATCH || plan != NULL) {
      fail("a mismatched creation did not give COLLECTIVE_ERR_MISMATCH", status);
    }
  }

  ok(collective_comm_free(&side), "free side");
  ok(collective_comm_free(&comm), "free comm");
  ok(collective_finalize(), "collective_finalize");
  if (rank == 0) printf("c_api_plan_test: %d ranks passed\n", ranks);
  return 0;
}
