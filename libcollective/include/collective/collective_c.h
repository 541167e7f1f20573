/* libcollective's C API: the C++ API (collective/collective.h) for C and
 * Fortran codes. Opaque communicator handles, int status codes, and a
 * per-thread message for the last failure. No C++ exception crosses it.
 *
 * The header needs no MPI; a program that has MPI (mpi.h) passes its
 * communicators as Fortran handles:
 *
 *   collective_comm_t comm;
 *   if (collective_comm_from_fint(MPI_Comm_c2f(MPI_COMM_WORLD), &comm) != COLLECTIVE_SUCCESS)
 *     fprintf(stderr, "%s\n", collective_last_error());
 *   collective_all_reduce(comm, send, recv, n, COLLECTIVE_FLOAT64, COLLECTIVE_SUM, NULL);
 *   collective_comm_free(&comm);
 *
 * Link with -lcollective_c (pkg-config collective_c, CMake collective::collective_c).
 * Semantics (in-place forms, errors, timeouts) are the C++ API's: see
 * collective/communicator.h and docs/errors.md. */
#ifndef COLLECTIVE_COLLECTIVE_C_H_
#define COLLECTIVE_COLLECTIVE_C_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every function returns one of these (0 is success). The numbers are
 * stable: the Fortran module repeats them. */
typedef enum collective_status {
  COLLECTIVE_SUCCESS = 0,
  COLLECTIVE_ERR_INVALID_ARGUMENT = 1, /* this or another rank's arguments; communicator usable */
  COLLECTIVE_ERR_MISMATCH = 2,         /* the ranks made different calls; usable */
  COLLECTIVE_ERR_UNSUPPORTED =
      3, /* valid, but the forced algorithm/build cannot serve it; usable */
  COLLECTIVE_ERR_COMMUNICATION = 4, /* transport failure or abort; communicator poisoned */
  COLLECTIVE_ERR_TIMEOUT = 5,       /* waited longer than the timeout; poisoned */
  COLLECTIVE_ERR_INTERNAL = 6,      /* out of memory or another unexpected failure */
  COLLECTIVE_ERR_PEER_FAILED = 7    /* a rank of the call died; poisoned (docs/errors.md) */
} collective_status_t;

/* Element types (the C++ DataType, same numbers). */
typedef enum collective_dtype {
  COLLECTIVE_FLOAT16 = 0, /* IEEE half, stored as uint16_t bit patterns */
  COLLECTIVE_BFLOAT16 = 1,
  COLLECTIVE_FLOAT32 = 2,
  COLLECTIVE_FLOAT64 = 3,
  COLLECTIVE_INT8 = 4,
  COLLECTIVE_UINT8 = 5,
  COLLECTIVE_INT32 = 6,
  COLLECTIVE_INT64 = 7
} collective_dtype_t;

/* Reductions (the C++ ReduceOp, same numbers; MEAN as in collective/types.h). */
typedef enum collective_op {
  COLLECTIVE_SUM = 0,
  COLLECTIVE_MEAN = 1,
  COLLECTIVE_MIN = 2,
  COLLECTIVE_MAX = 3,
  COLLECTIVE_PROD = 4,
  /* Bitwise, on the integer types only. */
  COLLECTIVE_BAND = 5,
  COLLECTIVE_BOR = 6,
  COLLECTIVE_BXOR = 7
} collective_op_t;

/* Algorithms (the C++ Algorithm, same numbers). */
typedef enum collective_algorithm {
  COLLECTIVE_ALGORITHM_AUTO = 0,
  COLLECTIVE_ALGORITHM_RING = 1,
  COLLECTIVE_ALGORITHM_RECURSIVE_DOUBLING = 2,
  COLLECTIVE_ALGORITHM_MPI = 3,
  COLLECTIVE_ALGORITHM_SHARED_MEMORY = 4,
  COLLECTIVE_ALGORITHM_HIERARCHICAL = 5,
  COLLECTIVE_ALGORITHM_NCCL = 6,
  COLLECTIVE_ALGORITHM_PAIRWISE = 7,
  COLLECTIVE_ALGORITHM_BRUCK = 8
} collective_algorithm_t;

