/* An ordinary MPI program, knowing nothing of libcollective: it checks
 * exact results of MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Allgather,
 * MPI_Bcast, MPI_Reduce and MPI_Barrier over many datatypes, ops, counts,
 * roots, in-place forms and communicators (dup, split, reversed, freed
 * and made again, an intercommunicator), including calls the drop-in must
 * pass to PMPI (derived and 16-bit types, bitwise and user ops, MAXLOC).
 * run_dropin_test.sh runs it with and without libcollective_mpi.so.
 *
 * At the end every rank prints how many calls of each function it made,
 * so that the drop-in's summary (served + passed) can be checked against
 * it: libcollective's own MPI calls must not be counted (or served).
 *
 *   dropin_program              the checks above
 *   dropin_program --threads    MPI_THREAD_MULTIPLE, three threads at once on
 *                               separate communicators
 *   dropin_program --mismatch   ranks disagree on a count: with the drop-in,
 *                               the communicator's error handler must see it */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_rank, g_size;
static _Atomic long g_failures; /* threads mode: several threads may fail */
enum { NUM_FUNCTIONS = 14 };
/* Allreduce, Reduce_scatter_block, Allgather, Bcast, Reduce, Barrier,
 * Alltoall, Alltoallv, Allgatherv, Reduce_scatter, Gather, Gatherv, Scatter, Scatterv */
static long g_calls[NUM_FUNCTIONS];
static const char* const kNames[NUM_FUNCTIONS] = {"MPI_Allreduce",  "MPI_Reduce_scatter_block",
                                                  "MPI_Allgather",  "MPI_Bcast",
                                                  "MPI_Reduce",     "MPI_Barrier",
                                                  "MPI_Alltoall",   "MPI_Alltoallv",
                                                  "MPI_Allgatherv", "MPI_Reduce_scatter",
                                                  "MPI_Gather",     "MPI_Gatherv",
                                                  "MPI_Scatter",    "MPI_Scatterv"};
enum { ALLTOALL = 6, ALLTOALLV, ALLGATHERV, REDUCE_SCATTER, GATHER, GATHERV, SCATTER, SCATTERV };

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

/* --- typed values ------------------------------------------------------ */

typedef struct {
  MPI_Datatype type;
  const char* name;
  int bytes;
  char kind; /* 'i' signed, 'u' unsigned, 'f' floating */
} TypeInfo;

enum { OP_SUM, OP_PROD, OP_MIN, OP_MAX, OP_BAND, OP_BXOR, OP_USER, NUM_OPS };
static const char* const kOpNames[NUM_OPS] = {"SUM", "PROD", "MIN", "MAX", "BAND", "BXOR", "user"};
static MPI_Op g_ops[NUM_OPS];

static void user_sum_int(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  for (int i = 0; i < *len; ++i) ((int*)inout)[i] += ((int*)in)[i];
}

static uint64_t mask_of(int bytes) { return bytes == 8 ? ~0ull : (1ull << (8 * bytes)) - 1; }

/* Rank r's element i for an op: small, signed where the type is; unsigned
 * SUM inputs sit near the top of the range, so the sum wraps around. */
static uint64_t int_value(const TypeInfo* t, int op, int r, size_t i) {
  if (t->kind == 'u') {
    uint64_t base = (i + 3u * (unsigned)r) % 4u;
    /* Not for 1-byte types: Open MPI 4.1.4's own MPI_SUM on
     * MPI_UNSIGNED_CHAR saturates (its AVX op component) instead of wrapping. */
    if (op == OP_SUM && (i % 2) && t->bytes >= 4) base += mask_of(t->bytes) - 7;
    return base & mask_of(t->bytes);
  }
  return (uint64_t)((int64_t)((i + 3u * (unsigned)r) % 5u) - 2) & mask_of(t->bytes);
}

static int64_t sign_extend(uint64_t v, int bytes) {
  if (bytes == 8) return (int64_t)v;
  uint64_t sign = 1ull << (8 * bytes - 1);
  return (int64_t)((v ^ sign) - sign);
}

static uint64_t int_expected(const TypeInfo* t, int op, size_t i, int ranks) {
  uint64_t acc = int_value(t, op, 0, i);
  for (int r = 1; r < ranks; ++r) {
    uint64_t v = int_value(t, op, r, i);
    switch (op) {
      case OP_SUM:
      case OP_USER: acc += v; break;
      case OP_PROD: acc *= v; break;
      case OP_BAND: acc &= v; break;
      case OP_BXOR: acc ^= v; break;
      case OP_MIN:
      case OP_MAX: {
        int less = t->kind == 'u' ? v < acc : sign_extend(v, t->bytes) < sign_extend(acc, t->bytes);
        if ((op == OP_MIN) == less) acc = v;
        break;
      }
    }
    acc &= mask_of(t->bytes);
  }
  return acc & mask_of(t->bytes);
}

static double float_value(int r, size_t i) {
  return (double)((int)((i + 3u * (unsigned)r) % 5u) - 2);
}

