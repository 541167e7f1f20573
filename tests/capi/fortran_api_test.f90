! The Fortran module (`use collective`) under mpirun: every collective with
! exact results (several dtypes and ops, in-place forms, every root), a
! communicator from an MPI handle and from split, and the error path
! (status + message naming operation, rank and cause). A failure on any
! rank fails the run; each names rank, check, index, expected and actual.
program fortran_api_test
  use mpi
  use collective
  use fortran_test_text, only: decimal
  use, intrinsic :: iso_c_binding, only: c_double, c_float, c_int8_t, c_loc
  implicit none
  integer :: ierr, rank, size, failures, total, i, r, root, status_code
  type(collective_comm) :: world, halves, null_comm
  type(collective_options) :: options
  integer(c_int) :: crank, csize, algorithm
  integer(c_int) :: failed(4), failed_count, shrunk_size, listed(1)
  integer(c_size_t), parameter :: n = 1001
  real(c_double), target :: d_send(n), d_recv(n)
  real(c_float), target :: f_buf(n)
  integer(c_int32_t), target :: i_send(n), i_recv(n)
  integer(c_int64_t), target :: l_send(n), l_recv(n)
  integer(c_int8_t), target :: b_send(n), b_recv(n)
  integer(c_int64_t) :: expected_l
  integer(c_int32_t) :: expected_i
  integer(c_int32_t), allocatable, target :: gathered(:), blocks(:), a2a(:)
  integer(c_size_t), allocatable, target :: v_counts(:), v_places(:)
  character(len=400) :: message
  character(len=32) :: rank_text
  integer(c_size_t) :: length

  failures = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  rank_text = '(rank ' // decimal(rank) // ')'

  call expect_ok(collective_comm_from_fint(int(MPI_COMM_WORLD, c_int), world), 'from_fint')
  call expect_ok(collective_comm_rank(world, crank), 'rank')
  call expect_ok(collective_comm_size(world, csize), 'size')
  if (crank /= rank .or. csize /= size) call fail_msg('rank/size differ from MPI')
  call collective_options_init(options)
  if (options%algorithm /= collective_options_default%algorithm .or. &
      options%timeout_ms /= 0) call fail_msg('collective_options_init')

  ! all_reduce float64 sum, out of place: element i of rank r is i + r.
  do i = 1, int(n)
    d_send(i) = real(i + rank, c_double)
  end do
  call expect_ok(collective_all_reduce(world, c_loc(d_send), c_loc(d_recv), n, COLLECTIVE_FLOAT64, &
                                       COLLECTIVE_SUM, collective_options_default), 'all_reduce f64')
  do i = 1, int(n)
    if (d_recv(i) /= real(size * i + size * (size - 1) / 2, c_double)) then
      call fail_value('all_reduce float64 sum', i, real(size * i + size * (size - 1) / 2, c_double), &
                      d_recv(i))
      exit
    end if
  end do

  ! all_reduce float32 max in place, with a forced algorithm.
  do i = 1, int(n)
    f_buf(i) = real(mod(i + 3 * rank, 7), c_float)
  end do
  options = collective_options_default
  options%algorithm = COLLECTIVE_ALGORITHM_RING
  call expect_ok(collective_all_reduce(world, c_loc(f_buf), c_loc(f_buf), n, COLLECTIVE_FLOAT32, &
                                       COLLECTIVE_MAX, options), 'all_reduce f32 max ring')
  do i = 1, int(n)
    if (f_buf(i) /= real(maxval([(mod(i + 3 * r, 7), r = 0, size - 1)]), c_float)) then
      call fail_value('all_reduce float32 max', i, &
                      real(maxval([(mod(i + 3 * r, 7), r = 0, size - 1)]), c_double), real(f_buf(i), c_double))
      exit
    end if
  end do
  call expect_ok(collective_comm_last_algorithm(world, algorithm), 'last_algorithm')
  if (algorithm /= COLLECTIVE_ALGORITHM_RING) call fail_msg('last_algorithm is not ring')

  ! all_reduce int8 min, int64 prod.
  do i = 1, int(n)
    b_send(i) = int(mod(i + rank, 5) - 2, c_int8_t)
    l_send(i) = int(mod(i + rank, 3) + 1, c_int64_t)
  end do
  call expect_ok(collective_all_reduce(world, c_loc(b_send), c_loc(b_recv), n, COLLECTIVE_INT8, &
                                       COLLECTIVE_MIN, collective_options_default), 'all_reduce i8')
  call expect_ok(collective_all_reduce(world, c_loc(l_send), c_loc(l_recv), n, COLLECTIVE_INT64, &
                                       COLLECTIVE_PROD, collective_options_default), 'all_reduce i64')
  do i = 1, int(n)
    if (b_recv(i) /= minval([(mod(i + r, 5) - 2, r = 0, size - 1)])) then
      call fail_value('all_reduce int8 min', i, real(minval([(mod(i + r, 5) - 2, r = 0, size - 1)]), c_double), &
                      real(b_recv(i), c_double))
      exit
    end if
    if (l_recv(i) /= product([(int(mod(i + r, 3) + 1, c_int64_t), r = 0, size - 1)])) then
      call fail_value('all_reduce int64 prod', i, &
                      real(product([(int(mod(i + r, 3) + 1, c_int64_t), r = 0, size - 1)]), c_double), &
                      real(l_recv(i), c_double))
      exit
    end if
  end do

  ! all_reduce int64 bxor (IEOR over the ranks) and int32 bor (IOR).
  do i = 1, int(n)
    l_send(i) = ishft(int(i, c_int64_t), rank + 3) + int(rank, c_int64_t)
    i_send(i) = ishft(1_c_int32_t, mod(i + rank, 31))
  end do
  call expect_ok(collective_all_reduce(world, c_loc(l_send), c_loc(l_recv), n, COLLECTIVE_INT64, &
                                       COLLECTIVE_BXOR, collective_options_default), 'all_reduce bxor')
  call expect_ok(collective_all_reduce(world, c_loc(i_send), c_loc(i_recv), n, COLLECTIVE_INT32, &
                                       COLLECTIVE_BOR, collective_options_default), 'all_reduce bor')
  do i = 1, int(n)
    expected_l = 0
    expected_i = 0
    do r = 0, size - 1
      expected_l = ieor(expected_l, ishft(int(i, c_int64_t), r + 3) + int(r, c_int64_t))
      expected_i = ior(expected_i, ishft(1_c_int32_t, mod(i + r, 31)))
    end do
    if (l_recv(i) /= expected_l) then
      call fail_value('all_reduce int64 bxor', i, real(expected_l, c_double), real(l_recv(i), c_double))
      exit
    end if
    if (i_recv(i) /= expected_i) then
      call fail_value('all_reduce int32 bor', i, real(expected_i, c_double), real(i_recv(i), c_double))
      exit
    end if
  end do

  ! reduce_scatter int32 sum: rank r gets block r; element j of every
  ! rank's input is j + rank, so block r element i sums (r*k + i + rank).
  allocate (blocks(3 * size), gathered(3 * size))
  do i = 1, 3 * size
    blocks(i) = int(i + rank, c_int32_t)
  end do
  call expect_ok(collective_reduce_scatter(world, c_loc(blocks), c_loc(i_recv), 3_c_size_t, &
                                           COLLECTIVE_INT32, COLLECTIVE_SUM, collective_options_default), &
                 'reduce_scatter')
  do i = 1, 3
    if (i_recv(i) /= size * (3 * rank + i) + size * (size - 1) / 2) then
      call fail_value('reduce_scatter int32 sum', i, real(size * (3 * rank + i) + size * (size - 1) / 2, c_double), &
                      real(i_recv(i), c_double))
    end if
  end do

  ! all_gather int32 in place: block r holds 10*r + i.
  gathered = -1
  do i = 1, 3
    gathered(3 * rank + i) = int(10 * rank + i, c_int32_t)
  end do
  call expect_ok(collective_all_gather(world, c_loc(gathered(3 * rank + 1)), c_loc(gathered), 3_c_size_t, &
                                       COLLECTIVE_INT32, collective_options_default), 'all_gather in place')
  do r = 0, size - 1
    do i = 1, 3
      if (gathered(3 * r + i) /= 10 * r + i) then
        call fail_value('all_gather int32', 3 * r + i, real(10 * r + i, c_double), real(gathered(3 * r + i), c_double))
      end if
    end do
  end do

  ! all_to_all int32: element i of the block rank r sends rank q is 100*r + 10*q + i.
  deallocate(gathered)
  allocate(gathered(3 * size), a2a(3 * size), v_counts(size), v_places(size))
  do r = 0, size - 1
    do i = 1, 3
      a2a(3 * r + i) = int(100 * rank + 10 * r + i, c_int32_t)
    end do
  end do
  gathered = -1
  call expect_ok(collective_all_to_all(world, c_loc(a2a), c_loc(gathered), 3_c_size_t, COLLECTIVE_INT32, &
                                       collective_options_default), 'all_to_all')
  do r = 0, size - 1
    do i = 1, 3
      if (gathered(3 * r + i) /= 100 * r + 10 * rank + i) then
        call fail_value('all_to_all int32', 3 * r + i, real(100 * r + 10 * rank + i, c_double), &
                        real(gathered(3 * r + i), c_double))
      end if
    end do
  end do

  ! all_gather_v int32: rank r contributes r elements (rank 0 none), 10*r + i.
  do r = 0, size - 1
    v_counts(r + 1) = int(r, c_size_t)
    v_places(r + 1) = int(r * (r - 1) / 2, c_size_t)
  end do
  do i = 1, rank
    a2a(i) = int(10 * rank + i, c_int32_t)
  end do
  gathered = -1
  call expect_ok(collective_all_gather_v(world, c_loc(a2a), int(rank, c_size_t), c_loc(gathered), &
                                         c_loc(v_counts), c_loc(v_places), COLLECTIVE_INT32, &
                                         collective_options_default), 'all_gather_v')
  do r = 0, size - 1
    do i = 1, r
      if (gathered(r * (r - 1) / 2 + i) /= 10 * r + i) then
        call fail_value('all_gather_v int32', r * (r - 1) / 2 + i, real(10 * r + i, c_double), &
                        real(gathered(r * (r - 1) / 2 + i), c_double))
      end if
    end do
  end do
  if (size * (size - 1) / 2 < 3 * size) then
    if (gathered(size * (size - 1) / 2 + 1) /= -1) then
      call fail_value('all_gather_v past the blocks', size * (size - 1) / 2 + 1, -1.0_c_double, &
                      real(gathered(size * (size - 1) / 2 + 1), c_double))
    end if
  end if

  ! gather and scatter int32 from every root; gather_v to the root with c_null_ptr elsewhere.
  do root = 0, size - 1
    do i = 1, 3
      a2a(i) = int(100 * rank + i, c_int32_t)
    end do
    gathered = -1
    call expect_ok(collective_gather(world, c_loc(a2a), c_loc(gathered), 3_c_size_t, COLLECTIVE_INT32, root, &
                                     collective_options_default), 'gather')
    if (rank == root) then
      do r = 0, size - 1
        do i = 1, 3
          if (gathered(3 * r + i) /= 100 * r + i) then
            call fail_value('gather int32', 3 * r + i, real(100 * r + i, c_double), real(gathered(3 * r + i), c_double))
          end if
        end do
      end do
    end if
    do r = 0, size - 1
      do i = 1, 3
        a2a(3 * r + i) = int(1000 * root + 10 * r + i, c_int32_t)
      end do
    end do
    gathered = -1
    call expect_ok(collective_scatter(world, c_loc(a2a), c_loc(gathered), 3_c_size_t, COLLECTIVE_INT32, root, &
                                      collective_options_default), 'scatter')
    do i = 1, 3
      if (gathered(i) /= 1000 * root + 10 * rank + i) then
        call fail_value('scatter int32', i, real(1000 * root + 10 * rank + i, c_double), real(gathered(i), c_double))
      end if
    end do
    do i = 1, rank
      a2a(i) = int(10 * rank + i, c_int32_t)
    end do
    gathered = -1
    if (rank == root) then
      call expect_ok(collective_gather_v(world, c_loc(a2a), int(rank, c_size_t), c_loc(gathered), c_loc(v_counts), &
                                         c_loc(v_places), COLLECTIVE_INT32, root, collective_options_default), &
                     'gather_v at the root')
      do r = 0, size - 1
        do i = 1, r
          if (gathered(r * (r - 1) / 2 + i) /= 10 * r + i) then
            call fail_value('gather_v int32', r * (r - 1) / 2 + i, real(10 * r + i, c_double), &
                            real(gathered(r * (r - 1) / 2 + i), c_double))
          end if
        end do
      end do
    else
      call expect_ok(collective_gather_v(world, c_loc(a2a), int(rank, c_size_t), c_null_ptr, c_null_ptr, c_null_ptr, &
                                         COLLECTIVE_INT32, root, collective_options_default), 'gather_v off the root')
    end if
  end do

  ! broadcast and reduce from every root.
  do root = 0, size - 1
    do i = 1, int(n)
      i_send(i) = merge(int(i * 7 + root, c_int32_t), -1_c_int32_t, rank == root)
    end do
    call expect_ok(collective_broadcast(world, c_loc(i_send), n, COLLECTIVE_INT32, root, &
                                        collective_options_default), 'broadcast')
    do i = 1, int(n)
      if (i_send(i) /= i * 7 + root) then
        call fail_value('broadcast int32', i, real(i * 7 + root, c_double), real(i_send(i), c_double))
        exit
      end if
    end do
    do i = 1, int(n)
      d_send(i) = real(i * (rank + 1), c_double)
    end do
    d_recv = -1
    call expect_ok(collective_reduce(world, c_loc(d_send), c_loc(d_recv), n, COLLECTIVE_FLOAT64, &
                                     COLLECTIVE_SUM, root, collective_options_default), 'reduce')
    if (rank == root) then
      do i = 1, int(n)
        if (d_recv(i) /= real(i * size * (size + 1) / 2, c_double)) then
          call fail_value('reduce float64 sum', i, real(i * size * (size + 1) / 2, c_double), d_recv(i))
          exit
        end if
      end do
    end if
  end do
  call expect_ok(collective_barrier(world, collective_options_default), 'barrier')

  ! A split communicator (even and odd ranks).
  call expect_ok(collective_comm_split(world, mod(rank, 2), rank, halves), 'split')
  i_send(1) = 1
  call expect_ok(collective_all_reduce(halves, c_loc(i_send), c_loc(i_recv), 1_c_size_t, COLLECTIVE_INT32, &
                                       COLLECTIVE_SUM, collective_options_default), 'all_reduce on split')
  if (i_recv(1) /= (size + 1 - mod(rank, 2)) / 2) call fail_msg('all_reduce on split: wrong size')
  call expect_ok(collective_comm_free(halves), 'free split')

  ! A subset of this rank alone (made without the others).
  listed(1) = rank
  call expect_ok(collective_comm_subset(world, listed, 1, halves), 'subset')
  call expect_ok(collective_comm_size(halves, shrunk_size), 'size of subset')
  if (shrunk_size /= 1) call fail_msg('a subset of one rank has another size')
  call expect_ok(collective_comm_free(halves), 'free subset')

  ! shrink of a healthy communicator: a copy of the same size, nothing failed.
  failed_count = -1
  call expect_ok(collective_comm_failed_ranks(world, failed, 4, failed_count), 'failed_ranks')
  if (failed_count /= 0) call fail_msg('failed_ranks of a healthy communicator is not empty')
  call expect_ok(collective_comm_shrink(world, halves), 'shrink')
  call expect_ok(collective_comm_size(halves, shrunk_size), 'size of shrunk')
  if (shrunk_size /= size) call fail_msg('shrink of a healthy communicator changed its size')
  call expect_ok(collective_comm_free(halves), 'free shrunk')

  ! Errors: a null handle, and a bad root (rejected on every rank).
  null_comm%handle = c_null_ptr
  status_code = collective_barrier(null_comm, collective_options_default)
  call expect_error(status_code, COLLECTIVE_ERR_INVALID_ARGUMENT, 'collective_barrier', 'handle is NULL')
  status_code = collective_broadcast(world, c_loc(i_send), n, COLLECTIVE_INT32, size, collective_options_default)
  call expect_error(status_code, COLLECTIVE_ERR_INVALID_ARGUMENT, trim(rank_text), 'root')
  ! The communicator is still usable.
  i_send(1) = 2
  call expect_ok(collective_all_reduce(world, c_loc(i_send), c_loc(i_send), 1_c_size_t, COLLECTIVE_INT32, &
                                       COLLECTIVE_SUM, collective_options_default), 'all_reduce after errors')
  if (i_send(1) /= 2 * size) call fail_msg('all_reduce after errors: wrong sum')

  call expect_ok(collective_comm_free(world), 'free world')
  call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (total == 0) then
      print *, 'fortran_api_test: OK on ' // decimal(size) // ' ranks'
    else
      print *, 'fortran_api_test: FAILED (' // decimal(total) // ' failures)'
    end if
  end if
  call MPI_Finalize(ierr)
  if (total /= 0) error stop 1

