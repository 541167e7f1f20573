/* An unmodified MPI program's nonblocking collectives, run with and without
 * the drop-in (run_dropin_test.py, mode "nonblocking"):
 *   default   every MPI_I* collective the drop-in serves, several in flight
 *             at once, mixed with MPI_Isend/MPI_Irecv and with calls it
 *             passes (rooted MPI_I* forms, a non-commutative user op),
 *             completed by MPI_Wait, MPI_Test, MPI_Waitall, MPI_Waitany,
 *             MPI_Testall and MPI_Testany; every element checked. Then a
 *             start followed by a rendezvous send that the peer receives
 *             before its own start (a start waits for nobody), then
 *             MPI_Cancel (refused, the call still completes) and, with
 *             --expect-served, MPI_Request_free (the call still runs; the
 *             next blocking collective is its end).
 *   --mismatch  (served only) rank 1 starts MPI_Iallreduce with one element
 *             more than the others: the start succeeds everywhere, MPI_Wait
 *             returns MPI_ERR_ARG on every rank (MPI_ERRORS_RETURN), and the
 *             next call is served and exact.
 *   --init-funneled  starts MPI with MPI_Init_thread(MPI_THREAD_FUNNELED)
 *             instead of MPI_Init; prints the level MPI reports.
 * Every rank prints how many calls of each MPI_I* function it made and how
 * many of those the drop-in is to pass; a failure names the rank, the call,
 * the index, expected and actual, and fails the run. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
  F_IALLREDUCE,
  F_IREDUCE_SCATTER_BLOCK,
  F_IALLGATHER,
  F_IBCAST,
  F_IREDUCE,
  F_IBARRIER,
  F_IALLTOALL,
  F_IALLTOALLV,
  F_IALLGATHERV,
  F_IREDUCE_SCATTER,
  F_IGATHER,
  F_IGATHERV,
  F_ISCATTER,
  F_ISCATTERV,
  NUM_FUNCTIONS
};
static const char* const kNames[NUM_FUNCTIONS] = {"MPI_Iallreduce",  "MPI_Ireduce_scatter_block",
                                                  "MPI_Iallgather",  "MPI_Ibcast",
                                                  "MPI_Ireduce",     "MPI_Ibarrier",
                                                  "MPI_Ialltoall",   "MPI_Ialltoallv",
                                                  "MPI_Iallgatherv", "MPI_Ireduce_scatter",
                                                  "MPI_Igather",     "MPI_Igatherv",
                                                  "MPI_Iscatter",    "MPI_Iscatterv"};
static long g_calls[NUM_FUNCTIONS], g_passed[NUM_FUNCTIONS];
static int g_rank, g_size, g_failures;
static MPI_Comm g_dup; /* a second communicator of the same ranks */

#define CALL(function, expr)                                                             \
  do {                                                                                   \
    ++g_calls[function];                                                                 \
    int rc_ = (expr);                                                                    \
    if (rc_ != MPI_SUCCESS) {                                                            \
      fprintf(stderr, "rank %d: FAIL: %s returned %d\n", g_rank, kNames[function], rc_); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                      \
    }                                                                                    \
  } while (0)