static double float_expected(int op, size_t i, int ranks) {
  double acc = float_value(0, i);
  for (int r = 1; r < ranks; ++r) {
    double v = float_value(r, i);
    if (op == OP_SUM) acc += v;
    else if (op == OP_PROD) acc *= v;
    else if (op == OP_MIN) acc = v < acc ? v : acc;
    else acc = v > acc ? v : acc;
  }
  return acc;
}

static void store(void* buffer, const TypeInfo* t, size_t i, int op, int r, size_t value_index) {
  char* at = (char*)buffer + i * (size_t)t->bytes;
  if (t->kind == 'f') {
    double v = float_value(r, value_index);
    if (t->bytes == 4) {
      float f = (float)v;
      memcpy(at, &f, 4);
    } else memcpy(at, &v, 8);
  } else {
    uint64_t v = int_value(t, op, r, value_index);
    memcpy(at, &v, (size_t)t->bytes); /* little-endian: the low bytes */
  }
}

/* Compares element i with the reduction of value index `value_index`. */
static int matches(const void* buffer, const TypeInfo* t, size_t i, int op, size_t value_index,
                   int ranks, char* detail, size_t detail_size) {
  const char* at = (const char*)buffer + i * (size_t)t->bytes;
  if (t->kind == 'f') {
    double got;
    if (t->bytes == 4) {
      float f;
      memcpy(&f, at, 4);
      got = f;
    } else memcpy(&got, at, 8);
    double want = float_expected(op, value_index, ranks);
    snprintf(detail, detail_size, "expected %g, actual %g", want, got);
    return got == want;
  }
  uint64_t got = 0;
  memcpy(&got, at, (size_t)t->bytes);
  uint64_t want = int_expected(t, op, value_index, ranks);
  snprintf(detail, detail_size, "expected %llu, actual %llu", (unsigned long long)want,
           (unsigned long long)got);
  return got == want;
}

