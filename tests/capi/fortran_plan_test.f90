! The Fortran module's persistent plans under mpirun: each of the 14
! collectives (and all_reduce in place) made into a plan once, at counts 0
! and 7, then started 3 times with new inputs written between the starts,
! every element checked after each start (and one element past each receive
! buffer, which no start may write). Then the refusals: at 2+ ranks a second
! start while the first is unfinished and a free with a start in flight; at
! every size a start of a freed plan. A failure on any rank fails the run;
! each names rank, collective, count, start, index, expected and actual.
program fortran_plan_test
  use mpi
  use collective
  use fortran_test_text, only: decimal
  use, intrinsic :: iso_c_binding, only: c_loc, c_associated
  implicit none
  integer, parameter :: plans = 15, starts = 3
  ! Unwritten receive elements hold it; no input is negative.
  integer(c_int32_t), parameter :: untouched = -1
  integer :: ierr, provided, rank, ranks, failures, total, count_index
  integer :: current_count
  type(collective_comm) :: world
  character(len=400) :: message
  integer(c_size_t) :: length
  integer, parameter :: counts(2) = [0, 7]

  failures = 0
  current_count = 0
  call MPI_Init_thread(MPI_THREAD_MULTIPLE, provided, ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, ranks, ierr)
  if (provided < MPI_THREAD_MULTIPLE) call fail_msg('MPI_THREAD_MULTIPLE not provided')
  call expect_ok(collective_comm_from_fint(int(MPI_COMM_WORLD, c_int), world), 'from_fint')

  do count_index = 1, size(counts)
    current_count = counts(count_index)
    call plans_of_count(current_count)
  end do
  call refusals()

  call expect_ok(collective_comm_free(world), 'free world')
  call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (total == 0) then
      print *, 'fortran_plan_test: OK on ' // decimal(ranks) // ' ranks'
    else
      print *, 'fortran_plan_test: FAILED (' // decimal(total) // ' failures)'
    end if
  end if
  call MPI_Finalize(ierr)
  if (total /= 0) error stop 1

