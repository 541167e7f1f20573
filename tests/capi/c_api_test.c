/* The C API (collective/collective_c.h) from a C program under mpirun:
 * every collective, dtype and op with exact results (counts 0, 1 and odd,
 * every root, the in-place forms), communicators from the world, from an
 * MPI_Fint and from split, and the error paths (status + message naming
 * operation, rank and cause, per thread). Any failure on any rank fails
 * the run; each names rank, check, index, expected and actual. */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <collective/collective_c.h>

static int g_rank = -1;
static int g_size = 0;
static long g_failures = 0;

/* One fprintf per failure, so lines of different ranks do not interleave. */
#define CHECK(cond, ...)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      char detail_[512];                                                                 \
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

/* --- element encoding: small integers in every dtype, exactly ---------- */

static uint16_t half_from_int(int value) { /* exact for |value| < 2048 */
  if (value == 0) return 0;
  uint16_t sign = value < 0 ? 0x8000u : 0;
  unsigned magnitude = (unsigned)(value < 0 ? -value : value);
  int exponent = 0;
  while ((magnitude >> (exponent + 1)) != 0) ++exponent;
  unsigned mantissa = (magnitude << (10 - exponent)) & 0x3ffu;
  return (uint16_t)(sign | (unsigned)((exponent + 15) << 10) | mantissa);
}

static double double_from_half(uint16_t bits) {
  int exponent = (bits >> 10) & 0x1f;
  double mantissa = (double)(bits & 0x3ff);
  double value = exponent == 0 ? mantissa / 1024.0 / 16384.0
                               : (1.0 + mantissa / 1024.0) * (double)(1 << exponent) / 32768.0;
  return (bits & 0x8000u) ? -value : value;
}

static uint16_t bfloat_from_int(int value) {
  float f = (float)value;
  uint32_t bits;
  memcpy(&bits, &f, 4);
  return (uint16_t)(bits >> 16);
}

static double double_from_bfloat(uint16_t bits) {
  uint32_t wide = (uint32_t)bits << 16;
  float f;
  memcpy(&f, &wide, 4);
  return f;
}

static void store(void* buffer, int dtype, size_t index, long value) {
  switch (dtype) {
    case COLLECTIVE_FLOAT16: ((uint16_t*)buffer)[index] = half_from_int((int)value); break;
    case COLLECTIVE_BFLOAT16: ((uint16_t*)buffer)[index] = bfloat_from_int((int)value); break;
    case COLLECTIVE_FLOAT32: ((float*)buffer)[index] = (float)value; break;
    case COLLECTIVE_FLOAT64: ((double*)buffer)[index] = (double)value; break;
    case COLLECTIVE_INT8: ((int8_t*)buffer)[index] = (int8_t)value; break;
    case COLLECTIVE_UINT8: ((uint8_t*)buffer)[index] = (uint8_t)value; break;
    case COLLECTIVE_INT32: ((int32_t*)buffer)[index] = (int32_t)value; break;
    case COLLECTIVE_INT64: ((int64_t*)buffer)[index] = (int64_t)value; break;
  }
}

static double load(const void* buffer, int dtype, size_t index) {
  switch (dtype) {
    case COLLECTIVE_FLOAT16: return double_from_half(((const uint16_t*)buffer)[index]);
    case COLLECTIVE_BFLOAT16: return double_from_bfloat(((const uint16_t*)buffer)[index]);
    case COLLECTIVE_FLOAT32: return ((const float*)buffer)[index];
    case COLLECTIVE_FLOAT64: return ((const double*)buffer)[index];
    case COLLECTIVE_INT8: return ((const int8_t*)buffer)[index];
    case COLLECTIVE_UINT8: return ((const uint8_t*)buffer)[index];
    case COLLECTIVE_INT32: return ((const int32_t*)buffer)[index];
    case COLLECTIVE_INT64: return (double)((const int64_t*)buffer)[index];
  }
  return -1e300;
}

/* Rank r's element i: small integers (products of 4 fit int8 and uint8), signed
 * where the type is; for MEAN a multiple of the size, so the mean is exact. */
static long input(int dtype, int op, int rank, size_t i) {
  long v = dtype == COLLECTIVE_UINT8 ? (long)((i + 3u * (size_t)rank) % 4u)
                                     : (long)((i + 3u * (size_t)rank) % 5u) - 2;
  return op == COLLECTIVE_MEAN ? v * g_size : v;
}

static long expected_reduction(int dtype, int op, size_t i) {
  long result = input(dtype, op, 0, i);
  for (int r = 1; r < g_size; ++r) {
    long v = input(dtype, op, r, i);
    switch (op) {
      case COLLECTIVE_SUM:
      case COLLECTIVE_MEAN: result += v; break;
      case COLLECTIVE_PROD: result *= v; break;
      case COLLECTIVE_MIN:
        if (v < result) result = v;
        break;
      case COLLECTIVE_MAX:
        if (v > result) result = v;
        break;
      case COLLECTIVE_BAND: result &= v; break;
      case COLLECTIVE_BOR: result |= v; break;
      case COLLECTIVE_BXOR: result ^= v; break;
    }
  }
  return op == COLLECTIVE_MEAN ? result / g_size : result;
}

static void* alloc_elements(size_t count, int dtype) {
  return calloc(count + 1, collective_dtype_size(dtype)); /* +1: never malloc(0) */
}

static void check_elements(const char* what, int dtype, int op, const void* buffer, size_t count,
                           long (*expected)(int, int, size_t), size_t offset) {
  for (size_t i = 0; i < count; ++i) {
    double want = (double)expected(dtype, op, offset + i), got = load(buffer, dtype, i);
    if (want != got) {
      CHECK(0, "%s dtype=%s op=%s count=%zu index %zu: expected %g, actual %g", what,
            collective_dtype_name(dtype), op >= 0 ? collective_op_name(op) : "-", count, i, want,
            got);
      return; /* the first wrong element is enough */
    }
  }
}