static const TypeInfo kTypes[] = {
    {MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", 1, 'i'},
    {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", 1, 'u'},
    {MPI_INT8_T, "MPI_INT8_T", 1, 'i'},
    {MPI_SHORT, "MPI_SHORT", 2, 'i'},
    {MPI_INT, "MPI_INT", 4, 'i'},
    {MPI_UNSIGNED, "MPI_UNSIGNED", 4, 'u'},
    {MPI_UINT32_T, "MPI_UINT32_T", 4, 'u'},
    {MPI_LONG, "MPI_LONG", (int)sizeof(long), 'i'},
    {MPI_LONG_LONG, "MPI_LONG_LONG", 8, 'i'},
    {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", (int)sizeof(long), 'u'},
    {MPI_INT64_T, "MPI_INT64_T", 8, 'i'},
    {MPI_FLOAT, "MPI_FLOAT", 4, 'f'},
    {MPI_DOUBLE, "MPI_DOUBLE", 8, 'f'},
};
enum { NUM_TYPES = sizeof(kTypes) / sizeof(kTypes[0]) };
static const size_t kCounts[] = {0, 1, 7, 1000};

static int op_applies(const TypeInfo* t, int op) {
  if (t->kind == 'f' && (op == OP_BAND || op == OP_BXOR)) return 0;
  if (op == OP_USER) return t->type == MPI_INT;
  return 1;
}

/* --- the collectives -------------------------------------------------- */

static void check_buffer(const char* what, const char* comm_name, const TypeInfo* t, int op,
                         size_t count, const void* buffer, size_t first_value, int ranks) {
  char detail[200];
  for (size_t i = 0; i < count; ++i) {
    if (!matches(buffer, t, i, op, first_value + i, ranks, detail, sizeof detail)) {
      FAIL("%s on %s type=%s op=%s count=%zu index %zu: %s", what, comm_name, t->name, kOpNames[op],
           count, i, detail);
      return;
    }
  }
}

static void reductions(MPI_Comm comm, const char* comm_name, int all_types) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  for (int ti = 0; ti < NUM_TYPES; ++ti) {
    const TypeInfo* t = &kTypes[ti];
    if (!all_types && t->type != MPI_INT && t->type != MPI_DOUBLE) continue;
    for (int op = 0; op < NUM_OPS; ++op) {
      if (!op_applies(t, op) || (!all_types && op != OP_SUM)) continue;
      for (size_t c = 0; c < sizeof kCounts / sizeof kCounts[0]; ++c) {
        const size_t count = kCounts[c], all = count * (size_t)size;
        char* send = calloc(all + 1, (size_t)t->bytes);
        char* recv = calloc(all + 1, (size_t)t->bytes);
        for (size_t i = 0; i < all; ++i) store(send, t, i, op, rank, i);

        MPI_OK(MPI_Allreduce(send, recv, (int)count, t->type, g_ops[op], comm), 0);
        check_buffer("MPI_Allreduce", comm_name, t, op, count, recv, 0, size);
        memcpy(recv, send, count * (size_t)t->bytes);
        MPI_OK(MPI_Allreduce(MPI_IN_PLACE, recv, (int)count, t->type, g_ops[op], comm), 0);
        check_buffer("MPI_Allreduce in place", comm_name, t, op, count, recv, 0, size);

        MPI_OK(MPI_Reduce_scatter_block(send, recv, (int)count, t->type, g_ops[op], comm), 1);
        check_buffer("MPI_Reduce_scatter_block", comm_name, t, op, count, recv,
                     (size_t)rank * count, size);
        memcpy(recv, send, all * (size_t)t->bytes);
        MPI_OK(MPI_Reduce_scatter_block(MPI_IN_PLACE, recv, (int)count, t->type, g_ops[op], comm),
               1);
        check_buffer("MPI_Reduce_scatter_block in place", comm_name, t, op, count, recv,
                     (size_t)rank * count, size);

        for (int root = 0; root < size; ++root) {
          memset(recv, 0, all * (size_t)t->bytes);
          MPI_OK(MPI_Reduce(send, recv, (int)count, t->type, g_ops[op], root, comm), 4);
          if (rank == root) check_buffer("MPI_Reduce", comm_name, t, op, count, recv, 0, size);
#ifdef MPICH_VERSION
          /* MPICH 4.0.2 (Debian) itself crashes on an in-place MPI_Reduce at
           * a root other than 0 from about 1000 elements (it reads through
           * MPI_IN_PLACE), so the plain run could not pass there. */
          if (root != 0 && count > 7) continue;
#endif
          memcpy(recv, send, count * (size_t)t->bytes);
          MPI_OK(MPI_Reduce(rank == root ? MPI_IN_PLACE : send, recv, (int)count, t->type,
                            g_ops[op], root, comm),
                 4);
          if (rank == root)
            check_buffer("MPI_Reduce in place", comm_name, t, op, count, recv, 0, size);
        }
        free(send);
        free(recv);
      }
    }
  }
  /* MAXLOC on MPI_2INT: always passed through, still exact. */
  struct {
    int value, index;
  } pair = {rank % 2, rank}, best;
  MPI_OK(MPI_Allreduce(&pair, &best, 1, MPI_2INT, MPI_MAXLOC, comm), 0);
  if (best.value != (size > 1 ? 1 : 0) || best.index != (size > 1 ? 1 : 0))
    FAIL("MPI_Allreduce MAXLOC on %s: expected (%d,%d), actual (%d,%d)", comm_name, size > 1,
         size > 1, best.value, best.index);
}

static void data_movement(MPI_Comm comm, const char* comm_name) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int counts[] = {0, 1, 1000, 262144}; /* up to 1 MiB of ints */
  MPI_Datatype triple, strided;
  MPI_Type_contiguous(3, MPI_INT, &triple); /* derived but contiguous: served as bytes */
  MPI_Type_commit(&triple);
  MPI_Type_vector(2, 1, 2, MPI_INT, &strided); /* gaps: passed through */
  MPI_Type_commit(&strided);

  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c) {
    const int n = counts[c];
    int* buffer = malloc(((size_t)n * 4 + 4) * sizeof(int));
    for (int root = 0; root < size; ++root) {
      for (int i = 0; i < n; ++i) buffer[i] = rank == root ? root * 100000 + i : -1;
      MPI_OK(MPI_Bcast(buffer, n, MPI_INT, root, comm), 3);
      for (int i = 0; i < n; ++i) {
        if (buffer[i] != root * 100000 + i) {
          FAIL("MPI_Bcast MPI_INT on %s root %d count %d index %d: expected %d, actual %d",
               comm_name, root, n, i, root * 100000 + i, buffer[i]);
          break;
        }
      }
    }
    /* the same bytes as n/3 triples (rounded down), and as a strided type */
    const int triples = n / 3;
    for (int i = 0; i < 3 * triples; ++i) buffer[i] = rank == 0 ? 7 * i : -1;
    MPI_OK(MPI_Bcast(buffer, triples, triple, 0, comm), 3);
    for (int i = 0; i < 3 * triples; ++i) {
      if (buffer[i] != 7 * i) {
        FAIL("MPI_Bcast triple on %s count %d index %d: expected %d, actual %d", comm_name, triples,
             i, 7 * i, buffer[i]);
        break;
      }
    }
    /* strided: element k is ints 3k and 3k+2 (extent 3 ints); 3k+1 is a gap. */
    const int elements = n / 3;
    for (int i = 0; i < 3 * elements; ++i) buffer[i] = rank == 0 ? i : -1;
    MPI_OK(MPI_Bcast(buffer, elements, strided, 0, comm), 3);
    for (int k = 0; k < elements; ++k) {
      if (buffer[3 * k] != 3 * k || buffer[3 * k + 2] != 3 * k + 2 ||
          buffer[3 * k + 1] != (rank == 0 ? 3 * k + 1 : -1)) {
        FAIL("MPI_Bcast strided on %s element %d: expected %d,%d,%d, actual %d,%d,%d", comm_name, k,
             3 * k, rank == 0 ? 3 * k + 1 : -1, 3 * k + 2, buffer[3 * k], buffer[3 * k + 1],
             buffer[3 * k + 2]);
        break;
      }
    }
    free(buffer);
  }

  /* MPI_Allgather: out of place, in place, ints received as triples, and
   * into a strided receive type (passed through). */
  const int per_rank = 6;
  int send[6], *gathered = malloc(sizeof(int) * (size_t)(2 * per_rank * size + 2));
  for (int i = 0; i < per_rank; ++i) send[i] = rank * 1000 + i;
  for (int variant = 0; variant < 4; ++variant) {
    for (int i = 0; i < 2 * per_rank * size; ++i) gathered[i] = -1;
    if (variant == 0) {
      MPI_OK(MPI_Allgather(send, per_rank, MPI_INT, gathered, per_rank, MPI_INT, comm), 2);
    } else if (variant == 1) {
      memcpy(gathered + rank * per_rank, send, sizeof send);
      MPI_OK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, gathered, per_rank, MPI_INT, comm),
             2);
    } else if (variant == 2) {
      MPI_OK(MPI_Allgather(send, per_rank, MPI_INT, gathered, per_rank / 3, triple, comm), 2);
    } else {
      MPI_OK(MPI_Allgather(send, per_rank, MPI_INT, gathered, per_rank / 2, strided, comm), 2);
    }
    for (int r = 0; r < size; ++r) {
      int wrong = -1;
      for (int i = 0; i < per_rank && wrong < 0; ++i) {
        /* strided: element k = i/2 of block r starts 9r + 3k ints in (extent
         * 3 ints), its two ints 2 apart. */
        const int at = variant == 3 ? 9 * r + 3 * (i / 2) + 2 * (i % 2) : r * per_rank + i;
        if (gathered[at] != r * 1000 + i) wrong = i;
      }
      if (wrong >= 0) {
        const int at =
            variant == 3 ? 9 * r + 3 * (wrong / 2) + 2 * (wrong % 2) : r * per_rank + wrong;
        FAIL("MPI_Allgather variant %d on %s block %d index %d: expected %d, actual %d", variant,
             comm_name, r, wrong, r * 1000 + wrong, gathered[at]);
        break;
      }
    }
  }
  free(gathered);
  MPI_Type_free(&triple);
  MPI_Type_free(&strided);
  MPI_OK(MPI_Barrier(comm), 5);
}

