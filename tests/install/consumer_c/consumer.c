/* A C program that knows libcollective only through its installed C API. */
#include <mpi.h>
#include <stdio.h>

#include <collective/collective_c.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  collective_comm_t comm = NULL;
  int rank = 0, size = 0, failed = 0;
  if (collective_comm_from_fint(MPI_Comm_c2f(MPI_COMM_WORLD), &comm) != COLLECTIVE_SUCCESS) {
    fprintf(stderr, "consumer_c: %s\n", collective_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  collective_comm_rank(comm, &rank);
  collective_comm_size(comm, &size);
  double values[1000];
  for (int i = 0; i < 1000; ++i) values[i] = rank + 1;
  if (collective_all_reduce(comm, values, values, 1000, COLLECTIVE_FLOAT64, COLLECTIVE_SUM, NULL) !=
      COLLECTIVE_SUCCESS) {
    fprintf(stderr, "consumer_c: %s\n", collective_last_error());
    failed = 1;
  }
  for (int i = 0; i < 1000 && !failed; ++i) {
    if (values[i] != size * (size + 1) / 2) {
      fprintf(stderr, "consumer_c rank %d: index %d expected %d, got %g\n", rank, i,
              size * (size + 1) / 2, values[i]);
      failed = 1;
    }
  }
  collective_comm_free(&comm);
  if (rank == 0 && !failed)
    printf("consumer_c: all_reduce OK on %d ranks (libcollective %s)\n", size,
           collective_version_string());
  MPI_Finalize();
  return failed;
}