static long expected_gathered(int dtype, int op, size_t i); /* uses g_block */
static size_t g_block;
static long expected_gathered(int dtype, int op, size_t i) {
  (void)op;
  return input(dtype, COLLECTIVE_SUM, (int)(i / g_block), i % g_block);
}

static int g_root;
static long expected_root_input(int dtype, int op, size_t i) {
  (void)op;
  return input(dtype, COLLECTIVE_SUM, g_root, i);
}

static const size_t kCounts[] = {0, 1, 7, 1001};
enum { kNumCounts = sizeof(kCounts) / sizeof(kCounts[0]) };

static void expect_failure(const char* what, int status, int expected_status, const char* fragment1,
                           const char* fragment2);

static void test_reductions(collective_comm_t comm) {
  for (int dtype = 0; dtype < 8; ++dtype) {
    for (int op = 0; op <= COLLECTIVE_BXOR; ++op) {
      if (op >= COLLECTIVE_BAND && dtype <= COLLECTIVE_FLOAT64) {
        /* The bitwise ops reduce integers only, refused before any buffer is used. */
        double value = 1.5;
        expect_failure("bitwise op on a floating type",
                       collective_all_reduce(comm, &value, &value, 1, dtype, op, NULL),
                       COLLECTIVE_ERR_INVALID_ARGUMENT, "combines bits, of integer types only",
                       collective_dtype_name(dtype));
        CHECK(value == 1.5, "a refused bitwise all_reduce wrote its buffer");
        continue;
      }
      for (int c = 0; c < kNumCounts; ++c) {
        const size_t count = kCounts[c];
        void* send = alloc_elements(count * (size_t)g_size, dtype);
        void* recv = alloc_elements(count * (size_t)g_size, dtype);
        for (size_t i = 0; i < count * (size_t)g_size; ++i)
          store(send, dtype, i, input(dtype, op, g_rank, i % (count ? count : 1)));

        /* all_reduce, out of place and in place */
        CHECK_OK(collective_all_reduce(comm, send, recv, count, dtype, op, NULL));
        check_elements("all_reduce", dtype, op, recv, count, expected_reduction, 0);
        memcpy(recv, send, count * collective_dtype_size(dtype));
        CHECK_OK(collective_all_reduce(comm, recv, recv, count, dtype, op, NULL));
        check_elements("all_reduce in place", dtype, op, recv, count, expected_reduction, 0);

        /* reduce_scatter: block r of the reduction of size*count elements
         * whose element j is input(j % count), so block r equals the all_reduce. */
        CHECK_OK(collective_reduce_scatter(comm, send, recv, count, dtype, op, NULL));
        check_elements("reduce_scatter", dtype, op, recv, count, expected_reduction, 0);
        memcpy(recv, send, count * (size_t)g_size * collective_dtype_size(dtype));
        char* own_block = (char*)recv + (size_t)g_rank * count * collective_dtype_size(dtype);
        CHECK_OK(collective_reduce_scatter(comm, recv, own_block, count, dtype, op, NULL));
        check_elements("reduce_scatter in place", dtype, op, own_block, count, expected_reduction,
                       0);

        /* reduce to every root, out of place and in place */
        for (int root = 0; root < g_size; ++root) {
          memset(recv, 0, count * collective_dtype_size(dtype));
          CHECK_OK(collective_reduce(comm, send, g_rank == root ? recv : NULL, count, dtype, op,
                                     root, NULL));
          if (g_rank == root)
            check_elements("reduce", dtype, op, recv, count, expected_reduction, 0);
          memcpy(recv, send, count * collective_dtype_size(dtype));
          CHECK_OK(collective_reduce(comm, g_rank == root ? recv : send,
                                     g_rank == root ? recv : NULL, count, dtype, op, root, NULL));
          if (g_rank == root)
            check_elements("reduce in place", dtype, op, recv, count, expected_reduction, 0);
        }
        free(send);
        free(recv);
      }
    }
  }
}

static void test_data_movement(collective_comm_t comm) {
  for (int dtype = 0; dtype < 8; ++dtype) {
    for (int c = 0; c < kNumCounts; ++c) {
      const size_t count = kCounts[c];
      void* send = alloc_elements(count, dtype);
      void* recv = alloc_elements(count * (size_t)g_size, dtype);
      for (size_t i = 0; i < count; ++i)
        store(send, dtype, i, input(dtype, COLLECTIVE_SUM, g_rank, i));

      g_block = count ? count : 1;
      CHECK_OK(collective_all_gather(comm, send, recv, count, dtype, NULL));
      check_elements("all_gather", dtype, -1, recv, count * (size_t)g_size, expected_gathered, 0);
      memset(recv, 0, count * (size_t)g_size * collective_dtype_size(dtype));
      char* own_block = (char*)recv + (size_t)g_rank * count * collective_dtype_size(dtype);
      memcpy(own_block, send, count * collective_dtype_size(dtype));
      CHECK_OK(collective_all_gather(comm, own_block, recv, count, dtype, NULL));
      check_elements("all_gather in place", dtype, -1, recv, count * (size_t)g_size,
                     expected_gathered, 0);

      for (int root = 0; root < g_size; ++root) {
        g_root = root;
        for (size_t i = 0; i < count; ++i)
          store(recv, dtype, i, g_rank == root ? input(dtype, COLLECTIVE_SUM, root, i) : 99);
        CHECK_OK(collective_broadcast(comm, recv, count, dtype, root, NULL));
        check_elements("broadcast", dtype, -1, recv, count, expected_root_input, 0);
      }
      free(send);
      free(recv);
    }
  }
  CHECK_OK(collective_barrier(comm, NULL));
}

/* --- all_to_all(_v), all_gather_v, reduce_scatter_v, gather(_v), scatter(_v) --- */

