! libcollective for Fortran 2008: `use collective`. Bind(C) interfaces to
! the C API (collective/collective_c.h), with its constants and options.
! Every function returns an integer(c_int) status (COLLECTIVE_SUCCESS = 0);
! collective_copy_last_error_padded fills a character buffer with the
! message of this thread's last failure, blank-padded (use trim).
!
! Buffers are passed as type(c_ptr): c_loc(array) of a TARGET array.
! Communicators come from the world or from an MPI communicator's Fortran
! handle (the integer of `use mpi`, or comm%MPI_VAL of `use mpi_f08`):
!
!   use collective
!   type(collective_comm) :: comm
!   real(c_double), target :: x(n)
!   status = collective_comm_from_fint(MPI_COMM_WORLD, comm)
!   status = collective_all_reduce(comm, c_loc(x), c_loc(x), int(n, c_size_t), &
!                                  COLLECTIVE_FLOAT64, COLLECTIVE_SUM, collective_options_default)
!   status = collective_comm_free(comm)
!
! Every collective has an _async form (the same arguments, then a
! type(collective_work) set at once; finished by collective_work_wait or
! collective_work_test, released by collective_work_free) and an _init
! form, a persistent plan (the same arguments, then a
! type(collective_plan)): made once, collectively, and started many times
! on the same buffers by collective_plan_start, each start a
! collective_work as above; released by collective_plan_free:
!
!   type(collective_plan) :: plan
!   type(collective_work) :: work
!   status = collective_all_reduce_init(comm, c_loc(x), c_loc(x), int(n, c_size_t), &
!                                       COLLECTIVE_FLOAT64, COLLECTIVE_SUM, &
!                                       collective_options_default, plan)
!   do step = 1, steps
!     x = ...                                  ! the next input, in place
!     status = collective_plan_start(plan, work)
!     status = collective_work_wait(work)
!     status = collective_work_free(work)
!   end do
!   status = collective_plan_free(plan)
!
! The module is interfaces and constants only: link -lcollective_c.
module collective
  use, intrinsic :: iso_c_binding, only: c_int, c_int32_t, c_int64_t, c_size_t, c_ptr, &
                                         c_char, c_null_ptr
  implicit none
  private
  public :: c_int, c_int32_t, c_int64_t, c_size_t, c_ptr, c_char, c_null_ptr

  ! Status codes (collective_status_t).
  integer(c_int), parameter, public :: COLLECTIVE_SUCCESS = 0
  integer(c_int), parameter, public :: COLLECTIVE_ERR_INVALID_ARGUMENT = 1
  integer(c_int), parameter, public :: COLLECTIVE_ERR_MISMATCH = 2
  integer(c_int), parameter, public :: COLLECTIVE_ERR_UNSUPPORTED = 3
  integer(c_int), parameter, public :: COLLECTIVE_ERR_COMMUNICATION = 4
  integer(c_int), parameter, public :: COLLECTIVE_ERR_TIMEOUT = 5
  integer(c_int), parameter, public :: COLLECTIVE_ERR_INTERNAL = 6
  integer(c_int), parameter, public :: COLLECTIVE_ERR_PEER_FAILED = 7

  ! Element types (collective_dtype_t). FLOAT16/BFLOAT16 are 16-bit
  ! patterns (integer(int16) arrays in Fortran).
  integer(c_int), parameter, public :: COLLECTIVE_FLOAT16 = 0
  integer(c_int), parameter, public :: COLLECTIVE_BFLOAT16 = 1
  integer(c_int), parameter, public :: COLLECTIVE_FLOAT32 = 2
  integer(c_int), parameter, public :: COLLECTIVE_FLOAT64 = 3
  integer(c_int), parameter, public :: COLLECTIVE_INT8 = 4
  integer(c_int), parameter, public :: COLLECTIVE_UINT8 = 5
  integer(c_int), parameter, public :: COLLECTIVE_INT32 = 6
  integer(c_int), parameter, public :: COLLECTIVE_INT64 = 7

  ! Reductions (collective_op_t).
  integer(c_int), parameter, public :: COLLECTIVE_SUM = 0
  integer(c_int), parameter, public :: COLLECTIVE_MEAN = 1
  integer(c_int), parameter, public :: COLLECTIVE_MIN = 2
  integer(c_int), parameter, public :: COLLECTIVE_MAX = 3
  integer(c_int), parameter, public :: COLLECTIVE_PROD = 4
  ! Bitwise, on the integer types only.
  integer(c_int), parameter, public :: COLLECTIVE_BAND = 5
  integer(c_int), parameter, public :: COLLECTIVE_BOR = 6
  integer(c_int), parameter, public :: COLLECTIVE_BXOR = 7

  ! Algorithms (collective_algorithm_t).
  integer(c_int), parameter, public :: COLLECTIVE_ALGORITHM_AUTO = 0
  integer(c_int), parameter, public :: COLLECTIVE_ALGORITHM_RING = 1
  integer(c_int), parameter, public :: COLLECTIVE_ALGORITHM_RECURSIVE_DOUBLING = 2
  integer(c_int), parameter, public :: COLLECTIVE_ALGORITHM_MPI = 3
  integer(c_int), parameter, public :: COLLECTIVE_ALGORITHM_SHARED_MEMORY = 4
  integer(c_int), parameter, public :: COLLECTIVE_ALGORITHM_HIERARCHICAL = 5
  integer(c_int), parameter, public :: COLLECTIVE_ALGORITHM_NCCL = 6
  integer(c_int), parameter, public :: COLLECTIVE_ALGORITHM_PAIRWISE = 7
  integer(c_int), parameter, public :: COLLECTIVE_ALGORITHM_BRUCK = 8

  ! Collective kinds (collective_kind_t).
  integer(c_int), parameter, public :: COLLECTIVE_KIND_ALL_REDUCE = 0
  integer(c_int), parameter, public :: COLLECTIVE_KIND_REDUCE_SCATTER = 1
  integer(c_int), parameter, public :: COLLECTIVE_KIND_ALL_GATHER = 2
  integer(c_int), parameter, public :: COLLECTIVE_KIND_BROADCAST = 3
  integer(c_int), parameter, public :: COLLECTIVE_KIND_REDUCE = 4
  integer(c_int), parameter, public :: COLLECTIVE_KIND_BARRIER = 5
  integer(c_int), parameter, public :: COLLECTIVE_KIND_ALL_TO_ALL = 6
  integer(c_int), parameter, public :: COLLECTIVE_KIND_ALL_TO_ALL_V = 7
  integer(c_int), parameter, public :: COLLECTIVE_KIND_ALL_GATHER_V = 8
  integer(c_int), parameter, public :: COLLECTIVE_KIND_REDUCE_SCATTER_V = 9
  integer(c_int), parameter, public :: COLLECTIVE_KIND_GATHER = 10
  integer(c_int), parameter, public :: COLLECTIVE_KIND_GATHER_V = 11
  integer(c_int), parameter, public :: COLLECTIVE_KIND_SCATTER = 12
  integer(c_int), parameter, public :: COLLECTIVE_KIND_SCATTER_V = 13

  ! Memory kinds (collective_memory_t).
  integer(c_int), parameter, public :: COLLECTIVE_MEMORY_AUTO = 0
  integer(c_int), parameter, public :: COLLECTIVE_MEMORY_HOST = 1
  integer(c_int), parameter, public :: COLLECTIVE_MEMORY_DEVICE = 2

  ! collective_options_t. Start from collective_options_default.
  type, bind(C), public :: collective_options
    integer(c_int32_t) :: algorithm
    integer(c_int32_t) :: memory
    integer(c_int64_t) :: timeout_ms
  end type collective_options
  type(collective_options), parameter, public :: collective_options_default = &
      collective_options(COLLECTIVE_ALGORITHM_AUTO, COLLECTIVE_MEMORY_AUTO, 0_c_int64_t)

  ! collective_comm_t: an opaque handle (c_null_ptr when none; no default
  ! initialization, so that the module needs no object code of its own).
  type, bind(C), public :: collective_comm
    type(c_ptr) :: handle
  end type collective_comm

  ! collective_work_t: a collective in flight (collective/work.h), from a
  ! collective_*_async function; finished with collective_work_wait or
  ! collective_work_test, released with collective_work_free. The buffers
  ! are the call's until it finished (a TARGET array that stays in scope,
  ! ASYNCHRONOUS where the compiler could otherwise move its accesses
  ! across the wait). Needs MPI_THREAD_MULTIPLE: MPI_Init_thread.
  type, bind(C), public :: collective_work
    type(c_ptr) :: handle
  end type collective_work

  ! collective_plan_t: a persistent collective (collective/plan.h), from a
  ! collective_*_init function; each collective_plan_start is one call on
  ! the plan's buffers, a collective_work. The buffers are the plan's until
  ! collective_plan_free (TARGET, in scope; ASYNCHRONOUS as for _async).
  ! A start while the previous one is unfinished is refused. Needs
  ! MPI_THREAD_MULTIPLE, as _async.
  type, bind(C), public :: collective_plan
    type(c_ptr) :: handle
  end type collective_plan

  public :: collective_init, collective_finalize, collective_initialized
  public :: collective_options_init
  public :: collective_copy_last_error_padded, collective_last_status, collective_clear_last_error
  public :: collective_comm_world, collective_comm_from_fint, collective_comm_to_fint, collective_comm_split
  public :: collective_comm_subset, collective_comm_shrink, collective_comm_failed_ranks
  public :: collective_comm_free, collective_comm_rank, collective_comm_size
  public :: collective_comm_node_count, collective_comm_node_of, collective_comm_local_rank
  public :: collective_comm_allocate, collective_comm_deallocate
  public :: collective_all_reduce, collective_reduce_scatter, collective_all_gather
  public :: collective_broadcast, collective_reduce, collective_barrier
  public :: collective_all_to_all, collective_all_to_all_v, collective_all_gather_v
  public :: collective_reduce_scatter_v, collective_gather, collective_gather_v
  public :: collective_scatter, collective_scatter_v
  public :: collective_send, collective_recv
  public :: collective_all_reduce_async, collective_reduce_scatter_async
  public :: collective_all_gather_async, collective_broadcast_async, collective_reduce_async
  public :: collective_barrier_async, collective_all_to_all_async, collective_all_to_all_v_async
  public :: collective_all_gather_v_async, collective_reduce_scatter_v_async
  public :: collective_gather_async, collective_gather_v_async, collective_scatter_async
  public :: collective_scatter_v_async
  public :: collective_work_wait, collective_work_wait_for, collective_work_test
  public :: collective_work_free
  public :: collective_all_reduce_init, collective_reduce_scatter_init
  public :: collective_all_gather_init, collective_broadcast_init, collective_reduce_init
  public :: collective_barrier_init, collective_all_to_all_init, collective_all_to_all_v_init
  public :: collective_all_gather_v_init, collective_reduce_scatter_v_init
  public :: collective_gather_init, collective_gather_v_init, collective_scatter_init
  public :: collective_scatter_v_init
  public :: collective_plan_start, collective_plan_free
  public :: collective_comm_choose_algorithm, collective_comm_last_algorithm
  public :: collective_comm_sequence_number, collective_comm_abort, collective_comm_aborted
  public :: collective_dtype_size, collective_built_with_nccl

  interface
    ! MPI start-up: Fortran programs call MPI_Init themselves, or
    ! collective_init(c_null_ptr, c_null_ptr) (no argc/argv from Fortran).
    integer(c_int) function collective_init(argc, argv) bind(C, name="collective_init")
      import :: c_int, c_ptr
      type(c_ptr), value :: argc, argv
    end function collective_init
    integer(c_int) function collective_finalize() bind(C, name="collective_finalize")
      import :: c_int
    end function collective_finalize
    integer(c_int) function collective_initialized() bind(C, name="collective_initialized")
      import :: c_int
    end function collective_initialized

    subroutine collective_options_init(options) bind(C, name="collective_options_init")
      import :: collective_options
      type(collective_options), intent(out) :: options
    end subroutine collective_options_init

    ! The last failure's message, blank-padded to len(buffer): pass
    ! len(buffer, kind=c_size_t). Returns the message's full length.
    integer(c_size_t) function collective_copy_last_error_padded(buffer, length) &
        bind(C, name="collective_copy_last_error_padded")
      import :: c_char, c_size_t
      character(kind=c_char), dimension(*), intent(out) :: buffer
      integer(c_size_t), value :: length
    end function collective_copy_last_error_padded
    integer(c_int) function collective_last_status() bind(C, name="collective_last_status")
      import :: c_int
    end function collective_last_status
    subroutine collective_clear_last_error() bind(C, name="collective_clear_last_error")
    end subroutine collective_clear_last_error

    integer(c_int) function collective_comm_world(comm) bind(C, name="collective_comm_world")
      import :: c_int, collective_comm
      type(collective_comm), intent(out) :: comm
    end function collective_comm_world
    integer(c_int) function collective_comm_from_fint(mpi_comm, comm) &
        bind(C, name="collective_comm_from_fint")
      import :: c_int, collective_comm
      integer(c_int), value :: mpi_comm
      type(collective_comm), intent(out) :: comm
    end function collective_comm_from_fint
    ! A new MPI communicator (an integer handle) with comm's group; the
    ! caller owns it and frees it with MPI_Comm_free.
    integer(c_int) function collective_comm_to_fint(comm, mpi_comm) &
        bind(C, name="collective_comm_to_fint")
      import :: c_int, collective_comm
      type(collective_comm), value :: comm
      integer(c_int), intent(out) :: mpi_comm
    end function collective_comm_to_fint
    integer(c_int) function collective_comm_split(comm, color, key, new_comm) &
        bind(C, name="collective_comm_split")
      import :: c_int, collective_comm
      type(collective_comm), value :: comm
      integer(c_int), value :: color, key
      type(collective_comm), intent(out) :: new_comm
    end function collective_comm_split
    ! The n ranks listed (0-based, as MPI's) as a new communicator, ranked in
    ! the listed order; called by the listed ranks only (Communicator::subset).
    integer(c_int) function collective_comm_subset(comm, ranks, n, new_comm) &
        bind(C, name="collective_comm_subset")
      import :: c_int, collective_comm
      type(collective_comm), value :: comm
      integer(c_int), intent(in) :: ranks(*)
      integer(c_int), value :: n
      type(collective_comm), intent(out) :: new_comm
    end function collective_comm_subset
    ! After a rank died (COLLECTIVE_ERR_PEER_FAILED): every survivor calls
    ! it and gets a communicator of the survivors (Communicator::shrink).
    integer(c_int) function collective_comm_shrink(comm, new_comm) &
        bind(C, name="collective_comm_shrink")
      import :: c_int, collective_comm
      type(collective_comm), value :: comm
      type(collective_comm), intent(out) :: new_comm
    end function collective_comm_shrink
    ! The failed ranks, ascending: the first min(count, capacity) in ranks.
    integer(c_int) function collective_comm_failed_ranks(comm, ranks, capacity, count) &
        bind(C, name="collective_comm_failed_ranks")
      import :: c_int, collective_comm
      type(collective_comm), value :: comm
      integer(c_int), intent(out) :: ranks(*)
      integer(c_int), value :: capacity
      integer(c_int), intent(out) :: count
    end function collective_comm_failed_ranks
    ! Frees the communicator and resets comm%handle to c_null_ptr.
    integer(c_int) function collective_comm_free(comm) bind(C, name="collective_comm_free")
      import :: c_int, collective_comm
      type(collective_comm), intent(inout) :: comm
    end function collective_comm_free
    integer(c_int) function collective_comm_rank(comm, rank) bind(C, name="collective_comm_rank")
      import :: c_int, collective_comm
      type(collective_comm), value :: comm
      integer(c_int), intent(out) :: rank
    end function collective_comm_rank
    integer(c_int) function collective_comm_size(comm, size) bind(C, name="collective_comm_size")
      import :: c_int, collective_comm
      type(collective_comm), value :: comm
      integer(c_int), intent(out) :: size
    end function collective_comm_size
    integer(c_int) function collective_comm_node_count(comm, nodes) &
        bind(C, name="collective_comm_node_count")
      import :: c_int, collective_comm
      type(collective_comm), value :: comm
      integer(c_int), intent(out) :: nodes
    end function collective_comm_node_count
    integer(c_int) function collective_comm_node_of(comm, rank, node) &
        bind(C, name="collective_comm_node_of")
      import :: c_int, collective_comm
      type(collective_comm), value :: comm
      integer(c_int), value :: rank
      integer(c_int), intent(out) :: node
    end function collective_comm_node_of
    integer(c_int) function collective_comm_local_rank(comm, rank, local_rank) &
        bind(C, name="collective_comm_local_rank")
      import :: c_int, collective_comm
      type(collective_comm), value :: comm
      integer(c_int), value :: rank
      integer(c_int), intent(out) :: local_rank
    end function collective_comm_local_rank
    integer(c_int) function collective_comm_allocate(comm, bytes, memory) &
        bind(C, name="collective_comm_allocate")
      import :: c_int, c_size_t, c_ptr, collective_comm
      type(collective_comm), value :: comm
      integer(c_size_t), value :: bytes
      type(c_ptr), intent(out) :: memory
    end function collective_comm_allocate
    integer(c_int) function collective_comm_deallocate(comm, memory) &
        bind(C, name="collective_comm_deallocate")
      import :: c_int, c_ptr, collective_comm
      type(collective_comm), value :: comm
      type(c_ptr), value :: memory
    end function collective_comm_deallocate

    ! The collectives: semantics and in-place forms as in collective_c.h.
    integer(c_int) function collective_all_reduce(comm, send, recv, count, dtype, op, options) &
        bind(C, name="collective_all_reduce")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, op
      type(collective_options), intent(in) :: options
    end function collective_all_reduce
    integer(c_int) function collective_reduce_scatter(comm, send, recv, recv_count, dtype, op, &
                                                      options) &
        bind(C, name="collective_reduce_scatter")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv
      integer(c_size_t), value :: recv_count
      integer(c_int), value :: dtype, op
      type(collective_options), intent(in) :: options
    end function collective_reduce_scatter
    integer(c_int) function collective_all_gather(comm, send, recv, send_count, dtype, options) &
        bind(C, name="collective_all_gather")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv
      integer(c_size_t), value :: send_count
      integer(c_int), value :: dtype
      type(collective_options), intent(in) :: options
    end function collective_all_gather
    integer(c_int) function collective_broadcast(comm, buffer, count, dtype, root, options) &
        bind(C, name="collective_broadcast")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options
      type(collective_comm), value :: comm
      type(c_ptr), value :: buffer
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, root
      type(collective_options), intent(in) :: options
    end function collective_broadcast
    integer(c_int) function collective_reduce(comm, send, recv, count, dtype, op, root, options) &
        bind(C, name="collective_reduce")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, op, root
      type(collective_options), intent(in) :: options
    end function collective_reduce
    integer(c_int) function collective_barrier(comm, options) bind(C, name="collective_barrier")
      import :: c_int, collective_comm, collective_options
      type(collective_comm), value :: comm
      type(collective_options), intent(in) :: options
    end function collective_barrier

    ! Counts and displacements in elements, one per rank: the *_v
    ! functions take them as type(c_ptr), c_loc(counts) of a TARGET
    ! integer(c_size_t) array of the communicator's size, or c_null_ptr
    ! where collective_c.h lets an array be NULL (in place, or significant
    ! at the root only).
    integer(c_int) function collective_all_to_all(comm, send, recv, count, dtype, options) &
        bind(C, name="collective_all_to_all")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype
      type(collective_options), intent(in) :: options
    end function collective_all_to_all
    integer(c_int) function collective_all_to_all_v(comm, send, send_counts, send_displacements, &
                                                    recv, recv_counts, recv_displacements, dtype, &
                                                    options) &
        bind(C, name="collective_all_to_all_v")
      import :: c_int, c_ptr, collective_comm, collective_options
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, send_counts, send_displacements
      type(c_ptr), value :: recv, recv_counts, recv_displacements
      integer(c_int), value :: dtype
      type(collective_options), intent(in) :: options
    end function collective_all_to_all_v
    integer(c_int) function collective_all_gather_v(comm, send, send_count, recv, recv_counts, &
                                                    recv_displacements, dtype, options) &
        bind(C, name="collective_all_gather_v")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv, recv_counts, recv_displacements
      integer(c_size_t), value :: send_count
      integer(c_int), value :: dtype
      type(collective_options), intent(in) :: options
    end function collective_all_gather_v
    integer(c_int) function collective_reduce_scatter_v(comm, send, recv, recv_counts, dtype, op, &
                                                        options) &
        bind(C, name="collective_reduce_scatter_v")
      import :: c_int, c_ptr, collective_comm, collective_options
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv, recv_counts
      integer(c_int), value :: dtype, op
      type(collective_options), intent(in) :: options
    end function collective_reduce_scatter_v
    integer(c_int) function collective_gather(comm, send, recv, send_count, dtype, root, options) &
        bind(C, name="collective_gather")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv
      integer(c_size_t), value :: send_count
      integer(c_int), value :: dtype, root
      type(collective_options), intent(in) :: options
    end function collective_gather
    integer(c_int) function collective_gather_v(comm, send, send_count, recv, recv_counts, &
                                                recv_displacements, dtype, root, options) &
        bind(C, name="collective_gather_v")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv, recv_counts, recv_displacements
      integer(c_size_t), value :: send_count
      integer(c_int), value :: dtype, root
      type(collective_options), intent(in) :: options
    end function collective_gather_v
    integer(c_int) function collective_scatter(comm, send, recv, recv_count, dtype, root, options) &
        bind(C, name="collective_scatter")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv
      integer(c_size_t), value :: recv_count
      integer(c_int), value :: dtype, root
      type(collective_options), intent(in) :: options
    end function collective_scatter
    integer(c_int) function collective_scatter_v(comm, send, send_counts, send_displacements, &
                                                 recv, recv_count, dtype, root, options) &
        bind(C, name="collective_scatter_v")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, send_counts, send_displacements, recv
      integer(c_size_t), value :: recv_count
      integer(c_int), value :: dtype, root
      type(collective_options), intent(in) :: options
    end function collective_scatter_v

    ! The collectives above, started (collective/work.h): the blocking
    ! call's arguments and then `work`, set at once (c_null_ptr on
    ! failure). Argument errors are returned here, the rest by
    ! collective_work_wait or collective_work_test.
    integer(c_int) function collective_all_reduce_async(comm, send, recv, count, dtype, op, options, work) &
        bind(C, name="collective_all_reduce_async")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options, collective_work
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, op
      type(collective_options), intent(in) :: options
      type(collective_work), intent(out) :: work
    end function collective_all_reduce_async
    integer(c_int) function collective_reduce_scatter_async(comm, send, recv, recv_count, dtype, op, &
                                                      options, work) &
        bind(C, name="collective_reduce_scatter_async")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options, collective_work
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv
      integer(c_size_t), value :: recv_count
      integer(c_int), value :: dtype, op
      type(collective_options), intent(in) :: options
      type(collective_work), intent(out) :: work
    end function collective_reduce_scatter_async
    integer(c_int) function collective_all_gather_async(comm, send, recv, send_count, dtype, options, work) &
        bind(C, name="collective_all_gather_async")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options, collective_work
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv
      integer(c_size_t), value :: send_count
      integer(c_int), value :: dtype
      type(collective_options), intent(in) :: options
      type(collective_work), intent(out) :: work
    end function collective_all_gather_async
    integer(c_int) function collective_broadcast_async(comm, buffer, count, dtype, root, options, work) &
        bind(C, name="collective_broadcast_async")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options, collective_work
      type(collective_comm), value :: comm
      type(c_ptr), value :: buffer
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, root
      type(collective_options), intent(in) :: options
      type(collective_work), intent(out) :: work
    end function collective_broadcast_async
    integer(c_int) function collective_reduce_async(comm, send, recv, count, dtype, op, root, options, work) &
        bind(C, name="collective_reduce_async")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options, collective_work
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, op, root
      type(collective_options), intent(in) :: options
      type(collective_work), intent(out) :: work
    end function collective_reduce_async
    integer(c_int) function collective_barrier_async(comm, options, work) &
        bind(C, name="collective_barrier_async")
      import :: c_int, collective_comm, collective_options, collective_work
      type(collective_comm), value :: comm
      type(collective_options), intent(in) :: options
      type(collective_work), intent(out) :: work
    end function collective_barrier_async
    integer(c_int) function collective_all_to_all_async(comm, send, recv, count, dtype, options, work) &
        bind(C, name="collective_all_to_all_async")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options, collective_work
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype
      type(collective_options), intent(in) :: options
      type(collective_work), intent(out) :: work
    end function collective_all_to_all_async
    integer(c_int) function collective_all_to_all_v_async(comm, send, send_counts, send_displacements, &
                                                    recv, recv_counts, recv_displacements, dtype, &
                                                    options, work) &
        bind(C, name="collective_all_to_all_v_async")
      import :: c_int, c_ptr, collective_comm, collective_options, collective_work
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, send_counts, send_displacements
      type(c_ptr), value :: recv, recv_counts, recv_displacements
      integer(c_int), value :: dtype
      type(collective_options), intent(in) :: options
      type(collective_work), intent(out) :: work
    end function collective_all_to_all_v_async
    integer(c_int) function collective_all_gather_v_async(comm, send, send_count, recv, recv_counts, &
                                                    recv_displacements, dtype, options, work) &
        bind(C, name="collective_all_gather_v_async")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options, collective_work
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv, recv_counts, recv_displacements
      integer(c_size_t), value :: send_count
      integer(c_int), value :: dtype
      type(collective_options), intent(in) :: options
      type(collective_work), intent(out) :: work
    end function collective_all_gather_v_async
    integer(c_int) function collective_reduce_scatter_v_async(comm, send, recv, recv_counts, dtype, op, &
                                                        options, work) &
        bind(C, name="collective_reduce_scatter_v_async")
      import :: c_int, c_ptr, collective_comm, collective_options, collective_work
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv, recv_counts
      integer(c_int), value :: dtype, op
      type(collective_options), intent(in) :: options
      type(collective_work), intent(out) :: work
    end function collective_reduce_scatter_v_async
    integer(c_int) function collective_gather_async(comm, send, recv, send_count, dtype, root, options, work) &
        bind(C, name="collective_gather_async")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options, collective_work
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv
      integer(c_size_t), value :: send_count
      integer(c_int), value :: dtype, root
      type(collective_options), intent(in) :: options
      type(collective_work), intent(out) :: work
    end function collective_gather_async
    integer(c_int) function collective_gather_v_async(comm, send, send_count, recv, recv_counts, &
                                                recv_displacements, dtype, root, options, work) &
        bind(C, name="collective_gather_v_async")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options, collective_work
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv, recv_counts, recv_displacements
      integer(c_size_t), value :: send_count
      integer(c_int), value :: dtype, root
      type(collective_options), intent(in) :: options
      type(collective_work), intent(out) :: work
    end function collective_gather_v_async
    integer(c_int) function collective_scatter_async(comm, send, recv, recv_count, dtype, root, options, work) &
        bind(C, name="collective_scatter_async")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options, collective_work
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv
      integer(c_size_t), value :: recv_count
      integer(c_int), value :: dtype, root
      type(collective_options), intent(in) :: options
      type(collective_work), intent(out) :: work
    end function collective_scatter_async
    integer(c_int) function collective_scatter_v_async(comm, send, send_counts, send_displacements, &
                                                 recv, recv_count, dtype, root, options, work) &
        bind(C, name="collective_scatter_v_async")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options, collective_work
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, send_counts, send_displacements, recv
      integer(c_size_t), value :: recv_count
      integer(c_int), value :: dtype, root
      type(collective_options), intent(in) :: options
      type(collective_work), intent(out) :: work
    end function collective_scatter_v_async
    ! Blocks until the call finished; its status (and last error).
    integer(c_int) function collective_work_wait(work) bind(C, name="collective_work_wait")
      import :: c_int, collective_work
      type(collective_work), value :: work
    end function collective_work_wait
    ! At most timeout_ms: completed 1 and the call's status when finished;
    ! completed 0 and COLLECTIVE_SUCCESS when still in flight.
    integer(c_int) function collective_work_wait_for(work, timeout_ms, completed) &
        bind(C, name="collective_work_wait_for")
      import :: c_int, c_int64_t, collective_work
      type(collective_work), value :: work
      integer(c_int64_t), value :: timeout_ms
      integer(c_int), intent(out) :: completed
    end function collective_work_wait_for
    ! Never blocks: completed 0 while in flight; 1 and the status once done.
    integer(c_int) function collective_work_test(work, completed) &
        bind(C, name="collective_work_test")
      import :: c_int, collective_work
      type(collective_work), value :: work
      integer(c_int), intent(out) :: completed
    end function collective_work_test
    ! Releases the handle (an unfinished call still runs to its end) and
    ! sets it to c_null_ptr.
    integer(c_int) function collective_work_free(work) bind(C, name="collective_work_free")
      import :: c_int, collective_work
      type(collective_work), intent(inout) :: work
    end function collective_work_free

    ! The collectives above as persistent plans (collective/plan.h): the
    ! blocking call's arguments and then `plan` (c_null_ptr on failure).
    ! A collective call, in program order on every rank: checks the
    ! arguments, chooses the algorithm and agrees with the other ranks
    ! (COLLECTIVE_ERR_MISMATCH on every rank when they differ), writing
    ! nothing; the count and displacement arrays are copied.
    integer(c_int) function collective_all_reduce_init(comm, send, recv, count, dtype, op, &
                                                       options, plan) &
        bind(C, name="collective_all_reduce_init")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options, collective_plan
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, op
      type(collective_options), intent(in) :: options
      type(collective_plan), intent(out) :: plan
    end function collective_all_reduce_init
    integer(c_int) function collective_reduce_scatter_init(comm, send, recv, recv_count, dtype, &
                                                           op, options, plan) &
        bind(C, name="collective_reduce_scatter_init")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options, collective_plan
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv
      integer(c_size_t), value :: recv_count
      integer(c_int), value :: dtype, op
      type(collective_options), intent(in) :: options
      type(collective_plan), intent(out) :: plan
    end function collective_reduce_scatter_init
    integer(c_int) function collective_all_gather_init(comm, send, recv, send_count, dtype, &
                                                       options, plan) &
        bind(C, name="collective_all_gather_init")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options, collective_plan
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv
      integer(c_size_t), value :: send_count
      integer(c_int), value :: dtype
      type(collective_options), intent(in) :: options
      type(collective_plan), intent(out) :: plan
    end function collective_all_gather_init
    integer(c_int) function collective_broadcast_init(comm, buffer, count, dtype, root, options, &
                                                      plan) &
        bind(C, name="collective_broadcast_init")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options, collective_plan
      type(collective_comm), value :: comm
      type(c_ptr), value :: buffer
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, root
      type(collective_options), intent(in) :: options
      type(collective_plan), intent(out) :: plan
    end function collective_broadcast_init
    integer(c_int) function collective_reduce_init(comm, send, recv, count, dtype, op, root, &
                                                   options, plan) &
        bind(C, name="collective_reduce_init")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options, collective_plan
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, op, root
      type(collective_options), intent(in) :: options
      type(collective_plan), intent(out) :: plan
    end function collective_reduce_init
    integer(c_int) function collective_barrier_init(comm, options, plan) &
        bind(C, name="collective_barrier_init")
      import :: c_int, collective_comm, collective_options, collective_plan
      type(collective_comm), value :: comm
      type(collective_options), intent(in) :: options
      type(collective_plan), intent(out) :: plan
    end function collective_barrier_init
    integer(c_int) function collective_all_to_all_init(comm, send, recv, count, dtype, options, &
                                                       plan) &
        bind(C, name="collective_all_to_all_init")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options, collective_plan
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype
      type(collective_options), intent(in) :: options
      type(collective_plan), intent(out) :: plan
    end function collective_all_to_all_init
    integer(c_int) function collective_all_to_all_v_init(comm, send, send_counts, &
                                                         send_displacements, recv, recv_counts, &
                                                         recv_displacements, dtype, options, plan) &
        bind(C, name="collective_all_to_all_v_init")
      import :: c_int, c_ptr, collective_comm, collective_options, collective_plan
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, send_counts, send_displacements
      type(c_ptr), value :: recv, recv_counts, recv_displacements
      integer(c_int), value :: dtype
      type(collective_options), intent(in) :: options
      type(collective_plan), intent(out) :: plan
    end function collective_all_to_all_v_init
    integer(c_int) function collective_all_gather_v_init(comm, send, send_count, recv, &
                                                         recv_counts, recv_displacements, dtype, &
                                                         options, plan) &
        bind(C, name="collective_all_gather_v_init")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options, collective_plan
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv, recv_counts, recv_displacements
      integer(c_size_t), value :: send_count
      integer(c_int), value :: dtype
      type(collective_options), intent(in) :: options
      type(collective_plan), intent(out) :: plan
    end function collective_all_gather_v_init
    integer(c_int) function collective_reduce_scatter_v_init(comm, send, recv, recv_counts, dtype, &
                                                             op, options, plan) &
        bind(C, name="collective_reduce_scatter_v_init")
      import :: c_int, c_ptr, collective_comm, collective_options, collective_plan
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv, recv_counts
      integer(c_int), value :: dtype, op
      type(collective_options), intent(in) :: options
      type(collective_plan), intent(out) :: plan
    end function collective_reduce_scatter_v_init
    integer(c_int) function collective_gather_init(comm, send, recv, send_count, dtype, root, &
                                                   options, plan) &
        bind(C, name="collective_gather_init")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options, collective_plan
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv
      integer(c_size_t), value :: send_count
      integer(c_int), value :: dtype, root
      type(collective_options), intent(in) :: options
      type(collective_plan), intent(out) :: plan
    end function collective_gather_init
    integer(c_int) function collective_gather_v_init(comm, send, send_count, recv, recv_counts, &
                                                     recv_displacements, dtype, root, options, &
                                                     plan) &
        bind(C, name="collective_gather_v_init")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options, collective_plan
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv, recv_counts, recv_displacements
      integer(c_size_t), value :: send_count
      integer(c_int), value :: dtype, root
      type(collective_options), intent(in) :: options
      type(collective_plan), intent(out) :: plan
    end function collective_gather_v_init
    integer(c_int) function collective_scatter_init(comm, send, recv, recv_count, dtype, root, &
                                                    options, plan) &
        bind(C, name="collective_scatter_init")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options, collective_plan
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, recv
      integer(c_size_t), value :: recv_count
      integer(c_int), value :: dtype, root
      type(collective_options), intent(in) :: options
      type(collective_plan), intent(out) :: plan
    end function collective_scatter_init
    integer(c_int) function collective_scatter_v_init(comm, send, send_counts, send_displacements, &
                                                      recv, recv_count, dtype, root, options, &
                                                      plan) &
        bind(C, name="collective_scatter_v_init")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options, collective_plan
      type(collective_comm), value :: comm
      type(c_ptr), value :: send, send_counts, send_displacements, recv
      integer(c_size_t), value :: recv_count
      integer(c_int), value :: dtype, root
      type(collective_options), intent(in) :: options
      type(collective_plan), intent(out) :: plan
    end function collective_scatter_v_init
    ! Starts the plan once more on its buffers, in program order: `work` as
    ! from an _async call. A start while the previous one is unfinished is
    ! refused (COLLECTIVE_ERR_INVALID_ARGUMENT, work c_null_ptr).
    integer(c_int) function collective_plan_start(plan, work) bind(C, name="collective_plan_start")
      import :: c_int, collective_plan, collective_work
      type(collective_plan), value :: plan
      type(collective_work), intent(out) :: work
    end function collective_plan_start
    ! Releases the plan and sets it to c_null_ptr (c_null_ptr: no-op). With
    ! a start in flight it refuses (COLLECTIVE_ERR_INVALID_ARGUMENT) and
    ! frees nothing: wait for the start's work first.
    integer(c_int) function collective_plan_free(plan) bind(C, name="collective_plan_free")
      import :: c_int, collective_plan
      type(collective_plan), intent(inout) :: plan
    end function collective_plan_free

    ! Point-to-point (not collective): docs/errors.md.
    integer(c_int) function collective_send(comm, buffer, count, dtype, peer, tag, options) &
        bind(C, name="collective_send")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options
      type(collective_comm), value :: comm
      type(c_ptr), value :: buffer
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, peer, tag
      type(collective_options), intent(in) :: options
    end function collective_send
    integer(c_int) function collective_recv(comm, buffer, count, dtype, peer, tag, options) &
        bind(C, name="collective_recv")
      import :: c_int, c_size_t, c_ptr, collective_comm, collective_options
      type(collective_comm), value :: comm
      type(c_ptr), value :: buffer
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, peer, tag
      type(collective_options), intent(in) :: options
    end function collective_recv

    integer(c_int) function collective_comm_choose_algorithm(comm, kind, count, dtype, requested, &
                                                             algorithm) &
        bind(C, name="collective_comm_choose_algorithm")
      import :: c_int, c_size_t, collective_comm
      type(collective_comm), value :: comm
      integer(c_int), value :: kind
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, requested
      integer(c_int), intent(out) :: algorithm
    end function collective_comm_choose_algorithm
    integer(c_int) function collective_comm_last_algorithm(comm, algorithm) &
        bind(C, name="collective_comm_last_algorithm")
      import :: c_int, collective_comm
      type(collective_comm), value :: comm
      integer(c_int), intent(out) :: algorithm
    end function collective_comm_last_algorithm
    integer(c_int) function collective_comm_sequence_number(comm, sequence) &
        bind(C, name="collective_comm_sequence_number")
      import :: c_int, c_int64_t, collective_comm
      type(collective_comm), value :: comm
      integer(c_int64_t), intent(out) :: sequence
    end function collective_comm_sequence_number
    ! reason: a NUL-terminated string (trim(text) // c_null_char).
    integer(c_int) function collective_comm_abort(comm, reason) &
        bind(C, name="collective_comm_abort")
      import :: c_int, c_char, collective_comm
      type(collective_comm), value :: comm
      character(kind=c_char), dimension(*), intent(in) :: reason
    end function collective_comm_abort
    integer(c_int) function collective_comm_aborted(comm, aborted) &
        bind(C, name="collective_comm_aborted")
      import :: c_int, collective_comm
      type(collective_comm), value :: comm
      integer(c_int), intent(out) :: aborted
    end function collective_comm_aborted

    integer(c_size_t) function collective_dtype_size(dtype) bind(C, name="collective_dtype_size")
      import :: c_int, c_size_t
      integer(c_int), value :: dtype
    end function collective_dtype_size
    integer(c_int) function collective_built_with_nccl() bind(C, name="collective_built_with_nccl")
      import :: c_int
    end function collective_built_with_nccl
  end interface

end module collective