/* Collective kinds, for collective_comm_choose_algorithm. */
typedef enum collective_kind {
  COLLECTIVE_KIND_ALL_REDUCE = 0,
  COLLECTIVE_KIND_REDUCE_SCATTER = 1,
  COLLECTIVE_KIND_ALL_GATHER = 2,
  COLLECTIVE_KIND_BROADCAST = 3,
  COLLECTIVE_KIND_REDUCE = 4,
  COLLECTIVE_KIND_BARRIER = 5,
  COLLECTIVE_KIND_ALL_TO_ALL = 6,
  COLLECTIVE_KIND_ALL_TO_ALL_V = 7,
  COLLECTIVE_KIND_ALL_GATHER_V = 8,
  COLLECTIVE_KIND_REDUCE_SCATTER_V = 9,
  COLLECTIVE_KIND_GATHER = 10,
  COLLECTIVE_KIND_GATHER_V = 11,
  COLLECTIVE_KIND_SCATTER = 12,
  COLLECTIVE_KIND_SCATTER_V = 13
} collective_kind_t;

/* Where a call's buffers live (the C++ MemoryKind). */
typedef enum collective_memory {
  COLLECTIVE_MEMORY_AUTO = 0,
  COLLECTIVE_MEMORY_HOST = 1,
  COLLECTIVE_MEMORY_DEVICE = 2
} collective_memory_t;

/* The fields every collective shares (the C++ CommonOptions). A NULL
 * options pointer means the defaults; otherwise start from
 * COLLECTIVE_OPTIONS_INIT or collective_options_init(). Op and root are
 * arguments of the calls that have them, as in MPI. */
typedef struct collective_options {
  int32_t algorithm;  /* collective_algorithm_t; default AUTO */
  int32_t memory;     /* collective_memory_t; default AUTO */
  int64_t timeout_ms; /* 0 (default): COLLECTIVE_TIMEOUT, 300 s unless set */
} collective_options_t;

#define COLLECTIVE_OPTIONS_INIT \
  { COLLECTIVE_ALGORITHM_AUTO, COLLECTIVE_MEMORY_AUTO, 0 }
void collective_options_init(collective_options_t* options);

/* An opaque communicator. NULL is never a valid one. A handle may be used
 * from one thread at a time; separate handles are independent. A copy of a
 * handle (b = a) is the same handle: freeing it through any copy makes
 * every copy stale, and a stale or never-issued handle gives
 * COLLECTIVE_ERR_INVALID_ARGUMENT naming the function (docs/embedding.md). */
typedef struct collective_comm* collective_comm_t;

/* --- Errors ---------------------------------------------------------- */

/* The message of this thread's most recent failure,
 * "<operation> (rank <r>): <cause>", or "" when none failed yet. Valid
 * until this thread's next failing call. Successful calls leave it. */
const char* collective_last_error(void);
/* The same, copied into buffer (NUL-terminated, cut to length-1 bytes).
 * Returns the message's full length. */
size_t collective_copy_last_error(char* buffer, size_t length);
/* For Fortran: copied and padded with blanks to length (no NUL). */
size_t collective_copy_last_error_padded(char* buffer, size_t length);
/* The status of this thread's most recent failure (SUCCESS when none). */
int collective_last_status(void);
/* Forgets this thread's last failure. */
void collective_clear_last_error(void);

/* --- MPI start-up ---------------------------------------------------- */