/* Element i of what rank src sends to rank dst: exact in every dtype. */
static long moved(int src, int dst, size_t i) { return (long)((src * 5 + dst * 3 + i) % 11); }
static const long kUntouched = 13; /* gaps between blocks must keep it */

static void fill(void* buffer, int dtype, size_t count, long value) {
  for (size_t i = 0; i < count; ++i) store(buffer, dtype, i, value);
}

/* Checks buffer[at + i] == want(i) for i < count; names the call, rank,
 * index, expected and actual of the first wrong element. */
#define CHECK_RANGE(what, buffer, dtype, at, count, want_expr)                                  \
  do {                                                                                          \
    for (size_t i_ = 0; i_ < (count); ++i_) {                                                   \
      const size_t i = i_;                                                                      \
      const double want_ = (double)(want_expr), got_ = load((buffer), (dtype), (at) + i_);      \
      if (want_ != got_) {                                                                      \
        CHECK(0, "%s dtype=%s count=%zu index %zu: expected %g, actual %g", (what),             \
              collective_dtype_name(dtype), (size_t)(count), (size_t)((at) + i_), want_, got_); \
        break;                                                                                  \
      }                                                                                         \
      (void)i;                                                                                  \
    }                                                                                           \
  } while (0)

/* Uneven per-peer counts with zeros: how many elements rank a sends to rank b
 * (symmetric in a and b, so both ends agree). */
static size_t pair_count(int a, int b, size_t count) { return (size_t)((a + b) % 3) * count; }