/* What rank `src` sends rank `dst` as element i of an exchange. */
static int exchanged(int src, int dst, int i) { return src * 1000000 + dst * 1000 + i; }

/* The exchanges with a block per peer: MPI_Alltoall (out of place, in
 * place, ints as triples), MPI_Alltoallv and MPI_Allgatherv (uneven counts
 * with zeros, blocks in reverse order with a gap after each, in place),
 * MPI_Reduce_scatter (uneven counts, in place, and a MAXLOC passed
 * through). Every element and every gap checked. */
static void exchanges(MPI_Comm comm, const char* comm_name) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Datatype triple;
  MPI_Type_contiguous(3, MPI_INT, &triple);
  MPI_Type_commit(&triple);
  const int gap = -7;
  const int blocks[] = {0, 1, 3, 1000};
  int counts[64], displs[64], rcounts[64], rdispls[64];
  for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; ++b) {
    const int n = blocks[b];
    int* send = malloc(sizeof(int) * (size_t)(3 * n * size + 2 * size + 1));
    int* recv = malloc(sizeof(int) * (size_t)(3 * n * size + 2 * size + 1));

    /* MPI_Alltoall: plain, in place, and n ints received as n/3 triples */
    for (int variant = 0; variant < 3; ++variant) {
      for (int q = 0; q < size; ++q)
        for (int i = 0; i < n; ++i) send[q * n + i] = exchanged(rank, q, i);
      for (int i = 0; i < n * size; ++i) recv[i] = gap;
      if (variant == 0) {
        MPI_OK(MPI_Alltoall(send, n, MPI_INT, recv, n, MPI_INT, comm), ALLTOALL);
      } else if (variant == 1) {
        memcpy(recv, send, sizeof(int) * (size_t)(n * size));
        MPI_OK(MPI_Alltoall(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, recv, n, MPI_INT, comm), ALLTOALL);
      } else if (n % 3 == 0) {
        MPI_OK(MPI_Alltoall(send, n, MPI_INT, recv, n / 3, triple, comm), ALLTOALL);
      } else {
        continue;
      }
      for (int q = 0, wrong = 0; q < size && !wrong; ++q)
        for (int i = 0; i < n && !wrong; ++i)
          if (recv[q * n + i] != exchanged(q, rank, i)) {
            FAIL("MPI_Alltoall variant %d on %s count %d from %d index %d: expected %d, actual %d",
                 variant, comm_name, n, q, i, exchanged(q, rank, i), recv[q * n + i]);
            wrong = 1;
          }
    }

    /* MPI_Alltoallv: rank a sends ((a + b) % 3) * n ints to rank b */
    for (int variant = 0; variant < 2; ++variant) {
      int at = 0;
      for (int q = 0; q < size; ++q) {
        counts[q] = ((rank + q) % 3) * n;
        displs[q] = at;
        for (int i = 0; i < counts[q]; ++i) send[at + i] = exchanged(rank, q, i);
        at += counts[q] + 1;
      }
      at = 0;
      for (int q = size - 1; q >= 0; --q) {
        rcounts[q] = ((q + rank) % 3) * n;
        rdispls[q] = at;
        at += rcounts[q] + 1;
      }
      for (int i = 0; i < at; ++i) recv[i] = gap;
      if (variant == 0) {
        MPI_OK(MPI_Alltoallv(send, counts, displs, MPI_INT, recv, rcounts, rdispls, MPI_INT, comm),
               ALLTOALLV);
      } else {
        for (int q = 0; q < size; ++q)
          for (int i = 0; i < rcounts[q]; ++i) recv[rdispls[q] + i] = exchanged(rank, q, i);
        MPI_OK(MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, recv, rcounts, rdispls,
                             MPI_INT, comm),
               ALLTOALLV);
      }
      for (int q = 0, wrong = 0; q < size && !wrong; ++q) {
        for (int i = 0; i <= rcounts[q] && !wrong; ++i) {
          const int want = i < rcounts[q] ? exchanged(q, rank, i) : gap;
          if (recv[rdispls[q] + i] != want) {
            FAIL(
                "MPI_Alltoallv variant %d on %s count %d from %d index %d: expected %d, "
                "actual %d",
                variant, comm_name, n, q, i, want, recv[rdispls[q] + i]);
            wrong = 1;
          }
        }
      }
    }

    /* MPI_Alltoallv with NULL buffers and every count zero (what mpi4py
     * passes for empty DLPack arrays): served, a no-op. It crashed the
     * library, which read the send counts as absent (taken for in place).
     * Open MPI accepts the call; MPICH calls the two NULLs aliased. */