/* Initializes MPI (MPI_THREAD_MULTIPLE) unless the program already did;
 * argc/argv may be NULL. collective_finalize() finalizes it only if
 * collective_init initialized it. Programs that call MPI_Init themselves
 * need neither. A second collective_init before collective_finalize is a
 * no-op; collective_init after collective_finalize (or MPI_Finalize) fails
 * with COLLECTIVE_ERR_INVALID_ARGUMENT: MPI cannot be initialized again. */
int collective_init(int* argc, char*** argv);
int collective_finalize(void);
/* 1 when MPI is initialized and not finalized, else 0. */
int collective_initialized(void);

/* --- Communicators ----------------------------------------------------- */

/* MPI_COMM_WORLD, duplicated. Collective over the world. */
int collective_comm_world(collective_comm_t* out);
/* Wraps a caller-owned MPI communicator given as its Fortran handle
 * (C: MPI_Comm_c2f(comm); Fortran mpi: the integer; mpi_f08: comm%MPI_VAL).
 * The communicator is duplicated; the caller keeps ownership. Collective. */
int collective_comm_from_fint(int mpi_fortran_handle, collective_comm_t* out);
/* A new MPI communicator with comm's group and rank order, as its Fortran
 * handle (C: MPI_Comm_f2c); the caller owns it (MPI_Comm_free) and the
 * library never uses it. Collective (Communicator::to_mpi). */
int collective_comm_to_fint(collective_comm_t comm, int* mpi_fortran_handle);
/* Ranks with the same color form a new communicator, ordered by key. */
int collective_comm_split(collective_comm_t comm, int color, int key, collective_comm_t* out);
/* The n ranks listed of comm as a new communicator, ranked in the listed
 * order (Communicator::subset). Collective over the listed ranks only: the
 * others do not call it. */
int collective_comm_subset(collective_comm_t comm, const int* ranks, int n, collective_comm_t* out);
/* After a rank died (COLLECTIVE_ERR_PEER_FAILED): every survivor calls it
 * and gets, in *out, a communicator of the survivors in their order here
 * (Communicator::shrink; docs/errors.md, "Shrinking after a death"). comm
 * stays failed. Collective over the survivors. */
int collective_comm_shrink(collective_comm_t comm, collective_comm_t* out);
/* The ranks known to have failed, ascending: the first min(*count, capacity)
 * go to ranks (which may be NULL when capacity is 0), and *count gets how
 * many there are (0 on a healthy communicator). */
int collective_comm_failed_ranks(collective_comm_t comm, int* ranks, int capacity, int* count);
/* Frees the handle and sets *comm to NULL; a NULL *comm is a no-op. */
int collective_comm_free(collective_comm_t* comm);

int collective_comm_rank(collective_comm_t comm, int* rank);
int collective_comm_size(collective_comm_t comm, int* size);

/* The topology (docs/topology.md): node count, this rank's node and
 * position on it, and the whole topology as JSON (copied NUL-terminated
 * into buffer, cut to length-1 bytes; *needed, when not NULL, gets the
 * full length + 1). */
int collective_comm_node_count(collective_comm_t comm, int* nodes);
int collective_comm_node_of(collective_comm_t comm, int rank, int* node);
int collective_comm_local_rank(collective_comm_t comm, int rank, int* local_rank);
int collective_comm_topology_json(collective_comm_t comm, char* buffer, size_t length,
                                  size_t* needed);

/* Node-shared memory (Communicator::allocate / deallocate). */
int collective_comm_allocate(collective_comm_t comm, size_t bytes, void** memory);
int collective_comm_deallocate(collective_comm_t comm, void* memory);

/* --- Collectives (blocking; see collective/communicator.h) ------------- */

/* recv[i] = op over ranks of send[i]. In place: send == recv. */
int collective_all_reduce(collective_comm_t comm, const void* send, void* recv, size_t count,
                          int dtype, int op, const collective_options_t* options);
/* send: size*recv_count elements; rank r gets block r of the reduction.
 * In place: recv == send + rank*recv_count elements. */