static void test_new_collectives(collective_comm_t comm) {
  const size_t p = (size_t)g_size;
  size_t counts[64], places[64], recv_counts[64], recv_places[64];
  for (int dtype = 0; dtype < 8; ++dtype) {
    const size_t bytes = collective_dtype_size(dtype);
    for (int c = 0; c < kNumCounts; ++c) {
      const size_t count = kCounts[c];
      /* Buffers big enough for every form below, gaps included. */
      const size_t room = 3 * count * p + 2 * p + 1;
      void* send = alloc_elements(room, dtype);
      void* recv = alloc_elements(room, dtype);

      /* all_to_all, out of place and in place */
      for (size_t q = 0; q < p; ++q)
        for (size_t i = 0; i < count; ++i)
          store(send, dtype, q * count + i, moved(g_rank, (int)q, i));
      fill(recv, dtype, count * p, kUntouched);
      CHECK_OK(collective_all_to_all(comm, send, recv, count, dtype, NULL));
      for (size_t q = 0; q < p; ++q)
        CHECK_RANGE("all_to_all", recv, dtype, q * count, count, moved((int)q, g_rank, i));
      memcpy(recv, send, count * p * bytes);
      CHECK_OK(collective_all_to_all(comm, recv, recv, count, dtype, NULL));
      for (size_t q = 0; q < p; ++q)
        CHECK_RANGE("all_to_all in place", recv, dtype, q * count, count, moved((int)q, g_rank, i));

      /* all_to_all_v: uneven counts with zeros, one untouched element
       * between blocks, blocks in reverse rank order on the receive side. */
      size_t at = 0;
      for (size_t q = 0; q < p; ++q) {
        counts[q] = pair_count(g_rank, (int)q, count);
        places[q] = at;
        for (size_t i = 0; i < counts[q]; ++i) store(send, dtype, at + i, moved(g_rank, (int)q, i));
        at += counts[q] + 1;
      }
      at = 0;
      for (size_t k = p; k-- > 0;) {
        recv_counts[k] = pair_count((int)k, g_rank, count);
        recv_places[k] = at;
        at += recv_counts[k] + 1;
      }
      const size_t recv_span = at;
      fill(recv, dtype, recv_span, kUntouched);
      CHECK_OK(collective_all_to_all_v(comm, send, counts, places, recv, recv_counts, recv_places,
                                       dtype, NULL));
      for (size_t q = 0; q < p; ++q) {
        CHECK_RANGE("all_to_all_v", recv, dtype, recv_places[q], recv_counts[q],
                    moved((int)q, g_rank, i));
        CHECK_RANGE("all_to_all_v gap", recv, dtype, recv_places[q] + recv_counts[q], 1,
                    kUntouched);
      }
      /* In place: recv_counts and recv_places describe both sides. */
      fill(recv, dtype, recv_span, kUntouched);
      for (size_t q = 0; q < p; ++q)
        for (size_t i = 0; i < recv_counts[q]; ++i)
          store(recv, dtype, recv_places[q] + i, moved(g_rank, (int)q, i));
      CHECK_OK(collective_all_to_all_v(comm, recv, NULL, NULL, recv, recv_counts, recv_places,
                                       dtype, NULL));
      for (size_t q = 0; q < p; ++q) {
        CHECK_RANGE("all_to_all_v in place", recv, dtype, recv_places[q], recv_counts[q],
                    moved((int)q, g_rank, i));
        CHECK_RANGE("all_to_all_v in place gap", recv, dtype, recv_places[q] + recv_counts[q], 1,
                    kUntouched);
      }

      /* all_gather_v: rank q contributes (q % 3) * count elements (zeros
       * included), blocks in reverse order with a gap after each. */
      at = 0;
      for (size_t k = p; k-- > 0;) {
        recv_counts[k] = (k % 3) * count;
        recv_places[k] = at;
        at += recv_counts[k] + 1;
      }
      const size_t mine = recv_counts[g_rank];
      for (size_t i = 0; i < mine; ++i) store(send, dtype, i, moved(g_rank, 0, i));
      fill(recv, dtype, at, kUntouched);
      CHECK_OK(
          collective_all_gather_v(comm, send, mine, recv, recv_counts, recv_places, dtype, NULL));
      for (size_t q = 0; q < p; ++q) {
        CHECK_RANGE("all_gather_v", recv, dtype, recv_places[q], recv_counts[q],
                    moved((int)q, 0, i));
        CHECK_RANGE("all_gather_v gap", recv, dtype, recv_places[q] + recv_counts[q], 1,
                    kUntouched);
      }
      fill(recv, dtype, at, kUntouched);
      char* own = (char*)recv + recv_places[g_rank] * bytes;
      memcpy(own, send, mine * bytes);
      CHECK_OK(
          collective_all_gather_v(comm, own, mine, recv, recv_counts, recv_places, dtype, NULL));
      for (size_t q = 0; q < p; ++q)
        CHECK_RANGE("all_gather_v in place", recv, dtype, recv_places[q], recv_counts[q],
                    moved((int)q, 0, i));

      /* reduce_scatter_v (SUM): rank q gets (q % 3) * count elements. */
      size_t total = 0, before = 0;
      for (size_t q = 0; q < p; ++q) {
        recv_counts[q] = (q % 3) * count;
        if ((int)q < g_rank) before += recv_counts[q];
        total += recv_counts[q];
      }
      for (size_t i = 0; i < total; ++i)
        store(send, dtype, i, input(dtype, COLLECTIVE_SUM, g_rank, i));
      fill(recv, dtype, total + 1, kUntouched);
      CHECK_OK(
          collective_reduce_scatter_v(comm, send, recv, recv_counts, dtype, COLLECTIVE_SUM, NULL));
      CHECK_RANGE("reduce_scatter_v", recv, dtype, 0, recv_counts[g_rank],
                  expected_reduction(dtype, COLLECTIVE_SUM, before + i));
      CHECK_RANGE("reduce_scatter_v past its block", recv, dtype, recv_counts[g_rank], 1,
                  kUntouched);
      memcpy(recv, send, total * bytes);
      char* own_block = (char*)recv + before * bytes;
      CHECK_OK(collective_reduce_scatter_v(comm, recv, own_block, recv_counts, dtype,
                                           COLLECTIVE_SUM, NULL));
      CHECK_RANGE("reduce_scatter_v in place", recv, dtype, before, recv_counts[g_rank],
                  expected_reduction(dtype, COLLECTIVE_SUM, before + i));

      for (int root = 0; root < g_size; ++root) {
        const int at_root = g_rank == root;
        /* gather, out of place and in place at the root */
        for (size_t i = 0; i < count; ++i) store(send, dtype, i, moved(g_rank, root, i));
        fill(recv, dtype, count * p, kUntouched);
        CHECK_OK(collective_gather(comm, send, at_root ? recv : NULL, count, dtype, root, NULL));
        if (at_root)
          for (size_t q = 0; q < p; ++q)
            CHECK_RANGE("gather", recv, dtype, q * count, count, moved((int)q, root, i));
        if (at_root) {
          fill(recv, dtype, count * p, kUntouched);
          memcpy((char*)recv + (size_t)root * count * bytes, send, count * bytes);
        }
        CHECK_OK(collective_gather(comm,
                                   at_root ? (char*)recv + (size_t)root * count * bytes : send,
                                   at_root ? recv : NULL, count, dtype, root, NULL));
        if (at_root)
          for (size_t q = 0; q < p; ++q)
            CHECK_RANGE("gather in place", recv, dtype, q * count, count, moved((int)q, root, i));

        /* gather_v: rank q sends (q % 3) * count, placed in reverse order with gaps */
        at = 0;
        for (size_t k = p; k-- > 0;) {
          recv_counts[k] = (k % 3) * count;
          recv_places[k] = at;
          at += recv_counts[k] + 1;
        }
        fill(recv, dtype, at, kUntouched);
        for (size_t i = 0; i < recv_counts[g_rank]; ++i)
          store(send, dtype, i, moved(g_rank, root, i));
        CHECK_OK(collective_gather_v(comm, send, recv_counts[g_rank], at_root ? recv : NULL,
                                     at_root ? recv_counts : NULL, at_root ? recv_places : NULL,
                                     dtype, root, NULL));
        if (at_root)
          for (size_t q = 0; q < p; ++q) {
            CHECK_RANGE("gather_v", recv, dtype, recv_places[q], recv_counts[q],
                        moved((int)q, root, i));
            CHECK_RANGE("gather_v gap", recv, dtype, recv_places[q] + recv_counts[q], 1,
                        kUntouched);
          }

        /* scatter, out of place and in place at the root */
        if (at_root)
          for (size_t q = 0; q < p; ++q)
            for (size_t i = 0; i < count; ++i)
              store(send, dtype, q * count + i, moved(root, (int)q, i));
        fill(recv, dtype, count + 1, kUntouched);
        CHECK_OK(collective_scatter(comm, at_root ? send : NULL, recv, count, dtype, root, NULL));
        CHECK_RANGE("scatter", recv, dtype, 0, count, moved(root, g_rank, i));
        CHECK_RANGE("scatter past its block", recv, dtype, count, 1, kUntouched);
        CHECK_OK(collective_scatter(comm, at_root ? send : NULL,
                                    at_root ? (char*)send + (size_t)root * count * bytes : recv,
                                    count, dtype, root, NULL));
        if (at_root)
          for (size_t q = 0; q < p; ++q)
            CHECK_RANGE("scatter in place (send unchanged)", send, dtype, q * count, count,
                        moved(root, (int)q, i));
        else CHECK_RANGE("scatter (root in place)", recv, dtype, 0, count, moved(root, g_rank, i));

        /* scatter_v: rank q gets (q % 3) * count from places with gaps */
        at = 0;
        for (size_t k = p; k-- > 0;) {
          counts[k] = (k % 3) * count;
          places[k] = at;
          if (at_root)
            for (size_t i = 0; i < counts[k]; ++i)
              store(send, dtype, at + i, moved(root, (int)k, i));
          at += counts[k] + 1;
        }
        fill(recv, dtype, counts[g_rank] + 1, kUntouched);
        CHECK_OK(collective_scatter_v(comm, at_root ? send : NULL, at_root ? counts : NULL,
                                      at_root ? places : NULL, recv, counts[g_rank], dtype, root,
                                      NULL));
        CHECK_RANGE("scatter_v", recv, dtype, 0, counts[g_rank], moved(root, g_rank, i));
        CHECK_RANGE("scatter_v past its block", recv, dtype, counts[g_rank], 1, kUntouched);
      }
      free(send);
      free(recv);
    }
  }

  /* A NULL array that the call needs is refused, naming it, before any buffer is touched. */
  long untouched = kUntouched;
  const int status =
      collective_all_gather_v(comm, &untouched, 1, &untouched, NULL, NULL, COLLECTIVE_INT64, NULL);
  CHECK(status == COLLECTIVE_ERR_INVALID_ARGUMENT &&
            strstr(collective_last_error(), "collective_all_gather_v") != NULL &&
            strstr(collective_last_error(), "recv_counts is NULL") != NULL,
        "all_gather_v with NULL recv_counts: status %s, message \"%s\"",
        collective_status_name(status), collective_last_error());
  CHECK(untouched == kUntouched, "all_gather_v refused but wrote its buffer: %ld", untouched);
  collective_clear_last_error();
}