#if defined(OPEN_MPI)
    if (n == 0) {
      int zeros[64] = {0};
      MPI_OK(MPI_Alltoallv(NULL, zeros, zeros, MPI_INT, NULL, zeros, zeros, MPI_INT, comm),
             ALLTOALLV);
    }
#endif

    /* MPI_Allgatherv: rank q contributes (q % 3) * n ints */
    for (int variant = 0; variant < 2; ++variant) {
      int at = 0;
      for (int q = size - 1; q >= 0; --q) {
        rcounts[q] = (q % 3) * n;
        rdispls[q] = at;
        at += rcounts[q] + 1;
      }
      for (int i = 0; i < at; ++i) recv[i] = gap;
      for (int i = 0; i < rcounts[rank]; ++i) send[i] = exchanged(rank, 0, i);
      if (variant == 0) {
        MPI_OK(MPI_Allgatherv(send, rcounts[rank], MPI_INT, recv, rcounts, rdispls, MPI_INT, comm),
               ALLGATHERV);
      } else {
        memcpy(recv + rdispls[rank], send, sizeof(int) * (size_t)rcounts[rank]);
        MPI_OK(MPI_Allgatherv(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, recv, rcounts, rdispls, MPI_INT,
                              comm),
               ALLGATHERV);
      }
      for (int q = 0, wrong = 0; q < size && !wrong; ++q) {
        for (int i = 0; i <= rcounts[q] && !wrong; ++i) {
          const int want = i < rcounts[q] ? exchanged(q, 0, i) : gap;
          if (recv[rdispls[q] + i] != want) {
            FAIL(
                "MPI_Allgatherv variant %d on %s count %d block %d index %d: expected %d, "
                "actual %d",
                variant, comm_name, n, q, i, want, recv[rdispls[q] + i]);
            wrong = 1;
          }
        }
      }
    }

    /* MPI_Reduce_scatter (SUM of ints): rank q gets (q % 3) * n elements */
    int total = 0, before = 0;
    for (int q = 0; q < size; ++q) {
      rcounts[q] = (q % 3) * n;
      if (q < rank) before += rcounts[q];
      total += rcounts[q];
    }
    for (int variant = 0; variant < 2; ++variant) {
      for (int i = 0; i < total; ++i) send[i] = rank * 3 + i;
      for (int i = 0; i <= total; ++i) recv[i] = gap;
      if (variant == 0) {
        MPI_OK(MPI_Reduce_scatter(send, recv, rcounts, MPI_INT, MPI_SUM, comm), REDUCE_SCATTER);
      } else {
        memcpy(recv, send, sizeof(int) * (size_t)total);
        MPI_OK(MPI_Reduce_scatter(MPI_IN_PLACE, recv, rcounts, MPI_INT, MPI_SUM, comm),
               REDUCE_SCATTER);
      }
      /* MPI writes the result at the start of recvbuf; in place, the rest
       * keeps the input. */
      for (int i = 0; i <= rcounts[rank]; ++i) {
        const int global = before + i;
        int want = 3 * (size * (size - 1) / 2) + size * global;
        if (i == rcounts[rank]) want = variant == 0 ? gap : (total > i ? send[i] : gap);
        if (recv[i] != want) {
          FAIL("MPI_Reduce_scatter variant %d on %s count %d index %d: expected %d, actual %d",
               variant, comm_name, n, i, want, recv[i]);
          break;
        }
      }
    }
    free(send);
    free(recv);
  }
  /* Overlapping receive blocks (MPICH's allgatherv4 makes them): MPI leaves
   * the result undefined and the library refuses them, so the drop-in passes
   * the call through; every rank sends the same value, so it is exact. */
  {
    int ones[64], zeros[64], same = 42, out[2] = {gap, gap};
    for (int q = 0; q < size; ++q) ones[q] = 1, zeros[q] = 0;
    MPI_OK(MPI_Allgatherv(&same, 1, MPI_INT, out, ones, zeros, MPI_INT, comm), ALLGATHERV);
    if (out[0] != 42 || out[1] != gap)
      FAIL("MPI_Allgatherv with overlapping blocks on %s: expected [42, %d], actual [%d, %d]",
           comm_name, gap, out[0], out[1]);
  }
  /* MAXLOC is passed through and still right. */
  {
    struct {
      int value, index;
    } pairs[64], best = {-1, -1};
    for (int q = 0; q < size; ++q) pairs[q].value = rank, pairs[q].index = rank;
    int ones[64];
    for (int q = 0; q < size; ++q) ones[q] = 1;
    MPI_OK(MPI_Reduce_scatter(pairs, &best, ones, MPI_2INT, MPI_MAXLOC, comm), REDUCE_SCATTER);
    if (best.value != size - 1 || best.index != size - 1)
      FAIL("MPI_Reduce_scatter MAXLOC on %s: expected (%d,%d), actual (%d,%d)", comm_name, size - 1,
           size - 1, best.value, best.index);
  }
  MPI_Type_free(&triple);
}