int collective_reduce_scatter(collective_comm_t comm, const void* send, void* recv,
                              size_t recv_count, int dtype, int op,
                              const collective_options_t* options);
/* recv (size*send_count) gets every rank's block in rank order.
 * In place: send == recv + rank*send_count elements. */
int collective_all_gather(collective_comm_t comm, const void* send, void* recv, size_t send_count,
                          int dtype, const collective_options_t* options);
int collective_broadcast(collective_comm_t comm, void* buffer, size_t count, int dtype, int root,
                         const collective_options_t* options);
/* recv is used on root only (may be NULL elsewhere). In place: send == recv. */
int collective_reduce(collective_comm_t comm, const void* send, void* recv, size_t count, int dtype,
                      int op, int root, const collective_options_t* options);
int collective_barrier(collective_comm_t comm, const collective_options_t* options);

/* Counts and displacements are in elements; an array of them has one entry
 * per rank of the communicator (a NULL array where one is needed, or a
 * displacement array that is NULL while its counts are not, is
 * COLLECTIVE_ERR_INVALID_ARGUMENT, before any buffer is touched). */

/* send and recv hold size*count elements; block q of send goes to rank q,
 * block q of recv comes from rank q. In place: send == recv. */
int collective_all_to_all(collective_comm_t comm, const void* send, void* recv, size_t count,
                          int dtype, const collective_options_t* options);
/* send_counts[q] elements at send + send_displacements[q] go to rank q;
 * recv_counts[q] from rank q land at recv + recv_displacements[q]. In place:
 * send == recv, not NULL (send_counts and send_displacements are ignored, may be
 * NULL). */
int collective_all_to_all_v(collective_comm_t comm, const void* send, const size_t* send_counts,
                            const size_t* send_displacements, void* recv, const size_t* recv_counts,
                            const size_t* recv_displacements, int dtype,
                            const collective_options_t* options);
/* Rank q's send_count elements land at recv + recv_displacements[q]
 * (send_count == recv_counts[rank]). In place: send ==
 * recv + recv_displacements[rank] elements. */
int collective_all_gather_v(collective_comm_t comm, const void* send, size_t send_count, void* recv,
                            const size_t* recv_counts, const size_t* recv_displacements, int dtype,
                            const collective_options_t* options);
/* send holds sum(recv_counts) elements in rank order; rank r gets its
 * recv_counts[r] elements of the reduction. In place: recv == send +
 * recv_counts[0] + ... + recv_counts[rank-1] elements. */
int collective_reduce_scatter_v(collective_comm_t comm, const void* send, void* recv,
                                const size_t* recv_counts, int dtype, int op,
                                const collective_options_t* options);
/* root's recv (size*send_count elements; NULL elsewhere) gets every rank's
 * send in rank order. In place at root: send == recv + root*send_count. */
int collective_gather(collective_comm_t comm, const void* send, void* recv, size_t send_count,
                      int dtype, int root, const collective_options_t* options);
/* As gather, rank q's send_count elements landing at root's recv +
 * recv_displacements[q]; recv, recv_counts and recv_displacements are
 * significant at root only (may be NULL elsewhere). */
int collective_gather_v(collective_comm_t comm, const void* send, size_t send_count, void* recv,
                        const size_t* recv_counts, const size_t* recv_displacements, int dtype,
                        int root, const collective_options_t* options);
/* Rank q's recv gets block q of root's send (size*recv_count elements;
 * NULL elsewhere). In place at root: recv == send + root*recv_count. */
int collective_scatter(collective_comm_t comm, const void* send, void* recv, size_t recv_count,
                       int dtype, int root, const collective_options_t* options);
/* As scatter, rank q's recv_count elements coming from root's send +
 * send_displacements[q]; send, send_counts and send_displacements are
 * significant at root only (may be NULL elsewhere). */