/* Forced algorithms through the options struct, and its defaults. */
/* send and recv around the ring (even ranks send first: sends are
 * synchronous), every element checked; then a count mismatch between
 * ranks 0 and 1 is COLLECTIVE_ERR_MISMATCH on both, the buffer untouched. */
static void test_point_to_point(collective_comm_t comm) {
  if (g_size < 2) return;
  const int next = (g_rank + 1) % g_size, previous = (g_rank + g_size - 1) % g_size;
  int32_t out[1001], in[1002];
  for (int i = 0; i < 1001; ++i) out[i] = g_rank * 100000 + i;
  for (int i = 0; i < 1002; ++i) in[i] = -1;
  for (int turn = 0; turn < 2; ++turn) {
    if ((g_rank % 2 == 0) == (turn == 0)) {
      CHECK_OK(collective_send(comm, out, 1001, COLLECTIVE_INT32, next, 7, NULL));
    } else {
      CHECK_OK(collective_recv(comm, in, 1001, COLLECTIVE_INT32, previous, 7, NULL));
    }
  }
  for (int i = 0; i < 1001; ++i) {
    CHECK(in[i] == previous * 100000 + i, "recv index %d: expected %d, actual %d", i,
          previous * 100000 + i, (int)in[i]);
  }
  CHECK(in[1001] == -1, "recv wrote past its count");
  if (g_rank <= 1) {
    for (int i = 0; i < 1002; ++i) in[i] = -1;
    const int status = g_rank == 0 ? collective_send(comm, out, 5, COLLECTIVE_INT32, 1, 0, NULL)
                                   : collective_recv(comm, in, 6, COLLECTIVE_INT32, 0, 0, NULL);
    CHECK(status == COLLECTIVE_ERR_MISMATCH, "count mismatch gave %s: %s",
          collective_status_name(status), collective_last_error());
    CHECK(strstr(collective_last_error(), "rank 0's send #1 of 5 x int32") != NULL,
          "mismatch text: %s", collective_last_error());
    for (int i = 0; i < 1002; ++i) CHECK(in[i] == -1, "buffer touched at %d", i);
  }
}

static void test_options(collective_comm_t comm) {
  collective_options_t defaults = COLLECTIVE_OPTIONS_INIT, initialized;
  memset(&initialized, 0x5a, sizeof initialized);
  collective_options_init(&initialized);
  CHECK(initialized.algorithm == defaults.algorithm && initialized.memory == defaults.memory &&
            initialized.timeout_ms == defaults.timeout_ms && defaults.algorithm == 0 &&
            defaults.memory == 0 && defaults.timeout_ms == 0,
        "collective_options_init differs from COLLECTIVE_OPTIONS_INIT");

  const int forced[] = {COLLECTIVE_ALGORITHM_RING, COLLECTIVE_ALGORITHM_RECURSIVE_DOUBLING,
                        COLLECTIVE_ALGORITHM_MPI};
  for (int f = 0; f < 3; ++f) {
    collective_options_t options = COLLECTIVE_OPTIONS_INIT;
    options.algorithm = forced[f];
    options.timeout_ms = 60000;
    int32_t values[101], result[101];
    for (int i = 0; i < 101; ++i) values[i] = g_rank * 1000 + i;
    CHECK_OK(collective_all_reduce(comm, values, result, 101, COLLECTIVE_INT32, COLLECTIVE_SUM,
                                   &options));
    for (int i = 0; i < 101; ++i) {
      const int32_t want = 1000 * g_size * (g_size - 1) / 2 + g_size * i;
      if (result[i] != want) {
        CHECK(0, "all_reduce algorithm=%s index %d: expected %d, actual %d",
              collective_algorithm_name(forced[f]), i, want, result[i]);
        break;
      }
    }
    int last = -1;
    CHECK_OK(collective_comm_last_algorithm(comm, &last));
    CHECK(last == forced[f], "last_algorithm: expected %s, actual %d",
          collective_algorithm_name(forced[f]), last);
  }
  int chosen = -1;
  CHECK_OK(collective_comm_choose_algorithm(comm, COLLECTIVE_KIND_ALL_REDUCE, 1000,
                                            COLLECTIVE_FLOAT32, COLLECTIVE_ALGORITHM_MPI, &chosen));
  CHECK(chosen == COLLECTIVE_ALGORITHM_MPI, "choose_algorithm(mpi) gave %d", chosen);
  uint64_t sequence = 0;
  CHECK_OK(collective_comm_sequence_number(comm, &sequence));
  CHECK(sequence > 0, "sequence_number is 0 after collectives");
}