/* Rooted data movement from every root: MPI_Gather, MPI_Gatherv (uneven
 * counts with zeros, reversed blocks with gaps), MPI_Scatter, MPI_Scatterv,
 * out of place and in place at the root, and a vector type at the root
 * with MPI_INT elsewhere (the ranks agree to pass it through). */
static void rooted(MPI_Comm comm, const char* comm_name) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int gap = -7, n = 5;
  int counts[64], displs[64];
  int* send = malloc(sizeof(int) * (size_t)(3 * n * size + size + 1));
  int* recv = malloc(sizeof(int) * (size_t)(3 * n * size + size + 1));
  MPI_Datatype every_other;
  MPI_Type_vector(n, 1, 2, MPI_INT, &every_other); /* gaps: not contiguous */
  MPI_Type_commit(&every_other);
  for (int root = 0; root < size; ++root) {
    const int at_root = rank == root;
    for (int variant = 0; variant < 2; ++variant) {
      /* MPI_Gather */
      for (int i = 0; i < n; ++i) send[i] = exchanged(rank, root, i);
      for (int i = 0; i < n * size; ++i) recv[i] = gap;
      if (variant == 1 && at_root) {
        memcpy(recv + root * n, send, sizeof(int) * n);
        MPI_OK(MPI_Gather(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, recv, n, MPI_INT, root, comm),
               GATHER);
      } else {
        MPI_OK(MPI_Gather(send, n, MPI_INT, recv, n, MPI_INT, root, comm), GATHER);
      }
      for (int q = 0, wrong = 0; at_root && q < size && !wrong; ++q)
        for (int i = 0; i < n && !wrong; ++i)
          if (recv[q * n + i] != exchanged(q, root, i)) {
            FAIL("MPI_Gather variant %d on %s root %d from %d index %d: expected %d, actual %d",
                 variant, comm_name, root, q, i, exchanged(q, root, i), recv[q * n + i]);
            wrong = 1;
          }

      /* MPI_Gatherv: rank q sends (q % 3) * n, reversed blocks with a gap after each */
      int at = 0;
      for (int q = size - 1; q >= 0; --q) {
        counts[q] = (q % 3) * n;
        displs[q] = at;
        at += counts[q] + 1;
      }
      for (int i = 0; i < counts[rank]; ++i) send[i] = exchanged(rank, root, i);
      for (int i = 0; i < at; ++i) recv[i] = gap;
      if (variant == 1 && at_root) {
        memcpy(recv + displs[root], send, sizeof(int) * (size_t)counts[root]);
        MPI_OK(MPI_Gatherv(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, recv, counts, displs, MPI_INT, root,
                           comm),
               GATHERV);
      } else {
        MPI_OK(MPI_Gatherv(send, counts[rank], MPI_INT, recv, counts, displs, MPI_INT, root, comm),
               GATHERV);
      }
      for (int q = 0, wrong = 0; at_root && q < size && !wrong; ++q)
        for (int i = 0; i <= counts[q] && !wrong; ++i) {
          const int want = i < counts[q] ? exchanged(q, root, i) : gap;
          if (recv[displs[q] + i] != want) {
            FAIL("MPI_Gatherv variant %d on %s root %d from %d index %d: expected %d, actual %d",
                 variant, comm_name, root, q, i, want, recv[displs[q] + i]);
            wrong = 1;
          }
        }

      /* MPI_Scatter */
      for (int q = 0; q < size; ++q)
        for (int i = 0; i < n; ++i) send[q * n + i] = at_root ? exchanged(root, q, i) : gap;
      for (int i = 0; i <= n; ++i) recv[i] = gap;
      if (variant == 1 && at_root) {
        MPI_OK(MPI_Scatter(send, n, MPI_INT, MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, root, comm),
               SCATTER);
        memcpy(recv, send + root * n, sizeof(int) * n);
      } else {
        MPI_OK(MPI_Scatter(send, n, MPI_INT, recv, n, MPI_INT, root, comm), SCATTER);
      }
      for (int i = 0; i <= n; ++i) {
        const int want = i < n ? exchanged(root, rank, i) : gap;
        if (recv[i] != want) {
          FAIL("MPI_Scatter variant %d on %s root %d index %d: expected %d, actual %d", variant,
               comm_name, root, i, want, recv[i]);
          break;
        }
      }

      /* MPI_Scatterv: rank q gets (q % 3) * n from reversed blocks with gaps */
      for (int i = 0; i < at; ++i) send[i] = gap;
      for (int q = 0; q < size && at_root; ++q)
        for (int i = 0; i < counts[q]; ++i) send[displs[q] + i] = exchanged(root, q, i);
      for (int i = 0; i <= counts[rank]; ++i) recv[i] = gap;
      if (variant == 1 && at_root) {
        MPI_OK(MPI_Scatterv(send, counts, displs, MPI_INT, MPI_IN_PLACE, -1, MPI_DATATYPE_NULL,
                            root, comm),
               SCATTERV);
        memcpy(recv, send + displs[root], sizeof(int) * (size_t)counts[root]);
      } else {
        MPI_OK(MPI_Scatterv(send, counts, displs, MPI_INT, recv, counts[rank], MPI_INT, root, comm),
               SCATTERV);
      }
      for (int i = 0; i <= counts[rank]; ++i) {
        const int want = i < counts[rank] ? exchanged(root, rank, i) : gap;
        if (recv[i] != want) {
          FAIL("MPI_Scatterv variant %d on %s root %d index %d: expected %d, actual %d", variant,
               comm_name, root, i, want, recv[i]);
          break;
        }
      }
    }

    /* The root gathers n ints from each rank into every other int of its
     * blocks (a vector type it alone uses): passed through on every rank. */
    for (int i = 0; i < n; ++i) send[i] = exchanged(rank, root, i);
    for (int i = 0; i < 2 * n * size; ++i) recv[i] = gap;
    MPI_Datatype resized;
    MPI_Type_create_resized(every_other, 0, (MPI_Aint)(2 * n * sizeof(int)), &resized);
    MPI_Type_commit(&resized);
    MPI_OK(MPI_Gather(send, n, MPI_INT, recv, 1, resized, root, comm), GATHER);
    for (int q = 0, wrong = 0; at_root && q < size && !wrong; ++q)
      for (int i = 0; i < 2 * n && !wrong; ++i) {
        const int want = i % 2 == 0 ? exchanged(q, root, i / 2) : gap;
        if (recv[2 * n * q + i] != want) {
          FAIL(
              "MPI_Gather into a vector type on %s root %d from %d index %d: expected %d, "
              "actual %d",
              comm_name, root, q, i, want, recv[2 * n * q + i]);
          wrong = 1;
        }
      }
    MPI_Type_free(&resized);
  }
  MPI_Type_free(&every_other);
  free(send);
  free(recv);
}