int collective_scatter_v(collective_comm_t comm, const void* send, const size_t* send_counts,
                         const size_t* send_displacements, void* recv, size_t recv_count, int dtype,
                         int root, const collective_options_t* options);

/* --- Collectives in flight (see collective/work.h) --------------------- */

/* A call in flight. NULL is never a valid one; like communicator handles,
 * a freed or never-issued handle gives COLLECTIVE_ERR_INVALID_ARGUMENT. */
typedef struct collective_work* collective_work_t;

/* The collectives above, started: each takes the blocking call's arguments
 * and returns at once with *work set (NULL on failure). Argument errors
 * are the blocking call's, returned here; the rest (mismatch, timeout, a
 * dead peer, abort) comes from collective_work_wait/test. The buffers are
 * the call's until it finished; the count and displacement arrays are
 * copied. Calls start in program order, blocking ones included. Needs
 * MPI_THREAD_MULTIPLE (collective_init asks for it). docs/errors.md,
 * "Calls in flight". */
int collective_all_reduce_async(collective_comm_t comm, const void* send, void* recv, size_t count,
                                int dtype, int op, const collective_options_t* options,
                                collective_work_t* work);
int collective_reduce_scatter_async(collective_comm_t comm, const void* send, void* recv,
                                    size_t recv_count, int dtype, int op,
                                    const collective_options_t* options, collective_work_t* work);
int collective_all_gather_async(collective_comm_t comm, const void* send, void* recv,
                                size_t send_count, int dtype, const collective_options_t* options,
                                collective_work_t* work);
int collective_broadcast_async(collective_comm_t comm, void* buffer, size_t count, int dtype,
                               int root, const collective_options_t* options,
                               collective_work_t* work);
int collective_reduce_async(collective_comm_t comm, const void* send, void* recv, size_t count,
                            int dtype, int op, int root, const collective_options_t* options,
                            collective_work_t* work);
int collective_barrier_async(collective_comm_t comm, const collective_options_t* options,
                             collective_work_t* work);
int collective_all_to_all_async(collective_comm_t comm, const void* send, void* recv, size_t count,
                                int dtype, const collective_options_t* options,
                                collective_work_t* work);
int collective_all_to_all_v_async(collective_comm_t comm, const void* send,
                                  const size_t* send_counts, const size_t* send_displacements,
                                  void* recv, const size_t* recv_counts,
                                  const size_t* recv_displacements, int dtype,
                                  const collective_options_t* options, collective_work_t* work);
int collective_all_gather_v_async(collective_comm_t comm, const void* send, size_t send_count,
                                  void* recv, const size_t* recv_counts,
                                  const size_t* recv_displacements, int dtype,
                                  const collective_options_t* options, collective_work_t* work);
int collective_reduce_scatter_v_async(collective_comm_t comm, const void* send, void* recv,
                                      const size_t* recv_counts, int dtype, int op,
                                      const collective_options_t* options, collective_work_t* work);
int collective_gather_async(collective_comm_t comm, const void* send, void* recv, size_t send_count,
                            int dtype, int root, const collective_options_t* options,
                            collective_work_t* work);
int collective_gather_v_async(collective_comm_t comm, const void* send, size_t send_count,
                              void* recv, const size_t* recv_counts,
                              const size_t* recv_displacements, int dtype, int root,
                              const collective_options_t* options, collective_work_t* work);
int collective_scatter_async(collective_comm_t comm, const void* send, void* recv,
                             size_t recv_count, int dtype, int root,
                             const collective_options_t* options, collective_work_t* work);
int collective_scatter_v_async(collective_comm_t comm, const void* send, const size_t* send_counts,
                               const size_t* send_displacements, void* recv, size_t recv_count,
                               int dtype, int root, const collective_options_t* options,
                               collective_work_t* work);

/* Blocks until the call finished; returns its status (and sets the last
 * error, the blocking call's message, when it failed). Again: the same. */