/* A failing call: the given status on this rank, and a message that names
 * each of the fragments. */
static void expect_failure(const char* what, int status, int expected_status, const char* fragment1,
                           const char* fragment2) {
  CHECK(status == expected_status, "%s: expected status %s, actual %s (%s)", what,
        collective_status_name(expected_status), collective_status_name(status),
        collective_last_error());
  CHECK(collective_last_status() == expected_status, "%s: last_status %d", what,
        collective_last_status());
  const char* message = collective_last_error();
  CHECK(fragment1 == NULL || strstr(message, fragment1) != NULL, "%s: message \"%s\" lacks \"%s\"",
        what, message, fragment1);
  CHECK(fragment2 == NULL || strstr(message, fragment2) != NULL, "%s: message \"%s\" lacks \"%s\"",
        what, message, fragment2);
}

static const char* rank_text_global(void) {
  static char text[32];
  snprintf(text, sizeof text, "(rank %d)", g_rank);
  return text;
}

static void* other_thread_last_error(void* result) {
  /* Another thread has its own last error: none yet. */
  *(int*)result =
      collective_last_status() == COLLECTIVE_SUCCESS && collective_last_error()[0] == '\0';
  return NULL;
}

static void test_errors(collective_comm_t comm) {
  char rank_text[32];
  snprintf(rank_text, sizeof rank_text, "(rank %d)", g_rank);
  float values[4] = {1, 2, 3, 4};

  expect_failure(
      "null handle",
      collective_all_reduce(NULL, values, values, 4, COLLECTIVE_FLOAT32, COLLECTIVE_SUM, NULL),
      COLLECTIVE_ERR_INVALID_ARGUMENT, "collective_all_reduce", "handle is NULL");
  expect_failure("null output", collective_comm_rank(comm, NULL), COLLECTIVE_ERR_INVALID_ARGUMENT,
                 "collective_comm_rank", rank_text);

  /* Bad arguments on every rank: every rank fails before any buffer is touched. */
  expect_failure(
      "null buffer",
      collective_all_reduce(comm, NULL, values, 4, COLLECTIVE_FLOAT32, COLLECTIVE_SUM, NULL),
      COLLECTIVE_ERR_INVALID_ARGUMENT, "all_reduce", rank_text);
  expect_failure("bad dtype", collective_broadcast(comm, values, 4, 99, 0, NULL),
                 COLLECTIVE_ERR_INVALID_ARGUMENT, "broadcast", "99");
  expect_failure("bad op",
                 collective_all_reduce(comm, values, values, 4, COLLECTIVE_FLOAT32, 42, NULL),
                 COLLECTIVE_ERR_INVALID_ARGUMENT, "all_reduce", "42");
  expect_failure("bad root",
                 collective_broadcast(comm, values, 4, COLLECTIVE_FLOAT32, g_size, NULL),
                 COLLECTIVE_ERR_INVALID_ARGUMENT, "broadcast", "root");
  collective_options_t negative = COLLECTIVE_OPTIONS_INIT;
  negative.timeout_ms = -5;
  expect_failure("negative timeout", collective_barrier(comm, &negative),
                 COLLECTIVE_ERR_INVALID_ARGUMENT, "barrier", "timeout");
  collective_options_t ring = COLLECTIVE_OPTIONS_INIT;
  ring.algorithm = COLLECTIVE_ALGORITHM_RING;
  expect_failure("ring barrier", collective_barrier(comm, &ring), COLLECTIVE_ERR_UNSUPPORTED,
                 "barrier", "ring");
  for (int i = 0; i < 4; ++i)
    CHECK(values[i] == (float)(i + 1), "a failed call touched the buffer: index %d is %g", i,
          values[i]);

  /* Different calls on different ranks: every rank reports the mismatch. */
  if (g_size > 1) {
    expect_failure("mismatch",
                   collective_all_reduce(comm, values, values, g_rank == 0 ? 2 : 4,
                                         COLLECTIVE_FLOAT32, COLLECTIVE_SUM, NULL),
                   COLLECTIVE_ERR_MISMATCH, "all_reduce", rank_text);
  }

  /* Each thread has its own last error. */
  int other_clean = 0;
  pthread_t thread;
  pthread_create(&thread, NULL, other_thread_last_error, &other_clean);
  pthread_join(thread, NULL);
  CHECK(other_clean, "another thread saw this thread's last error");
  char copy[16];
  size_t full = collective_copy_last_error(copy, sizeof copy);
  CHECK(full == strlen(collective_last_error()) && strlen(copy) == sizeof copy - 1 &&
            strncmp(copy, collective_last_error(), sizeof copy - 1) == 0,
        "collective_copy_last_error cut \"%s\" wrong: \"%s\" (%zu)", collective_last_error(), copy,
        full);
  char padded[400];
  collective_copy_last_error_padded(padded, sizeof padded);
  CHECK(full < sizeof padded && padded[full] == ' ' && padded[sizeof padded - 1] == ' ' &&
            strncmp(padded, collective_last_error(), full) == 0,
        "collective_copy_last_error_padded");
  collective_clear_last_error();
  CHECK(collective_last_status() == COLLECTIVE_SUCCESS && collective_last_error()[0] == '\0',
        "collective_clear_last_error left a message");

  /* The communicator is still usable after argument errors. */
  float sum = 1.0f;
  CHECK_OK(collective_all_reduce(comm, &sum, &sum, 1, COLLECTIVE_FLOAT32, COLLECTIVE_SUM, NULL));
  CHECK(sum == (float)g_size, "all_reduce after errors: expected %d, actual %g", g_size, sum);
}