/* --- modes ------------------------------------------------------------- */

/* Threads mode: each thread all-reduces on its own communicator while the
 * others do on theirs; the values name the thread, so a message crossing
 * into another communicator shows as a wrong sum. */
enum { kThreads = 3, kThreadRounds = 500, kThreadCount = 5 };
typedef struct {
  MPI_Comm comm;
  int thread;
  long calls;
} ThreadWork;

static void* thread_body(void* arg) {
  ThreadWork* work = (ThreadWork*)arg;
  for (int round = 0; round < kThreadRounds; ++round) {
    int values[kThreadCount], sums[kThreadCount];
    for (int i = 0; i < kThreadCount; ++i) {
      values[i] = g_rank * 100000 + work->thread * 1000 + (round + i) % 997;
      sums[i] = -1;
    }
    ++work->calls;
    int rc = MPI_Allreduce(values, sums, kThreadCount, MPI_INT, MPI_SUM, work->comm);
    if (rc != MPI_SUCCESS) {
      FAIL("thread %d MPI_Allreduce round %d returned %d", work->thread, round, rc);
      break;
    }
    for (int i = 0; i < kThreadCount; ++i) {
      const int expected =
          100000 * g_size * (g_size - 1) / 2 + g_size * (work->thread * 1000 + (round + i) % 997);
      if (sums[i] != expected) {
        FAIL("thread %d MPI_Allreduce round %d index %d: expected %d, actual %d", work->thread,
             round, i, expected, sums[i]);
        return NULL;
      }
    }
  }
  return NULL;
}

static int g_handler_calls, g_handler_code;
static void record_error(MPI_Comm* comm, int* code, ...) {
  (void)comm;
  ++g_handler_calls;
  g_handler_code = *code;
}