int collective_work_wait(collective_work_t work);
/* Waits at most timeout_ms: *completed 1 and the call's status when it
 * finished; *completed 0 and COLLECTIVE_SUCCESS when still in flight (the
 * call goes on; nothing else changes). */
int collective_work_wait_for(collective_work_t work, int64_t timeout_ms, int* completed);
/* Never blocks: *completed 0 while in flight; 1 and the call's status once
 * finished. */
int collective_work_test(collective_work_t work, int* completed);
/* Releases the handle and sets *work to NULL (NULL *work: no-op). An
 * unfinished call is not cancelled: it completes in program order and
 * writes its buffers; a failure nobody waited for is logged (WARN). */
int collective_work_free(collective_work_t* work);

/* --- Persistent plans (see collective/plan.h) ---------------------------- */

/* A persistent call: made once, started many times. NULL is never a valid
 * one; a freed or never-issued handle gives COLLECTIVE_ERR_INVALID_ARGUMENT. */
typedef struct collective_plan* collective_plan_t;

/* A collective call, in program order on every rank: checks the arguments,
 * chooses the algorithm and agrees with the other ranks once (a
 * disagreement: COLLECTIVE_ERR_MISMATCH on every rank), writing nothing;
 * *plan is NULL on failure. Needs MPI_THREAD_MULTIPLE. */
int collective_all_reduce_init(collective_comm_t comm, const void* send, void* recv, size_t count,
                               int dtype, int op, const collective_options_t* options,
                               collective_plan_t* plan);
/* The other collectives' plans: the blocking call's arguments, as
 * collective_all_reduce_init (count and displacement arrays copied). */
int collective_reduce_scatter_init(collective_comm_t comm, const void* send, void* recv,
                                   size_t recv_count, int dtype, int op,
                                   const collective_options_t* options, collective_plan_t* plan);
int collective_all_gather_init(collective_comm_t comm, const void* send, void* recv,
                               size_t send_count, int dtype, const collective_options_t* options,
                               collective_plan_t* plan);
int collective_broadcast_init(collective_comm_t comm, void* buffer, size_t count, int dtype,
                              int root, const collective_options_t* options,
                              collective_plan_t* plan);
int collective_reduce_init(collective_comm_t comm, const void* send, void* recv, size_t count,
                           int dtype, int op, int root, const collective_options_t* options,
                           collective_plan_t* plan);
int collective_barrier_init(collective_comm_t comm, const collective_options_t* options,
                            collective_plan_t* plan);
int collective_all_to_all_init(collective_comm_t comm, const void* send, void* recv, size_t count,
                               int dtype, const collective_options_t* options,
                               collective_plan_t* plan);
int collective_all_to_all_v_init(collective_comm_t comm, const void* send,
                                 const size_t* send_counts, const size_t* send_displacements,
                                 void* recv, const size_t* recv_counts,
                                 const size_t* recv_displacements, int dtype,
                                 const collective_options_t* options, collective_plan_t* plan);
int collective_all_gather_v_init(collective_comm_t comm, const void* send, size_t send_count,
                                 void* recv, const size_t* recv_counts,
                                 const size_t* recv_displacements, int dtype,
                                 const collective_options_t* options, collective_plan_t* plan);
int collective_reduce_scatter_v_init(collective_comm_t comm, const void* send, void* recv,
                                     const size_t* recv_counts, int dtype, int op,
                                     const collective_options_t* options, collective_plan_t* plan);
int collective_gather_init(collective_comm_t comm, const void* send, void* recv, size_t send_count,
                           int dtype, int root, const collective_options_t* options,
                           collective_plan_t* plan);
int collective_gather_v_init(collective_comm_t comm, const void* send, size_t send_count,
                             void* recv, const size_t* recv_counts,
                             const size_t* recv_displacements, int dtype, int root,
                             const collective_options_t* options, collective_plan_t* plan);