static void test_names(void) {
  const char* dtypes[] = {"float16", "bfloat16", "float32", "float64",
                          "int8",    "uint8",    "int32",   "int64"};
  const size_t sizes[] = {2, 2, 4, 8, 1, 1, 4, 8};
  for (int d = 0; d < 8; ++d) {
    int parsed = -1;
    CHECK(strcmp(collective_dtype_name(d), dtypes[d]) == 0, "dtype name %d", d);
    CHECK_OK(collective_parse_dtype(dtypes[d], &parsed));
    CHECK(parsed == d && collective_dtype_size(d) == sizes[d], "dtype %s parse/size", dtypes[d]);
  }
  const char* ops[] = {"sum", "mean", "min", "max", "prod", "band", "bor", "bxor"};
  for (int o = 0; o <= COLLECTIVE_BXOR; ++o) {
    int parsed = -1;
    CHECK(strcmp(collective_op_name(o), ops[o]) == 0, "op name %d", o);
    CHECK_OK(collective_parse_op(ops[o], &parsed));
    CHECK(parsed == o, "op %s parse", ops[o]);
  }
  for (int a = 0; a <= COLLECTIVE_ALGORITHM_BRUCK; ++a) {
    int parsed = -1;
    CHECK_OK(collective_parse_algorithm(collective_algorithm_name(a), &parsed));
    CHECK(parsed == a, "algorithm %d parse", a);
  }
  CHECK(strcmp(collective_algorithm_name(COLLECTIVE_ALGORITHM_PAIRWISE), "pairwise") == 0 &&
            strcmp(collective_algorithm_name(COLLECTIVE_ALGORITHM_BRUCK), "bruck") == 0,
        "the C enum's all_to_all algorithms by name");
  CHECK(strcmp(collective_kind_name(COLLECTIVE_KIND_REDUCE_SCATTER), "reduce_scatter") == 0,
        "kind");
  static const char* const kKindNames[] = {
      "all_reduce", "reduce_scatter", "all_gather",   "broadcast",    "reduce",
      "barrier",    "all_to_all",     "all_to_all_v", "all_gather_v", "reduce_scatter_v",
      "gather",     "gather_v",       "scatter",      "scatter_v"};
  for (int k = 0; k <= COLLECTIVE_KIND_SCATTER_V; ++k)
    CHECK(collective_kind_name(k) != NULL && strcmp(collective_kind_name(k), kKindNames[k]) == 0,
          "kind %d: expected name %s, actual %s", k, kKindNames[k],
          collective_kind_name(k) ? collective_kind_name(k) : "NULL");
  CHECK(collective_kind_name(COLLECTIVE_KIND_SCATTER_V + 1) == NULL,
        "a kind past the enum has a name");
  CHECK(collective_dtype_name(8) == NULL && collective_op_name(-1) == NULL &&
            collective_op_name(COLLECTIVE_BXOR + 1) == NULL &&
            collective_algorithm_name(COLLECTIVE_ALGORITHM_BRUCK + 1) == NULL &&
            collective_status_name(COLLECTIVE_ERR_PEER_FAILED + 1) == NULL &&
            collective_dtype_size(8) == 0,
        "names outside the enums");
  CHECK(collective_status_name(COLLECTIVE_ERR_PEER_FAILED) != NULL &&
            strcmp(collective_status_name(COLLECTIVE_ERR_PEER_FAILED), "peer_failed") == 0,
        "status %d: expected name peer_failed", COLLECTIVE_ERR_PEER_FAILED);
  int parsed = -1;
  expect_failure("parse unknown", collective_parse_dtype("float128", &parsed),
                 COLLECTIVE_ERR_INVALID_ARGUMENT, "collective_parse_dtype", "float128");
  CHECK(strcmp(collective_version_string(), "") != 0 && collective_git_revision() != NULL,
        "version");
}

