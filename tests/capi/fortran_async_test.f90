! The Fortran module's calls in flight under mpirun: every collective's
! _async form started before any is waited for, completed by
! collective_work_wait, collective_work_test and collective_work_wait_for,
! every element checked; an argument error returned by the start itself; a
! freed handle refused. A failure on any rank fails the run; each names
! rank, call, index, expected and actual.
program fortran_async_test
  use mpi
  use collective
  use fortran_test_text, only: decimal
  use, intrinsic :: iso_c_binding, only: c_loc
  implicit none
  integer, parameter :: n = 1001, m = 5
  integer :: ierr, provided, rank, size, failures, total, i, k, p, t, offset, done_count
  type(collective_comm) :: world
  type(collective_work) :: works(14), bad
  integer(c_int) :: completed, code
  integer(c_int32_t), target, asynchronous :: ar_send(n), ar_recv(n), bc(n), rd_send(n), rd_recv(n)
  integer(c_int32_t), allocatable, target, asynchronous :: rs_send(:), rs_recv(:), ag_send(:), &
      ag_recv(:), a2a_send(:), a2a_recv(:), v_send(:), v_recv(:), agv_send(:), agv_recv(:), &
      rsv_send(:), rsv_recv(:), g_send(:), g_recv(:), gv_recv(:), s_send(:), s_recv(:), &
      sv_send(:), sv_recv(:)
  integer(c_size_t), allocatable, target :: s_counts(:), s_displs(:), r_counts(:), r_displs(:), &
      grow_counts(:), grow_displs(:)
  character(len=400) :: message
  integer(c_size_t) :: length
  logical :: finished(14)

  failures = 0
  call MPI_Init_thread(MPI_THREAD_MULTIPLE, provided, ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  if (provided < MPI_THREAD_MULTIPLE) call fail_msg('MPI_THREAD_MULTIPLE not provided')
  call expect_ok(collective_comm_from_fint(int(MPI_COMM_WORLD, c_int), world), 'from_fint')

  ! Counts p+1 from/to rank p (grow_*), and this rank's own.
  allocate(grow_counts(size), grow_displs(size), s_counts(size), s_displs(size), &
           r_counts(size), r_displs(size))
  t = 0
  do p = 1, size
    grow_counts(p) = int(p, c_size_t)
    grow_displs(p) = int(t, c_size_t)
    t = t + p
  end do
  ! all_to_all_v: to peer p (0-based) p+1 elements; from every peer rank+1.
  do p = 1, size
    s_counts(p) = int(p, c_size_t)
    r_counts(p) = int(rank + 1, c_size_t)
  end do
  s_displs = grow_displs
  do p = 1, size
    r_displs(p) = int((p - 1) * (rank + 1), c_size_t)
  end do

  ! 1 all_reduce SUM.
  do i = 1, n
    ar_send(i) = i + rank
  end do
  call expect_ok(collective_all_reduce_async(world, c_loc(ar_send), c_loc(ar_recv), int(n, c_size_t), &
                 COLLECTIVE_INT32, COLLECTIVE_SUM, collective_options_default, works(1)), 'all_reduce_async')
  ! 2 reduce_scatter SUM, m per rank.
  allocate(rs_send(m * size), rs_recv(m))
  do i = 1, m * size
    rs_send(i) = i * (rank + 1)
  end do
  call expect_ok(collective_reduce_scatter_async(world, c_loc(rs_send), c_loc(rs_recv), int(m, c_size_t), &
                 COLLECTIVE_INT32, COLLECTIVE_SUM, collective_options_default, works(2)), 'reduce_scatter_async')
  ! 3 all_gather, 3 per rank.
  allocate(ag_send(3), ag_recv(3 * size))
  do k = 1, 3
    ag_send(k) = rank * 10 + k
  end do
  call expect_ok(collective_all_gather_async(world, c_loc(ag_send), c_loc(ag_recv), 3_c_size_t, &
                 COLLECTIVE_INT32, collective_options_default, works(3)), 'all_gather_async')
  ! 4 broadcast from the last rank.
  do i = 1, n
    bc(i) = merge(i * 7, -1, rank == size - 1)
  end do
  call expect_ok(collective_broadcast_async(world, c_loc(bc), int(n, c_size_t), COLLECTIVE_INT32, &
                 size - 1, collective_options_default, works(4)), 'broadcast_async')
  ! 5 reduce MAX to rank 0.
  do i = 1, n
    rd_send(i) = mod(i + rank * 3, 11)
  end do
  call expect_ok(collective_reduce_async(world, c_loc(rd_send), c_loc(rd_recv), int(n, c_size_t), &
                 COLLECTIVE_INT32, COLLECTIVE_MAX, 0, collective_options_default, works(5)), 'reduce_async')
  ! 6 barrier.
  call expect_ok(collective_barrier_async(world, collective_options_default, works(6)), 'barrier_async')
  ! 7 all_to_all, 2 per peer.
  allocate(a2a_send(2 * size), a2a_recv(2 * size))
  do p = 0, size - 1
    do k = 1, 2
      a2a_send(p * 2 + k) = rank * 100 + p * 10 + k
    end do
  end do
  call expect_ok(collective_all_to_all_async(world, c_loc(a2a_send), c_loc(a2a_recv), 2_c_size_t, &
                 COLLECTIVE_INT32, collective_options_default, works(7)), 'all_to_all_async')
  ! 8 all_to_all_v.
  allocate(v_send(t), v_recv((rank + 1) * size))
  do p = 0, size - 1
    do k = 1, p + 1
      v_send(int(s_displs(p + 1)) + k) = rank * 100 + p * 10 + k
    end do
  end do
  call expect_ok(collective_all_to_all_v_async(world, c_loc(v_send), c_loc(s_counts), c_loc(s_displs), &
                 c_loc(v_recv), c_loc(r_counts), c_loc(r_displs), COLLECTIVE_INT32, &
                 collective_options_default, works(8)), 'all_to_all_v_async')
  ! 9 all_gather_v: rank p gives p+1.
  allocate(agv_send(rank + 1), agv_recv(t))
  do k = 1, rank + 1
    agv_send(k) = rank * 10 + k
  end do
  call expect_ok(collective_all_gather_v_async(world, c_loc(agv_send), int(rank + 1, c_size_t), &
                 c_loc(agv_recv), c_loc(grow_counts), c_loc(grow_displs), COLLECTIVE_INT32, &
                 collective_options_default, works(9)), 'all_gather_v_async')
  ! 10 reduce_scatter_v SUM: rank p keeps p+1.
  allocate(rsv_send(t), rsv_recv(rank + 1))
  do i = 1, t
    rsv_send(i) = i + rank
  end do
  call expect_ok(collective_reduce_scatter_v_async(world, c_loc(rsv_send), c_loc(rsv_recv), &
                 c_loc(grow_counts), COLLECTIVE_INT32, COLLECTIVE_SUM, collective_options_default, &
                 works(10)), 'reduce_scatter_v_async')
  ! 11 gather to rank 0, 2 each.
  allocate(g_send(2), g_recv(2 * size))
  do k = 1, 2
    g_send(k) = rank * 10 + k
  end do
  call expect_ok(collective_gather_async(world, c_loc(g_send), c_loc(g_recv), 2_c_size_t, &
                 COLLECTIVE_INT32, 0, collective_options_default, works(11)), 'gather_async')
  ! 12 gather_v to the last rank: rank p gives p+1 (agv_send again: read only).
  allocate(gv_recv(t))
  call expect_ok(collective_gather_v_async(world, c_loc(agv_send), int(rank + 1, c_size_t), &
                 c_loc(gv_recv), c_loc(grow_counts), c_loc(grow_displs), COLLECTIVE_INT32, size - 1, &
                 collective_options_default, works(12)), 'gather_v_async')
  ! 13 scatter from rank 0, 2 each.
  allocate(s_send(2 * size), s_recv(2))
  do i = 1, 2 * size
    s_send(i) = i * 3
  end do
  call expect_ok(collective_scatter_async(world, c_loc(s_send), c_loc(s_recv), 2_c_size_t, &
                 COLLECTIVE_INT32, 0, collective_options_default, works(13)), 'scatter_async')
  ! 14 scatter_v from rank 0: rank p gets p+1.
  allocate(sv_send(t), sv_recv(rank + 1))
  do i = 1, t
    sv_send(i) = i * 5
  end do
  call expect_ok(collective_scatter_v_async(world, c_loc(sv_send), c_loc(grow_counts), &
                 c_loc(grow_displs), c_loc(sv_recv), int(rank + 1, c_size_t), COLLECTIVE_INT32, 0, &
                 collective_options_default, works(14)), 'scatter_v_async')

  ! Complete: the last ones by wait, the middle by test, the first by wait_for.
  do i = 11, 14
    call expect_ok(collective_work_wait(works(i)), 'work_wait')
  end do
  finished = .false.
  done_count = 0
  do while (done_count < 5)
    do i = 6, 10
      if (finished(i)) cycle
      call expect_ok(collective_work_test(works(i), completed), 'work_test')
      if (completed == 1) then
        finished(i) = .true.
        done_count = done_count + 1
      end if
    end do
  end do
  do i = 1, 5
    completed = 0
    do while (completed == 0)
      call expect_ok(collective_work_wait_for(works(i), 100_c_int64_t, completed), 'work_wait_for')
    end do
  end do
  do i = 1, 14
    call expect_ok(collective_work_free(works(i)), 'work_free')
  end do

  ! Every element.
  do i = 1, n
    call expect_int('all_reduce_async', i, size * i + size * (size - 1) / 2, ar_recv(i))
    call expect_int('broadcast_async', i, i * 7, bc(i))
    if (rank == 0) call expect_int('reduce_async', i, max_over_ranks(i), rd_recv(i))
  end do
  do k = 1, m
    call expect_int('reduce_scatter_async', k, (rank * m + k) * (size * (size + 1) / 2), rs_recv(k))
  end do
  do p = 0, size - 1
    do k = 1, 3
      call expect_int('all_gather_async', p * 3 + k, p * 10 + k, ag_recv(p * 3 + k))
    end do
    do k = 1, 2
      call expect_int('all_to_all_async', p * 2 + k, p * 100 + rank * 10 + k, a2a_recv(p * 2 + k))
    end do
    do k = 1, rank + 1
      call expect_int('all_to_all_v_async', p * (rank + 1) + k, p * 100 + rank * 10 + k, &
                      v_recv(p * (rank + 1) + k))
    end do
    do k = 1, p + 1
      call expect_int('all_gather_v_async', int(grow_displs(p + 1)) + k, p * 10 + k, &
                      agv_recv(int(grow_displs(p + 1)) + k))
      if (rank == size - 1) call expect_int('gather_v_async', int(grow_displs(p + 1)) + k, &
                                            p * 10 + k, gv_recv(int(grow_displs(p + 1)) + k))
    end do
    if (rank == 0) then
      do k = 1, 2
        call expect_int('gather_async', p * 2 + k, p * 10 + k, g_recv(p * 2 + k))
      end do
    end if
  end do
  offset = int(grow_displs(rank + 1))
  do k = 1, rank + 1
    call expect_int('reduce_scatter_v_async', k, (offset + k) * size + size * (size - 1) / 2, rsv_recv(k))
    call expect_int('scatter_v_async', k, (offset + k) * 5, sv_recv(k))
  end do
  do k = 1, 2
    call expect_int('scatter_async', k, (rank * 2 + k) * 3, s_recv(k))
  end do

  ! An argument error comes from the start, with no handle.
  code = collective_all_reduce_async(world, c_null_ptr, c_loc(ar_recv), int(n, c_size_t), &
                                     COLLECTIVE_INT32, COLLECTIVE_SUM, collective_options_default, bad)
  length = collective_copy_last_error_padded(message, len(message, kind=c_size_t))
  if (code /= COLLECTIVE_ERR_INVALID_ARGUMENT .or. index(message, 'all_reduce') == 0) then
    call fail_msg('null send: expected COLLECTIVE_ERR_INVALID_ARGUMENT naming all_reduce, got ' // &
                  decimal(int(code)) // ': ' // trim(message))
  end if
  ! A freed handle is refused.
  if (collective_work_wait(works(1)) /= COLLECTIVE_ERR_INVALID_ARGUMENT) then
    call fail_msg('collective_work_wait on a freed handle did not return INVALID_ARGUMENT')
  end if

  call expect_ok(collective_comm_free(world), 'free world')
  call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (total == 0) then
      print *, 'fortran_async_test: OK on ' // decimal(size) // ' ranks'
    else
      print *, 'fortran_async_test: FAILED (' // decimal(total) // ' failures)'
    end if
  end if
  call MPI_Finalize(ierr)
  if (total /= 0) error stop 1

contains

  integer function max_over_ranks(i)
    integer, intent(in) :: i
    integer :: q
    max_over_ranks = 0
    do q = 0, size - 1
      max_over_ranks = max(max_over_ranks, mod(i + q * 3, 11))
    end do
  end function max_over_ranks

  subroutine fail_msg(what)
    character(len=*), intent(in) :: what
    write (0, *) 'rank ' // decimal(rank) // ': FAIL ' // what
    failures = failures + 1
  end subroutine fail_msg

  subroutine expect_int(what, at, expected, actual)
    character(len=*), intent(in) :: what
    integer, intent(in) :: at, expected
    integer(c_int32_t), intent(in) :: actual
    if (expected /= actual) then
      call fail_msg(what // ' index ' // decimal(at) // ': expected ' // decimal(expected) // &
                    ', actual ' // decimal(int(actual)))
    end if
  end subroutine expect_int

  subroutine expect_ok(status, what)
    integer(c_int), intent(in) :: status
    character(len=*), intent(in) :: what
    if (status /= COLLECTIVE_SUCCESS) then
      length = collective_copy_last_error_padded(message, len(message, kind=c_size_t))
      call fail_msg(what // ': ' // trim(message))
    end if
  end subroutine expect_ok

end program fortran_async_test