int collective_scatter_init(collective_comm_t comm, const void* send, void* recv, size_t recv_count,
                            int dtype, int root, const collective_options_t* options,
                            collective_plan_t* plan);
int collective_scatter_v_init(collective_comm_t comm, const void* send, const size_t* send_counts,
                              const size_t* send_displacements, void* recv, size_t recv_count,
                              int dtype, int root, const collective_options_t* options,
                              collective_plan_t* plan);
/* Starts the plan once more on its buffers, in program order: *work as
 * from an _async call, waited for with collective_work_wait/test and freed
 * with collective_work_free. A start while the previous one is unfinished
 * is refused (COLLECTIVE_ERR_INVALID_ARGUMENT, *work NULL). */
int collective_plan_start(collective_plan_t plan, collective_work_t* work);
/* Releases the handle and sets *plan to NULL (NULL *plan: no-op). With a
 * start in flight it refuses (COLLECTIVE_ERR_INVALID_ARGUMENT) and frees
 * nothing: wait for the start's work first. */
int collective_plan_free(collective_plan_t* plan);

/* --- Point-to-point ---------------------------------------------------- */

/* count elements of dtype to (from) rank `peer` of comm (not the caller).
 * Not collective. The k-th send from rank i to rank j pairs with j's k-th
 * recv from i, in program order: tag (>= 0), count and dtype must agree,
 * else both ranks get COLLECTIVE_ERR_MISMATCH naming both calls and recv's
 * buffer is untouched. collective_send returns once the peer accepted the
 * message (a synchronous send); a peer that never calls is
 * COLLECTIVE_ERR_TIMEOUT naming it. options: timeout (algorithm AUTO or
 * MPI; host buffers). docs/errors.md, "Point-to-point send and recv". */
int collective_send(collective_comm_t comm, const void* buffer, size_t count, int dtype, int peer,
                    int tag, const collective_options_t* options);
int collective_recv(collective_comm_t comm, void* buffer, size_t count, int dtype, int peer,
                    int tag, const collective_options_t* options);

/* --- Introspection and control ----------------------------------------- */

/* The algorithm a call with these arguments would run (collective_algorithm_t). */
int collective_comm_choose_algorithm(collective_comm_t comm, int kind, size_t count, int dtype,
                                     int requested, int* algorithm);
/* The algorithm the most recent collective ran. */
int collective_comm_last_algorithm(collective_comm_t comm, int* algorithm);
/* Collectives started on this communicator. */
int collective_comm_sequence_number(collective_comm_t comm, uint64_t* sequence);
/* Communicator::abort: later and blocked calls fail (COMMUNICATION). */
int collective_comm_abort(collective_comm_t comm, const char* reason);
int collective_comm_aborted(collective_comm_t comm, int* aborted);

/* --- Names ------------------------------------------------------------- */

/* Canonical names ("float32", "sum", "ring", "all_reduce",
 * "invalid_argument"); NULL for a value outside the enum. */
const char* collective_dtype_name(int dtype);
const char* collective_op_name(int op);
const char* collective_algorithm_name(int algorithm);
const char* collective_kind_name(int kind);
const char* collective_status_name(int status);
/* Parse a name (the C++ parse_* aliases too): COLLECTIVE_SUCCESS and *value
 * set, or COLLECTIVE_ERR_INVALID_ARGUMENT for an unknown name. */
int collective_parse_dtype(const char* name, int* dtype);
int collective_parse_op(const char* name, int* op);
int collective_parse_algorithm(const char* name, int* algorithm);
/* Bytes per element; 0 for a value outside the enum. */
size_t collective_dtype_size(int dtype);

/* "0.1.0", the git revision built, and 1 when the NCCL path is built in. */
const char* collective_version_string(void);
const char* collective_git_revision(void);
int collective_built_with_nccl(void);

#ifdef __cplusplus
}
#endif

#endif /* COLLECTIVE_COLLECTIVE_C_H_ */