int main(int argc, char** argv) {
  /* collective_init starts MPI here (the program did not). */
  if (collective_init(&argc, &argv) != COLLECTIVE_SUCCESS) {
    fprintf(stderr, "collective_init: %s\n", collective_last_error());
    return 1;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  CHECK(collective_initialized() == 1, "collective_initialized");
  CHECK_OK(collective_init(NULL, NULL)); /* a second init is a no-op */

  collective_comm_t world = NULL, from_fint = NULL, halves = NULL;
  CHECK_OK(collective_comm_world(&world));
  CHECK_OK(collective_comm_from_fint(MPI_Comm_c2f(MPI_COMM_WORLD), &from_fint));
  int rank = -1, size = -1, nodes = 0, local = -1;
  CHECK_OK(collective_comm_rank(from_fint, &rank));
  CHECK_OK(collective_comm_size(from_fint, &size));
  CHECK(rank == g_rank && size == g_size, "from_fint rank/size %d/%d", rank, size);
  CHECK_OK(collective_comm_node_count(world, &nodes));
  CHECK_OK(collective_comm_local_rank(world, g_rank, &local));
  CHECK(nodes >= 1 && local >= 0 && local < g_size, "topology nodes=%d local=%d", nodes, local);
  size_t needed = 0;
  char json[8];
  CHECK_OK(collective_comm_topology_json(world, json, sizeof json, &needed));
  CHECK(needed > sizeof json && json[0] == '{' && strlen(json) == sizeof json - 1,
        "topology_json needed=%zu", needed);

  test_names();
  test_reductions(world);
  test_data_movement(from_fint);
  test_new_collectives(world);
  test_point_to_point(world);
  test_options(world);

  /* A split communicator: even and odd ranks. */
  CHECK_OK(collective_comm_split(world, g_rank % 2, g_rank, &halves));
  int half_size = 0;
  CHECK_OK(collective_comm_size(halves, &half_size));
  CHECK(half_size == (g_size + 1 - g_rank % 2) / 2, "split size %d", half_size);
  int32_t one = 1;
  CHECK_OK(collective_all_reduce(halves, &one, &one, 1, COLLECTIVE_INT32, COLLECTIVE_SUM, NULL));
  CHECK(one == half_size, "all_reduce on split: expected %d, actual %d", half_size, one);

  /* A subset made by the even ranks alone, highest first; the odd ranks
   * make theirs meanwhile. Rank r of it is the r-th listed. */
  {
    int listed[4] = {0}, n = 0;
    for (int r = g_size - 1; r >= 0; --r) {
      if (r % 2 == g_rank % 2 && n < 4) listed[n++] = r;
    }
    collective_comm_t part = NULL;
    CHECK_OK(collective_comm_subset(world, listed, n, &part));
    int part_rank = -1, part_size = -1;
    CHECK_OK(collective_comm_rank(part, &part_rank));
    CHECK_OK(collective_comm_size(part, &part_size));
    CHECK(part_size == n && listed[part_rank] == g_rank, "subset rank/size %d/%d", part_rank,
          part_size);
    int32_t mine = g_rank, sum = 0;
    CHECK_OK(collective_all_reduce(part, &mine, &sum, 1, COLLECTIVE_INT32, COLLECTIVE_SUM, NULL));
    int32_t expected = 0;
    for (int i = 0; i < n; ++i) expected += listed[i];
    CHECK(sum == expected, "all_reduce on the subset: expected %d, actual %d", expected, sum);
    CHECK_OK(collective_comm_free(&part));
    expect_failure("subset with a negative n", collective_comm_subset(world, listed, -1, &part),
                   COLLECTIVE_ERR_INVALID_ARGUMENT, "n is -1", rank_text_global());
    expect_failure("an empty subset", collective_comm_subset(world, listed, 0, &part),
                   COLLECTIVE_ERR_INVALID_ARGUMENT, "the list of ranks is empty",
                   rank_text_global());
  }

  /* shrink of a healthy communicator: a copy, nothing failed. */
  collective_comm_t shrunk = NULL;
  int failed_ranks[4] = {-1, -1, -1, -1}, failed_count = -1;
  CHECK_OK(collective_comm_failed_ranks(world, failed_ranks, 4, &failed_count));
  CHECK(failed_count == 0 && failed_ranks[0] == -1, "healthy failed_ranks count %d", failed_count);
  CHECK_OK(collective_comm_shrink(world, &shrunk));
  int shrunk_rank = -1, shrunk_size = -1;
  CHECK_OK(collective_comm_rank(shrunk, &shrunk_rank));
  CHECK_OK(collective_comm_size(shrunk, &shrunk_size));
  CHECK(shrunk_rank == g_rank && shrunk_size == g_size, "shrunk rank/size %d/%d", shrunk_rank,
        shrunk_size);
  int32_t counted = 1;
  CHECK_OK(
      collective_all_reduce(shrunk, &counted, &counted, 1, COLLECTIVE_INT32, COLLECTIVE_SUM, NULL));
  CHECK(counted == g_size, "all_reduce on the shrunk copy: expected %d, actual %d", g_size,
        counted);
  expect_failure("failed_ranks with a negative capacity",
                 collective_comm_failed_ranks(shrunk, NULL, -1, &failed_count),
                 COLLECTIVE_ERR_INVALID_ARGUMENT, "capacity is -1", rank_text_global());
  expect_failure("failed_ranks with NULL ranks",
                 collective_comm_failed_ranks(shrunk, NULL, 2, &failed_count),
                 COLLECTIVE_ERR_INVALID_ARGUMENT, "ranks pointer is NULL", rank_text_global());
  CHECK_OK(collective_comm_failed_ranks(shrunk, NULL, 0, &failed_count));
  CHECK(failed_count == 0, "failed_ranks count with capacity 0: %d", failed_count);
  CHECK_OK(collective_comm_free(&shrunk));

  test_errors(world);

  /* abort: this process's copy fails every later call, COMMUNICATION. */
  collective_comm_t doomed = NULL;
  CHECK_OK(collective_comm_split(world, 0, g_rank, &doomed));
  int aborted = -1, node = -1;
  CHECK_OK(collective_comm_aborted(doomed, &aborted));
  CHECK(aborted == 0, "a fresh communicator reads aborted=%d", aborted);
  CHECK_OK(collective_comm_node_of(doomed, g_rank, &node));
  CHECK(node >= 0, "node_of gave %d", node);
  CHECK_OK(collective_comm_abort(doomed, "c_api_test says stop"));
  CHECK_OK(collective_comm_aborted(doomed, &aborted));
  CHECK(aborted == 1, "after abort, aborted=%d", aborted);
  expect_failure("after abort", collective_barrier(doomed, NULL), COLLECTIVE_ERR_COMMUNICATION,
                 "c_api_test says stop", rank_text_global());
  CHECK_OK(collective_comm_free(&doomed));

  /* Node-shared memory as an all_reduce buffer. */
  void* shared = NULL;
  CHECK_OK(collective_comm_allocate(world, 64 * sizeof(double), &shared));
  if (shared != NULL) {
    for (int i = 0; i < 64; ++i) ((double*)shared)[i] = i;
    CHECK_OK(
        collective_all_reduce(world, shared, shared, 64, COLLECTIVE_FLOAT64, COLLECTIVE_MAX, NULL));
    CHECK(((double*)shared)[63] == 63.0, "all_reduce on allocated memory");
    CHECK_OK(collective_comm_deallocate(world, shared));
  }

  CHECK_OK(collective_comm_free(&halves));
  CHECK_OK(collective_comm_free(&from_fint));
  CHECK(halves == NULL && from_fint == NULL, "collective_comm_free left the handle set");
  CHECK_OK(collective_comm_free(&halves)); /* freeing NULL is a no-op */

  /* Failures anywhere fail every rank. */
  long failures = g_failures, total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  CHECK_OK(collective_comm_free(&world));
  if (g_rank == 0)
    printf("c_api_test: %s on %d ranks (%ld failures)\n", total == 0 ? "OK" : "FAILED", g_size,
           total);
  CHECK_OK(collective_finalize());
  return total == 0 ? 0 : 1;
}