contains

  ! Rank r's input at index i (1-based) of start s: every one different.
  integer function input(r, s, i)
    integer, intent(in) :: r, s, i
    input = 100000 * s + 1000 * r + i
  end function input

  ! The sum over all ranks of input(r, s, i).
  integer function sum_of_inputs(s, i)
    integer, intent(in) :: s, i
    sum_of_inputs = ranks * (100000 * s + i) + 1000 * (ranks * (ranks - 1) / 2)
  end function sum_of_inputs

  ! Rank p's count in the v-forms: a different one per rank, 0 for rank 1
  ! (a rank with nothing among ranks with something), 0 for all at count 0.
  integer function v_count(c, p)
    integer, intent(in) :: c, p
    v_count = merge(0, c + p, c == 0 .or. p == 1)
  end function v_count

  ! Every collective as a plan with per-rank (or per-peer) count c, started
  ! 3 times. Receive buffers have one element more than the call writes.
  subroutine plans_of_count(c)
    integer, intent(in) :: c
    type(collective_plan) :: plan(plans)
    type(collective_work) :: work(plans)
    integer(c_int32_t), allocatable, target, asynchronous :: ar_send(:), ar_recv(:), in_place(:), &
        rs_send(:), rs_recv(:), ag_send(:), ag_recv(:), bc(:), rd_send(:), rd_recv(:), &
        a2a_send(:), a2a_recv(:), a2av_send(:), a2av_recv(:), agv_send(:), agv_recv(:), &
        rsv_send(:), rsv_recv(:), g_send(:), g_recv(:), gv_send(:), gv_recv(:), s_send(:), &
        s_recv(:), sv_send(:), sv_recv(:)
    integer(c_size_t), allocatable, target :: v_counts(:), v_displs(:), from_counts(:), &
        from_displs(:)
    integer :: total_v, mine, offset, p, k, i, s, j
    integer :: bc_root, rd_root, g_root, gv_root, s_root, sv_root
    integer(c_size_t) :: n

    n = int(c, c_size_t)
    bc_root = ranks - 1
    rd_root = mod(1, ranks)
    g_root = 0
    gv_root = ranks - 1
    s_root = mod(1, ranks)
    sv_root = 0
    ! v-forms: rank p's block is v_count(c, p) long at v_displs(p + 1); in
    ! all_to_all_v peer p gets v_count(c, p) from every rank, so this rank
    ! gets `mine` from each.
    allocate(v_counts(ranks), v_displs(ranks), from_counts(ranks), from_displs(ranks))
    total_v = 0
    do p = 0, ranks - 1
      v_counts(p + 1) = int(v_count(c, p), c_size_t)
      v_displs(p + 1) = int(total_v, c_size_t)
      total_v = total_v + v_count(c, p)
    end do
    mine = v_count(c, rank)
    offset = int(v_displs(rank + 1))
    do p = 0, ranks - 1
      from_counts(p + 1) = int(mine, c_size_t)
      from_displs(p + 1) = int(p * mine, c_size_t)
    end do
    ! Send buffers at least 1 long: c_loc needs an element.
    allocate(ar_send(max(1, c)), ar_recv(c + 1), in_place(c + 1), rs_send(max(1, c * ranks)), &
             rs_recv(c + 1), ag_send(max(1, c)), ag_recv(c * ranks + 1), bc(c + 1), &
             rd_send(max(1, c)), rd_recv(c + 1), a2a_send(max(1, c * ranks)), &
             a2a_recv(c * ranks + 1), a2av_send(max(1, total_v)), a2av_recv(mine * ranks + 1), &
             agv_send(max(1, mine)), agv_recv(total_v + 1), rsv_send(max(1, total_v)), &
             rsv_recv(mine + 1), g_send(max(1, c)), g_recv(c * ranks + 1), gv_send(max(1, mine)), &
             gv_recv(total_v + 1), s_send(max(1, c * ranks)), s_recv(c + 1), &
             sv_send(max(1, total_v)), sv_recv(mine + 1))

    call expect_ok(collective_all_reduce_init(world, c_loc(ar_send), c_loc(ar_recv), n, &
                   COLLECTIVE_INT32, COLLECTIVE_SUM, collective_options_default, plan(1)), &
                   'all_reduce_init')
    call expect_ok(collective_all_reduce_init(world, c_loc(in_place), c_loc(in_place), n, &
                   COLLECTIVE_INT32, COLLECTIVE_SUM, collective_options_default, plan(2)), &
                   'all_reduce_init in place')
    call expect_ok(collective_reduce_scatter_init(world, c_loc(rs_send), c_loc(rs_recv), n, &
                   COLLECTIVE_INT32, COLLECTIVE_SUM, collective_options_default, plan(3)), &
                   'reduce_scatter_init')
    call expect_ok(collective_all_gather_init(world, c_loc(ag_send), c_loc(ag_recv), n, &
                   COLLECTIVE_INT32, collective_options_default, plan(4)), 'all_gather_init')
    call expect_ok(collective_broadcast_init(world, c_loc(bc), n, COLLECTIVE_INT32, bc_root, &
                   collective_options_default, plan(5)), 'broadcast_init')
    call expect_ok(collective_reduce_init(world, c_loc(rd_send), c_loc(rd_recv), n, &
                   COLLECTIVE_INT32, COLLECTIVE_SUM, rd_root, collective_options_default, &
                   plan(6)), 'reduce_init')
    call expect_ok(collective_barrier_init(world, collective_options_default, plan(7)), &
                   'barrier_init')
    call expect_ok(collective_all_to_all_init(world, c_loc(a2a_send), c_loc(a2a_recv), n, &
                   COLLECTIVE_INT32, collective_options_default, plan(8)), 'all_to_all_init')
    call expect_ok(collective_all_to_all_v_init(world, c_loc(a2av_send), c_loc(v_counts), &
                   c_loc(v_displs), c_loc(a2av_recv), c_loc(from_counts), c_loc(from_displs), &
                   COLLECTIVE_INT32, collective_options_default, plan(9)), 'all_to_all_v_init')
    call expect_ok(collective_all_gather_v_init(world, c_loc(agv_send), int(mine, c_size_t), &
                   c_loc(agv_recv), c_loc(v_counts), c_loc(v_displs), COLLECTIVE_INT32, &
                   collective_options_default, plan(10)), 'all_gather_v_init')
    call expect_ok(collective_reduce_scatter_v_init(world, c_loc(rsv_send), c_loc(rsv_recv), &
                   c_loc(v_counts), COLLECTIVE_INT32, COLLECTIVE_SUM, &
                   collective_options_default, plan(11)), 'reduce_scatter_v_init')
    call expect_ok(collective_gather_init(world, c_loc(g_send), c_loc(g_recv), n, &
                   COLLECTIVE_INT32, g_root, collective_options_default, plan(12)), &
                   'gather_init')
    call expect_ok(collective_gather_v_init(world, c_loc(gv_send), int(mine, c_size_t), &
                   c_loc(gv_recv), c_loc(v_counts), c_loc(v_displs), COLLECTIVE_INT32, gv_root, &
                   collective_options_default, plan(13)), 'gather_v_init')
    call expect_ok(collective_scatter_init(world, c_loc(s_send), c_loc(s_recv), n, &
                   COLLECTIVE_INT32, s_root, collective_options_default, plan(14)), &
                   'scatter_init')
    call expect_ok(collective_scatter_v_init(world, c_loc(sv_send), c_loc(v_counts), &
                   c_loc(v_displs), c_loc(sv_recv), int(mine, c_size_t), COLLECTIVE_INT32, &
                   sv_root, collective_options_default, plan(15)), 'scatter_v_init')
    ! The counts were copied at creation: changing them must not matter.
    v_counts = 999
    v_displs = 999
    from_counts = 999
    from_displs = 999

    do s = 1, starts
      ! This start's inputs; every receive buffer back to `untouched`.
      do i = 1, c
        ar_send(i) = input(rank, s, i)
        in_place(i) = input(rank, s, i)
        ag_send(i) = input(rank, s, i)
        rd_send(i) = input(rank, s, i)
        g_send(i) = input(rank, s, i)
        bc(i) = merge(input(rank, s, i), int(untouched), rank == bc_root)
      end do
      do i = 1, c * ranks
        rs_send(i) = input(rank, s, i)
        a2a_send(i) = input(rank, s, i)
        s_send(i) = input(rank, s, i)
      end do
      do i = 1, total_v
        a2av_send(i) = input(rank, s, i)
        rsv_send(i) = input(rank, s, i)
        sv_send(i) = input(rank, s, i)
      end do
      do i = 1, mine
        agv_send(i) = input(rank, s, i)
        gv_send(i) = input(rank, s, i)
      end do
      in_place(c + 1) = untouched
      bc(c + 1) = untouched
      ar_recv = untouched
      rs_recv = untouched
      ag_recv = untouched
      rd_recv = untouched
      a2a_recv = untouched
      a2av_recv = untouched
      agv_recv = untouched
      rsv_recv = untouched
      g_recv = untouched
      gv_recv = untouched
      s_recv = untouched
      sv_recv = untouched

      ! All started before any is waited for, as a training step would.
      do j = 1, plans
        call expect_ok(collective_plan_start(plan(j), work(j)), 'plan_start ' // decimal(j))
      end do
      do j = 1, plans
        call expect_ok(collective_work_wait(work(j)), 'work_wait ' // decimal(j))
        call expect_ok(collective_work_free(work(j)), 'work_free ' // decimal(j))
      end do

      do i = 1, c
        call expect_int('all_reduce', s, i, sum_of_inputs(s, i), ar_recv(i))
        call expect_int('all_reduce in place', s, i, sum_of_inputs(s, i), in_place(i))
        call expect_int('reduce_scatter', s, i, sum_of_inputs(s, rank * c + i), rs_recv(i))
        call expect_int('broadcast', s, i, input(bc_root, s, i), bc(i))
        if (rank == rd_root) call expect_int('reduce', s, i, sum_of_inputs(s, i), rd_recv(i))
        call expect_int('scatter', s, i, input(s_root, s, rank * c + i), s_recv(i))
      end do
      do p = 0, ranks - 1
        do k = 1, c
          i = p * c + k
          call expect_int('all_gather', s, i, input(p, s, k), ag_recv(i))
          call expect_int('all_to_all', s, i, input(p, s, rank * c + k), a2a_recv(i))
          if (rank == g_root) call expect_int('gather', s, i, input(p, s, k), g_recv(i))
        end do
        ! From peer p: its block for this rank, at offset in its send buffer.
        do k = 1, mine
          i = p * mine + k
          call expect_int('all_to_all_v', s, i, input(p, s, offset + k), a2av_recv(i))
        end do
        do k = 1, v_count(c, p)
          i = prefix_of(c, p) + k
          call expect_int('all_gather_v', s, i, input(p, s, k), agv_recv(i))
          if (rank == gv_root) call expect_int('gather_v', s, i, input(p, s, k), gv_recv(i))
        end do
      end do
      do k = 1, mine
        call expect_int('reduce_scatter_v', s, k, sum_of_inputs(s, offset + k), rsv_recv(k))
        call expect_int('scatter_v', s, k, input(sv_root, s, offset + k), sv_recv(k))
      end do
      ! One past what each start writes: nothing.
      call expect_int('all_reduce', s, c + 1, int(untouched), ar_recv(c + 1))
      call expect_int('all_reduce in place', s, c + 1, int(untouched), in_place(c + 1))
      call expect_int('reduce_scatter', s, c + 1, int(untouched), rs_recv(c + 1))
      call expect_int('broadcast', s, c + 1, int(untouched), bc(c + 1))
      call expect_int('scatter', s, c + 1, int(untouched), s_recv(c + 1))
      call expect_int('all_gather', s, c * ranks + 1, int(untouched), ag_recv(c * ranks + 1))
      call expect_int('all_to_all', s, c * ranks + 1, int(untouched), a2a_recv(c * ranks + 1))
      call expect_int('all_to_all_v', s, mine * ranks + 1, int(untouched), &
                      a2av_recv(mine * ranks + 1))
      call expect_int('all_gather_v', s, total_v + 1, int(untouched), agv_recv(total_v + 1))
      call expect_int('reduce_scatter_v', s, mine + 1, int(untouched), rsv_recv(mine + 1))
      call expect_int('scatter_v', s, mine + 1, int(untouched), sv_recv(mine + 1))
      if (rank == rd_root) call expect_int('reduce', s, c + 1, int(untouched), rd_recv(c + 1))
      if (rank == g_root) then
        call expect_int('gather', s, c * ranks + 1, int(untouched), g_recv(c * ranks + 1))
      end if
      if (rank == gv_root) then
        call expect_int('gather_v', s, total_v + 1, int(untouched), gv_recv(total_v + 1))
      end if
    end do

    do j = 1, plans
      call expect_ok(collective_plan_free(plan(j)), 'plan_free ' // decimal(j))
      if (c_associated(plan(j)%handle)) then
        call fail_msg('collective_plan_free left plan ' // decimal(j) // ' set')
      end if
    end do
  end subroutine plans_of_count

  ! Where rank p's block starts in the v-forms (elements before it).
  integer function prefix_of(c, p)
    integer, intent(in) :: c, p
    integer :: q
    prefix_of = 0
    do q = 0, p - 1
      prefix_of = prefix_of + v_count(c, q)
    end do
  end function prefix_of

  ! At 2+ ranks rank 0 starts an all_reduce plan while the other ranks are
  ! held back by a barrier on a second communicator, so its start cannot
  ! finish: a second start and a free are refused and the plan stays valid.
  ! (At 1 rank a start may finish at once, so that is not tested there.)
  ! Then, everywhere: a freed plan is refused, freeing c_null_ptr is a no-op.
  subroutine refusals()
    integer(c_int32_t), allocatable, target, asynchronous :: send(:), recv(:)
    type(collective_comm) :: side
    type(collective_plan) :: plan, kept
    type(collective_work) :: work, refused
    integer(c_int) :: code
    integer :: i

    current_count = 7
    allocate(send(7), recv(7))
    do i = 1, 7
      send(i) = input(rank, 9, i)
    end do
    recv = untouched
    call expect_ok(collective_comm_split(world, 0, rank, side), 'split')
    call expect_ok(collective_all_reduce_init(world, c_loc(send), c_loc(recv), 7_c_size_t, &
                   COLLECTIVE_INT32, COLLECTIVE_SUM, collective_options_default, plan), &
                   'all_reduce_init (held)')
    if (ranks > 1 .and. rank == 0) then
      call expect_ok(collective_plan_start(plan, work), 'plan_start (held)')
      code = collective_plan_start(plan, refused)
      length = collective_copy_last_error_padded(message, len(message, kind=c_size_t))
      if (code /= COLLECTIVE_ERR_INVALID_ARGUMENT .or. c_associated(refused%handle) .or. &
          index(message, 'is still in flight') == 0) then
        call fail_msg('a second start with the first unfinished: expected ' // &
                      'COLLECTIVE_ERR_INVALID_ARGUMENT (still in flight) and no work, got ' // &
                      decimal(int(code)) // ': ' // trim(message))
      end if
      kept = plan
      code = collective_plan_free(plan)
      length = collective_copy_last_error_padded(message, len(message, kind=c_size_t))
      if (code /= COLLECTIVE_ERR_INVALID_ARGUMENT .or. &
          .not. c_associated(plan%handle, kept%handle) .or. &
          index(message, 'has a start in flight') == 0) then
        call fail_msg('freeing a plan with a start in flight: expected ' // &
                      'COLLECTIVE_ERR_INVALID_ARGUMENT (start in flight), plan kept, got ' // &
                      decimal(int(code)) // ': ' // trim(message))
      end if
      call expect_ok(collective_barrier(side, collective_options_default), 'barrier on side')
    else
      if (ranks > 1) then
        call expect_ok(collective_barrier(side, collective_options_default), 'barrier on side')
      end if
      call expect_ok(collective_plan_start(plan, work), 'plan_start (held)')
    end if
    call expect_ok(collective_work_wait(work), 'work_wait (held)')
    call expect_ok(collective_work_free(work), 'work_free (held)')
    do i = 1, 7
      call expect_int('all_reduce (held)', 1, i, sum_of_inputs(9, i), recv(i))
    end do

    kept = plan
    call expect_ok(collective_plan_free(plan), 'plan_free (held)')
    if (c_associated(plan%handle)) call fail_msg('collective_plan_free left the plan set')
    code = collective_plan_start(kept, work)
    length = collective_copy_last_error_padded(message, len(message, kind=c_size_t))
    if (code /= COLLECTIVE_ERR_INVALID_ARGUMENT .or. c_associated(work%handle) .or. &
        index(message, 'was freed') == 0) then
      call fail_msg('a freed plan was started: expected COLLECTIVE_ERR_INVALID_ARGUMENT ' // &
                    '(was freed), got ' // decimal(int(code)) // ': ' // trim(message))
    end if
    call expect_ok(collective_plan_free(plan), 'plan_free of c_null_ptr')
    call expect_ok(collective_comm_free(side), 'free side')
  end subroutine refusals

  subroutine fail_msg(what)
    character(len=*), intent(in) :: what
    write (0, *) 'rank ' // decimal(rank) // ': FAIL ' // what
    failures = failures + 1
  end subroutine fail_msg

  subroutine expect_int(what, start, at, expected, actual)
    character(len=*), intent(in) :: what
    integer, intent(in) :: start, at, expected
    integer(c_int32_t), intent(in) :: actual
    if (expected /= actual) then
      call fail_msg(what // ' count ' // decimal(current_count) // ' start ' // decimal(start) // &
                    ' index ' // decimal(at) // ': expected ' // decimal(expected) // &
                    ', actual ' // decimal(int(actual)))
    end if
  end subroutine expect_int

  subroutine expect_ok(status, what)
    integer(c_int), intent(in) :: status
    character(len=*), intent(in) :: what
    if (status /= COLLECTIVE_SUCCESS) then
      length = collective_copy_last_error_padded(message, len(message, kind=c_size_t))
      call fail_msg(what // ' (count ' // decimal(current_count) // '): ' // trim(message))
    end if
  end subroutine expect_ok

end program fortran_plan_test