#define CHECK_MPI(expr)                                                                         \
  do {                                                                                          \
    int rc_ = (expr);                                                                           \
    if (rc_ != MPI_SUCCESS) {                                                                   \
      fprintf(stderr, "rank %d: FAIL line %d: %s returned %d\n", g_rank, __LINE__, #expr, rc_); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                             \
    }                                                                                           \
  } while (0)

static void expect_int(const char* what, int round, long index, long want, long got) {
  if (want == got) return;
  if (++g_failures <= 20) {
    fprintf(stderr, "rank %d: FAIL: %s round %d index %ld: expected %ld, actual %ld\n", g_rank,
            what, round, index, want, got);
  }
}

static int value(int rank, long i, int round) { return (rank + 1) * (int)(i % 97 + 1) + round; }

/* A non-commutative op (served by nobody but MPI): a o b = b when a's
 * second half is ... simply the left operand, which MPI must apply in rank
 * order: the result is rank 0's input. */
static void first_of(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  memcpy(inout, in, sizeof(int) * (size_t)*len);
}

static void complete_by_test(MPI_Request* request) {
  int done = 0;
  while (!done) CHECK_MPI(MPI_Test(request, &done, MPI_STATUS_IGNORE));
}

static void round_of_calls(int round, int expect_served) {
  const int n = g_size, r = g_rank;
  const long sum_ranks = (long)n * (n + 1) / 2;
  MPI_Request reqs[24];
  int nreq = 0;
  (void)expect_served;

  /* Iallreduce, with a point-to-point ring around it. */
  const long ar_count = 100003;
  int* ar_send = malloc(sizeof(int) * ar_count);
  int* ar_recv = malloc(sizeof(int) * ar_count);
  for (long i = 0; i < ar_count; ++i) ar_send[i] = value(r, i, round);
  int ring_out[64], ring_in[64];
  for (int i = 0; i < 64; ++i) ring_out[i] = r * 100 + i + round;
  MPI_Request group_a[3];
  CHECK_MPI(MPI_Irecv(ring_in, 64, MPI_INT, (r + n - 1) % n, 5, MPI_COMM_WORLD, &group_a[0]));
  CALL(F_IALLREDUCE, MPI_Iallreduce(ar_send, ar_recv, (int)ar_count, MPI_INT, MPI_SUM,
                                    MPI_COMM_WORLD, &group_a[1]));
  CHECK_MPI(MPI_Isend(ring_out, 64, MPI_INT, (r + 1) % n, 5, MPI_COMM_WORLD, &group_a[2]));

  /* In place, doubles, MAX. */
  double inplace[777];
  for (int i = 0; i < 777; ++i) inplace[i] = (double)((i * 7 + r * 13) % 101) + round;
  MPI_Request inplace_req;
  /* On a second communicator, while world's calls are in flight. */
  CALL(F_IALLREDUCE,
       MPI_Iallreduce(MPI_IN_PLACE, inplace, 777, MPI_DOUBLE, MPI_MAX, g_dup, &inplace_req));

  /* Ireduce_scatter_block. */
  const int rsb = 517;
  int* rsb_send = malloc(sizeof(int) * (size_t)(rsb * n));
  int rsb_recv[517];
  for (long i = 0; i < (long)rsb * n; ++i) rsb_send[i] = value(r, i, round);
  MPI_Request rsb_req;
  CALL(F_IREDUCE_SCATTER_BLOCK, MPI_Ireduce_scatter_block(rsb_send, rsb_recv, rsb, MPI_INT, MPI_SUM,
                                                          MPI_COMM_WORLD, &rsb_req));

  /* Iallgather. */
  const int ag = 333;
  int ag_send[333];
  int* ag_recv = malloc(sizeof(int) * (size_t)(ag * n));
  for (int i = 0; i < ag; ++i) ag_send[i] = value(r, i, round);
  MPI_Request ag_req;
  CALL(F_IALLGATHER,
       MPI_Iallgather(ag_send, ag, MPI_INT, ag_recv, ag, MPI_INT, MPI_COMM_WORLD, &ag_req));

  /* Ibcast, Ireduce, Ibarrier: by MPI_Waitany. */
  MPI_Request group_b[3];
  char bc[1001];
  const int bc_root = n - 1;
  for (int i = 0; i < 1001; ++i) bc[i] = (char)(r == bc_root ? (i * 3 + round) % 128 : 0);
  CALL(F_IBCAST, MPI_Ibcast(bc, 1001, MPI_CHAR, bc_root, MPI_COMM_WORLD, &group_b[0]));
  double red_send[200], red_recv[200];
  for (int i = 0; i < 200; ++i) red_send[i] = (double)((i + r * 31) % 53) + round;
  CALL(F_IREDUCE,
       MPI_Ireduce(red_send, red_recv, 200, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD, &group_b[1]));
  CALL(F_IBARRIER, MPI_Ibarrier(MPI_COMM_WORLD, &group_b[2]));

  /* A blocking call between the starts: served, it takes its turn behind
   * the calls in flight. */
  int blocking_in = r + round, blocking_out = -1;
  CHECK_MPI(MPI_Allreduce(&blocking_in, &blocking_out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  expect_int("MPI_Allreduce between starts", round, 0, sum_ranks - n + (long)n * round,
             blocking_out);

  /* MPI_Ialltoallv of NULL buffers with every count zero (mpi4py's empty
   * DLPack arrays): served, a no-op. It crashed the progress thread. Open
   * MPI accepts the call; MPICH calls the two NULLs aliased. */
#if defined(OPEN_MPI)
  int zeros[8] = {0};
  MPI_Request empty;
  CALL(F_IALLTOALLV, MPI_Ialltoallv(NULL, zeros, zeros, MPI_INT, NULL, zeros, zeros, MPI_INT,
                                    MPI_COMM_WORLD, &empty));
  CHECK_MPI(MPI_Wait(&empty, MPI_STATUS_IGNORE));
#endif

  /* Ialltoall, Ialltoallv, Iallgatherv: by MPI_Testany. */
  MPI_Request group_c[3];
  int* a2a_send = malloc(sizeof(int) * (size_t)(7 * n));
  int* a2a_recv = malloc(sizeof(int) * (size_t)(7 * n));
  for (int p = 0; p < n; ++p)
    for (int i = 0; i < 7; ++i) a2a_send[p * 7 + i] = r * 10000 + p * 100 + i + round;
  CALL(F_IALLTOALL,
       MPI_Ialltoall(a2a_send, 7, MPI_INT, a2a_recv, 7, MPI_INT, MPI_COMM_WORLD, &group_c[0]));
  int scounts[8], sdispls[8], rcounts[8], rdispls[8];
  int stotal = 0, rtotal = 0;
  for (int p = 0; p < n; ++p) {
    scounts[p] = (r + 2 * p) % 3 + (p == 1 ? 0 : 1); /* peer 1 gets 0 or 1 */
    rcounts[p] = (p + 2 * r) % 3 + (r == 1 ? 0 : 1);
    sdispls[p] = stotal;
    rdispls[p] = rtotal;
    stotal += scounts[p];
    rtotal += rcounts[p];
  }
  int* v_send = malloc(sizeof(int) * (size_t)(stotal + 1));
  int* v_recv = malloc(sizeof(int) * (size_t)(rtotal + 1));
  for (int p = 0; p < n; ++p)
    for (int i = 0; i < scounts[p]; ++i) v_send[sdispls[p] + i] = r * 1000 + p * 10 + i + round;
  CALL(F_IALLTOALLV, MPI_Ialltoallv(v_send, scounts, sdispls, MPI_INT, v_recv, rcounts, rdispls,
                                    MPI_INT, MPI_COMM_WORLD, &group_c[1]));
  int agv_counts[8], agv_displs[8], agv_total = 0;
  for (int p = 0; p < n; ++p) {
    agv_counts[p] = p + 2;
    agv_displs[p] = agv_total;
    agv_total += agv_counts[p];
  }
  int agv_send[16];
  int* agv_recv = malloc(sizeof(int) * (size_t)agv_total);
  for (int i = 0; i < r + 2; ++i) agv_send[i] = value(r, i, round);
  CALL(F_IALLGATHERV, MPI_Iallgatherv(agv_send, r + 2, MPI_INT, agv_recv, agv_counts, agv_displs,
                                      MPI_INT, MPI_COMM_WORLD, &group_c[2]));

  /* Ireduce_scatter, the rooted forms (passed), a non-commutative op
   * (passed): by MPI_Testall. */
  int rs_counts[8], rs_total = 0;
  for (int p = 0; p < n; ++p) {
    rs_counts[p] = p == 1 ? 0 : 5 * p + 3;
    rs_total += rs_counts[p];
  }
  int* rs_send = malloc(sizeof(int) * (size_t)rs_total);
  int rs_recv[64];
  for (int i = 0; i < rs_total; ++i) rs_send[i] = value(r, i, round);
  CALL(F_IREDUCE_SCATTER, MPI_Ireduce_scatter(rs_send, rs_recv, rs_counts, MPI_INT, MPI_SUM,
                                              MPI_COMM_WORLD, &reqs[nreq++]));
  int g_send[4], *g_recv = malloc(sizeof(int) * (size_t)(4 * n));
  for (int i = 0; i < 4; ++i) g_send[i] = value(r, i, round);
  ++g_passed[F_IGATHER];
  CALL(F_IGATHER,
       MPI_Igather(g_send, 4, MPI_INT, g_recv, 4, MPI_INT, 0, MPI_COMM_WORLD, &reqs[nreq++]));
  int* gv_recv = malloc(sizeof(int) * (size_t)agv_total);
  ++g_passed[F_IGATHERV];
  CALL(F_IGATHERV, MPI_Igatherv(agv_send, r + 2, MPI_INT, gv_recv, agv_counts, agv_displs, MPI_INT,
                                n - 1, MPI_COMM_WORLD, &reqs[nreq++]));
  int* s_send = malloc(sizeof(int) * (size_t)(3 * n));
  for (int i = 0; i < 3 * n; ++i) s_send[i] = i * 11 + round;
  int s_recv[3];
  ++g_passed[F_ISCATTER];
  CALL(F_ISCATTER,
       MPI_Iscatter(s_send, 3, MPI_INT, s_recv, 3, MPI_INT, 0, MPI_COMM_WORLD, &reqs[nreq++]));
  int sv_recv[16];
  ++g_passed[F_ISCATTERV];
  int* sv_send = malloc(sizeof(int) * (size_t)agv_total);
  for (int i = 0; i < agv_total; ++i) sv_send[i] = i * 11 + round;
  CALL(F_ISCATTERV, MPI_Iscatterv(sv_send, agv_counts, agv_displs, MPI_INT, sv_recv, r + 2, MPI_INT,
                                  0, MPI_COMM_WORLD, &reqs[nreq++]));
  MPI_Op first;
  MPI_Op_create(first_of, 0, &first);
  int nc_send[50], nc_recv[50];
  for (int i = 0; i < 50; ++i) nc_send[i] = r * 50 + i + round;
  ++g_passed[F_IALLREDUCE];
  CALL(F_IALLREDUCE,
       MPI_Iallreduce(nc_send, nc_recv, 50, MPI_INT, first, MPI_COMM_WORLD, &reqs[nreq++]));

  /* Complete: every method once. */
  CHECK_MPI(MPI_Wait(&rsb_req, MPI_STATUS_IGNORE));
  complete_by_test(&ag_req);
  MPI_Status statuses[3];
  CHECK_MPI(MPI_Waitall(3, group_a, statuses));
  CHECK_MPI(MPI_Wait(&inplace_req, MPI_STATUS_IGNORE));
  for (int k = 0; k < 3; ++k) {
    int index = -1;
    CHECK_MPI(MPI_Waitany(3, group_b, &index, MPI_STATUS_IGNORE));
    if (index < 0 || index > 2) expect_int("MPI_Waitany index", round, k, 0, index);
  }
  for (int left = 3; left > 0;) {
    int index = -1, done = 0;
    CHECK_MPI(MPI_Testany(3, group_c, &index, &done, MPI_STATUS_IGNORE));
    if (done && index != MPI_UNDEFINED) --left;
  }
  /* Real statuses: MPICH's MPI_STATUSES_IGNORE is a pointer GCC's
     -Wstringop-overflow takes for an empty array. */
  MPI_Status* all_statuses = malloc(sizeof(MPI_Status) * (size_t)nreq);
  for (int done = 0; !done;) CHECK_MPI(MPI_Testall(nreq, reqs, &done, all_statuses));
  free(all_statuses);
  MPI_Op_free(&first);

  /* Every element. */
  for (long i = 0; i < ar_count; ++i)
    expect_int("MPI_Iallreduce", round, i, (i % 97 + 1) * sum_ranks + (long)n * round, ar_recv[i]);
  for (int i = 0; i < 64; ++i)
    expect_int("MPI_Irecv", round, i, ((r + n - 1) % n) * 100 + i + round, ring_in[i]);
  for (int i = 0; i < 777; ++i) {
    int best = 0;
    for (int p = 0; p < n; ++p) {
      const int v = (i * 7 + p * 13) % 101;
      if (v > best) best = v;
    }
    expect_int("MPI_Iallreduce in place", round, i, best + round, (long)inplace[i]);
  }
  for (int i = 0; i < rsb; ++i) {
    const long global = (long)r * rsb + i;
    expect_int("MPI_Ireduce_scatter_block", round, i,
               (global % 97 + 1) * sum_ranks + (long)n * round, rsb_recv[i]);
  }
  for (int p = 0; p < n; ++p)
    for (int i = 0; i < ag; ++i)
      expect_int("MPI_Iallgather", round, (long)p * ag + i, value(p, i, round),
                 ag_recv[p * ag + i]);
  for (int i = 0; i < 1001; ++i) expect_int("MPI_Ibcast", round, i, (i * 3 + round) % 128, bc[i]);
  if (r == 0) {
    for (int i = 0; i < 200; ++i) {
      int best = 0;
      for (int p = 0; p < n; ++p) {
        const int v = (i + p * 31) % 53;
        if (v > best) best = v;
      }
      expect_int("MPI_Ireduce", round, i, best + round, (long)red_recv[i]);
    }
  }
  for (int p = 0; p < n; ++p)
    for (int i = 0; i < 7; ++i)
      expect_int("MPI_Ialltoall", round, p * 7 + i, p * 10000 + r * 100 + i + round,
                 a2a_recv[p * 7 + i]);
  for (int p = 0; p < n; ++p)
    for (int i = 0; i < rcounts[p]; ++i)
      expect_int("MPI_Ialltoallv", round, rdispls[p] + i, p * 1000 + r * 10 + i + round,
                 v_recv[rdispls[p] + i]);
  for (int p = 0; p < n; ++p)
    for (int i = 0; i < p + 2; ++i)
      expect_int("MPI_Iallgatherv", round, agv_displs[p] + i, value(p, i, round),
                 agv_recv[agv_displs[p] + i]);
  int rs_offset = 0;
  for (int p = 0; p < r; ++p) rs_offset += rs_counts[p];
  for (int i = 0; i < rs_counts[r]; ++i)
    expect_int("MPI_Ireduce_scatter", round, i,
               ((rs_offset + i) % 97 + 1) * sum_ranks + (long)n * round, rs_recv[i]);
  if (r == 0)
    for (int p = 0; p < n; ++p)
      for (int i = 0; i < 4; ++i)
        expect_int("MPI_Igather", round, p * 4 + i, value(p, i, round), g_recv[p * 4 + i]);
  if (r == n - 1)
    for (int p = 0; p < n; ++p)
      for (int i = 0; i < p + 2; ++i)
        expect_int("MPI_Igatherv", round, agv_displs[p] + i, value(p, i, round),
                   gv_recv[agv_displs[p] + i]);
  for (int i = 0; i < 3; ++i)
    expect_int("MPI_Iscatter", round, i, (r * 3 + i) * 11 + round, s_recv[i]);
  for (int i = 0; i < r + 2; ++i)
    expect_int("MPI_Iscatterv", round, i, (agv_displs[r] + i) * 11 + round, sv_recv[i]);
  for (int i = 0; i < 50; ++i)
    expect_int("MPI_Iallreduce non-commutative", round, i, i + round, nc_recv[i]);

  free(ar_send);
  free(ar_recv);
  free(rsb_send);
  free(ag_recv);
  free(a2a_send);
  free(a2a_recv);
  free(v_send);
  free(v_recv);
  free(agv_recv);
  free(rs_send);
  free(g_recv);
  free(gv_recv);
  free(s_send);
  free(sv_send);
}

/* Starting a nonblocking collective waits for nobody (MPI requires it):
 * rank 0 starts MPI_Iallreduce and MPI_Ibarrier, then sends 1 MiB to rank
 * 1 (rendezvous: the send ends only once rank 1 receives), which receives
 * before it starts the same calls. A start that waited for the other ranks
 * would hang here. */
static void start_is_local(void) {
  if (g_size < 2) return;
  enum { kBig = 1 << 18 };
  int* big = malloc(sizeof(int) * kBig);
  int in[16], out[16];
  for (int i = 0; i < 16; ++i) in[i] = g_rank * 3 + i;
  MPI_Request requests[2];
  if (g_rank == 0) {
    for (int i = 0; i < kBig; ++i) big[i] = i ^ 0x5a5a;
    CALL(F_IALLREDUCE, MPI_Iallreduce(in, out, 16, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &requests[0]));
    CALL(F_IBARRIER, MPI_Ibarrier(MPI_COMM_WORLD, &requests[1]));
    CHECK_MPI(MPI_Send(big, kBig, MPI_INT, 1, 9, MPI_COMM_WORLD));
  } else {
    if (g_rank == 1) {
      CHECK_MPI(MPI_Recv(big, kBig, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      for (int i = 0; i < kBig; i += 4099)
        expect_int("MPI_Recv after a start", 0, i, i ^ 0x5a5a, big[i]);
    }
    CALL(F_IALLREDUCE, MPI_Iallreduce(in, out, 16, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &requests[0]));
    CALL(F_IBARRIER, MPI_Ibarrier(MPI_COMM_WORLD, &requests[1]));
  }
  MPI_Status two_statuses[2];
  CHECK_MPI(MPI_Waitall(2, requests, two_statuses));
  const long sum_ranks = (long)g_size * (g_size - 1) / 2;
  for (int i = 0; i < 16; ++i)
    expect_int("MPI_Iallreduce started before a send", 0, i, 3 * sum_ranks + (long)g_size * i,
               out[i]);
  free(big);
}

/* MPI_Cancel is refused (MPI_ERR_REQUEST) and the call completes; a freed
 * request's call still runs to its end before the next blocking call. */
static void cancel_and_free(int expect_served) {
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int in[10], out[10];
  for (int i = 0; i < 10; ++i) in[i] = g_rank + i;
  MPI_Request request;
  CALL(F_IALLREDUCE, MPI_Iallreduce(in, out, 10, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &request));
  const int rc = MPI_Cancel(&request);
  MPI_Status status;
  CHECK_MPI(MPI_Wait(&request, &status));
  int cancelled = -1;
  MPI_Test_cancelled(&status, &cancelled);
  if (expect_served) {
    int error_class = -1;
    MPI_Error_class(rc, &error_class);
    expect_int("MPI_Cancel's error class", 0, 0, MPI_ERR_REQUEST, error_class);
  }
  expect_int("MPI_Test_cancelled", 0, 0, 0, cancelled);
  const long sum_ranks = (long)g_size * (g_size - 1) / 2;
  for (int i = 0; i < 10; ++i)
    expect_int("MPI_Iallreduce after MPI_Cancel", 0, i, sum_ranks + (long)g_size * i, out[i]);
  if (expect_served) {
    for (int i = 0; i < 10; ++i) out[i] = -1;
    CALL(F_IALLREDUCE, MPI_Iallreduce(in, out, 10, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &request));
    CHECK_MPI(MPI_Request_free(&request));
    if (request != MPI_REQUEST_NULL) expect_int("MPI_Request_free's handle", 0, 0, 0, 1);
    MPI_Barrier(MPI_COMM_WORLD); /* served: runs after every call in flight */
    for (int i = 0; i < 10; ++i)
      expect_int("MPI_Iallreduce of a freed request", 0, i, sum_ranks + (long)g_size * i, out[i]);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

static void mismatch(void) {
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int in[11], out[11];
  for (int i = 0; i < 11; ++i) in[i] = g_rank + i;
  MPI_Request request;
  const int count = g_rank == 1 ? 11 : 10;
  int rc = MPI_Iallreduce(in, out, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &request);
  ++g_calls[F_IALLREDUCE];
  expect_int("MPI_Iallreduce start (mismatched count)", 0, 0, MPI_SUCCESS, rc);
  rc = MPI_Wait(&request, MPI_STATUS_IGNORE);
  int error_class = MPI_SUCCESS;
  MPI_Error_class(rc, &error_class);
  expect_int("MPI_Wait's error class after a mismatch", 0, 0,
             g_size > 1 ? MPI_ERR_ARG : MPI_SUCCESS, error_class);
  if (request != MPI_REQUEST_NULL) expect_int("MPI_Wait's request handle", 0, 0, 0, 1);
  CALL(F_IALLREDUCE, MPI_Iallreduce(in, out, 10, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &request));
  CHECK_MPI(MPI_Wait(&request, MPI_STATUS_IGNORE));
  const long sum_ranks = (long)g_size * (g_size - 1) / 2;
  for (int i = 0; i < 10; ++i)
    expect_int("MPI_Iallreduce after a mismatch", 0, i, sum_ranks + (long)g_size * i, out[i]);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char** argv) {
  int funneled = 0, expect_served = 0, mismatched = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--init-funneled")) funneled = 1;
    else if (!strcmp(argv[i], "--expect-served")) expect_served = 1;
    else if (!strcmp(argv[i], "--mismatch")) mismatched = 1;
  }
  int provided = -1;
  if (funneled) MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  else MPI_Init(&argc, &argv);
  int level = -1;
  MPI_Query_thread(&level);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  if (g_rank == 0)
    printf("dropin_nonblocking_program: thread level provided %d, query %d\n", provided, level);
  if (mismatched) {
    mismatch();
  } else {
    MPI_Comm_dup(MPI_COMM_WORLD, &g_dup);
    for (int round = 0; round < 3; ++round) round_of_calls(round, expect_served);
    MPI_Comm_free(&g_dup);
    start_is_local();
    cancel_and_free(expect_served);
  }
  int failed = 0;
  MPI_Allreduce(&g_failures, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  char line[2048];
  int used = snprintf(line, sizeof line, "dropin_program rank %d calls:", g_rank);
  for (int i = 0; i < NUM_FUNCTIONS; ++i)
    used += snprintf(line + used, sizeof line - (size_t)used, " %s %ld;", kNames[i], g_calls[i]);
  used += snprintf(line + used, sizeof line - (size_t)used, " to pass:");
  for (int i = 0; i < NUM_FUNCTIONS; ++i)
    used += snprintf(line + used, sizeof line - (size_t)used, " %s %ld,", kNames[i], g_passed[i]);
  fprintf(stderr, "%s\n", line);
  MPI_Finalize();
  if (failed) {
    fprintf(stderr, "rank %d: FAIL: %d mismatches here; some rank failed\n", g_rank, g_failures);
    return 1;
  }
  if (g_rank == 0) printf("dropin_nonblocking_program: OK on %d ranks\n", g_size);
  return 0;
}
