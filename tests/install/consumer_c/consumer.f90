! A Fortran program that knows libcollective only through its installed module.
program consumer_fortran
  use mpi
  use collective
  use, intrinsic :: iso_c_binding, only: c_double, c_loc
  implicit none
  type(collective_comm) :: comm
  real(c_double), target :: values(1000)
  integer :: ierr, rank, size, status_code
  character(len=300) :: message
  integer(c_size_t) :: length

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  status_code = collective_comm_from_fint(int(MPI_COMM_WORLD, c_int), comm)
  values = real(rank + 1, c_double)
  if (status_code == COLLECTIVE_SUCCESS) then
    status_code = collective_all_reduce(comm, c_loc(values), c_loc(values), 1000_c_size_t, &
                                        COLLECTIVE_FLOAT64, COLLECTIVE_SUM, collective_options_default)
  end if
  if (status_code /= COLLECTIVE_SUCCESS) then
    length = collective_copy_last_error_padded(message, len(message, kind=c_size_t))
    write (0, '(a,a)') 'consumer_fortran: ', trim(message)
    error stop 1
  end if
  if (any(values /= real(size * (size + 1) / 2, c_double))) then
    write (0, '(a,i0,a)') 'consumer_fortran rank ', rank, ': wrong all_reduce result'
    error stop 1
  end if
  status_code = collective_comm_free(comm)
  if (rank == 0) print '(a,i0,a)', 'consumer_fortran: all_reduce OK on ', size, ' ranks'
  call MPI_Finalize(ierr)
end program consumer_fortran