contains

  subroutine fail_msg(what)
    character(len=*), intent(in) :: what
    write (0, *) 'rank ' // decimal(rank) // ': FAIL ' // what
    failures = failures + 1
  end subroutine fail_msg

  subroutine fail_value(what, index, expected, actual)
    character(len=*), intent(in) :: what
    integer, intent(in) :: index
    real(c_double), intent(in) :: expected, actual
    write (0, *) 'rank ' // decimal(rank) // ': FAIL ' // what // ' index ' // decimal(index) // &
        ': expected', expected, ', actual', actual
    failures = failures + 1
  end subroutine fail_value

  subroutine expect_ok(code, what)
    integer(c_int), intent(in) :: code
    character(len=*), intent(in) :: what
    if (code /= COLLECTIVE_SUCCESS) then
      length = collective_copy_last_error_padded(message, len(message, kind=c_size_t))
      call fail_msg(what // ': ' // trim(message))
    end if
  end subroutine expect_ok

  subroutine expect_error(code, expected, fragment1, fragment2)
    integer, intent(in) :: code
    integer(c_int), intent(in) :: expected
    character(len=*), intent(in) :: fragment1, fragment2
    length = collective_copy_last_error_padded(message, len(message, kind=c_size_t))
    if (code /= expected .or. collective_last_status() /= expected) then
      call fail_msg('expected an error status, got another: ' // trim(message))
    else if (index(message, fragment1) == 0 .or. index(message, fragment2) == 0) then
      call fail_msg('message "' // trim(message) // '" lacks "' // fragment1 // '" or "' // fragment2 // '"')
    end if
  end subroutine expect_error

end program fortran_api_test