int main(int argc, char** argv) {
  const int threads = argc > 1 && strcmp(argv[1], "--threads") == 0;
  const int mismatch = argc > 1 && strcmp(argv[1], "--mismatch") == 0;
  if (threads) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided != MPI_THREAD_MULTIPLE) {
      fprintf(stderr, "MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  } else {
    MPI_Init(&argc, &argv);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);

  if (threads) {
    ThreadWork work[kThreads];
    pthread_t workers[kThreads];
    for (int i = 0; i < kThreads; ++i) {
      work[i].thread = i;
      work[i].calls = 0;
      MPI_Comm_dup(MPI_COMM_WORLD, &work[i].comm);
    }
    for (int i = 0; i < kThreads; ++i) pthread_create(&workers[i], NULL, thread_body, &work[i]);
    for (int i = 0; i < kThreads; ++i) pthread_join(workers[i], NULL);
    for (int i = 0; i < kThreads; ++i) {
      g_calls[0] += work[i].calls;
      MPI_Comm_free(&work[i].comm);
    }
  } else if (mismatch) {
    /* Ranks disagree on the count: erroneous MPI, which the drop-in
     * detects and reports through the communicator's error handler. */
    MPI_Errhandler handler;
    MPI_Comm_create_errhandler(record_error, &handler);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, handler);
    double values[8] = {0};
    int rc = MPI_Allreduce(MPI_IN_PLACE, values, g_rank == 0 ? 4 : 8, MPI_DOUBLE, MPI_SUM,
                           MPI_COMM_WORLD);
    int error_class = -1;
    MPI_Error_class(rc, &error_class);
    if (g_size > 1 && (g_handler_calls != 1 || error_class != MPI_ERR_ARG || g_handler_code != rc))
      FAIL(
          "mismatch: handler called %d times with %d, returned %d (class %d); expected one "
          "MPI_ERR_ARG",
          g_handler_calls, g_handler_code, rc, error_class);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Errhandler_free(&handler);
    /* The communicator stays usable after a mismatch. */
    int one = 1, sum = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (sum != g_size)
      FAIL("MPI_Allreduce after the mismatch: expected %d, actual %d", g_size, sum);
  } else {
    for (int op = 0; op < NUM_OPS; ++op) {
      static MPI_Op const predefined[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_BAND, MPI_BXOR};
      if (op == OP_USER) MPI_Op_create(user_sum_int, 1, &g_ops[op]);
      else g_ops[op] = predefined[op];
    }
    reductions(MPI_COMM_WORLD, "MPI_COMM_WORLD", 1);
    data_movement(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    exchanges(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    rooted(MPI_COMM_WORLD, "MPI_COMM_WORLD");

    MPI_Comm dup, parity, reversed;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_rank, &parity);
    MPI_Comm_split(MPI_COMM_WORLD, 0, g_size - g_rank, &reversed);
    reductions(dup, "dup", 0);
    reductions(parity, "parity split", 0);
    reductions(reversed, "reversed split", 0);
    data_movement(reversed, "reversed split");
    exchanges(reversed, "reversed split");
    exchanges(parity, "parity split");
    rooted(reversed, "reversed split");

    /* Communicators freed and made again: the drop-in's mapping goes with them. */
    for (int round = 0; round < 10; ++round) {
      MPI_Comm scratch;
      MPI_Comm_dup(round % 2 ? parity : MPI_COMM_WORLD, &scratch);
      int value = round, sum = 0, size = 0;
      MPI_Comm_size(scratch, &size);
      MPI_OK(MPI_Allreduce(&value, &sum, 1, MPI_INT, MPI_SUM, scratch), 0);
      if (sum != size * round)
        FAIL("MPI_Allreduce on dup #%d: expected %d, actual %d", round, size * round, sum);
      MPI_Comm_free(&scratch);
    }

    /* An intercommunicator between the parity halves: passed through. */
    if (g_size >= 2) {
      MPI_Comm inter;
      MPI_Intercomm_create(parity, 0, MPI_COMM_WORLD, g_rank % 2 ? 0 : 1, 99, &inter);
      int value = g_rank + 1, remote_sum = 0, want = 0;
      MPI_OK(MPI_Allreduce(&value, &remote_sum, 1, MPI_INT, MPI_SUM, inter), 0);
      for (int r = 0; r < g_size; ++r)
        if (r % 2 != g_rank % 2) want += r + 1;
      if (remote_sum != want)
        FAIL("MPI_Allreduce on an intercommunicator: expected %d, actual %d", want, remote_sum);
      MPI_OK(MPI_Barrier(inter), 5);
      MPI_Comm_free(&inter);
    }
    MPI_Comm_free(&dup);
    MPI_Comm_free(&reversed);
    /* `parity` is left for MPI_Finalize to clean up. */
    MPI_Op_free(&g_ops[OP_USER]);
  }

  long failures = g_failures, total = 0;
  PMPI_Allreduce(&failures, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD); /* not counted */
  if (!mismatch) {
    /* One write per line, so that ranks' lines do not interleave. */
    char line[800];
    int used = snprintf(line, sizeof line, "dropin_program rank %d calls:", g_rank);
    for (int i = 0; i < NUM_FUNCTIONS; ++i)
      used += snprintf(line + used, sizeof line - (size_t)used, " %s %ld;", kNames[i], g_calls[i]);
    printf("%s\n", line);
    fflush(stdout);
  }
  if (g_rank == 0) printf("dropin_program: %s on %d ranks\n", total ? "FAILED" : "OK", g_size);
  MPI_Finalize();
  return total != 0;
}
