// The main() of every MPI test binary: GoogleTest under mpirun.
//  - Only rank 0 prints GoogleTest's normal output; other ranks print their
//    failures (prefixed with their rank) and nothing else.
//  - A failure on any rank fails the process on every rank (the exit code
//    is agreed with MPI_Allreduce), so ctest sees it whichever rank failed.
//  - MPI is running before GoogleTest starts, and every rank registers
//    the same tests.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

#include "collective/environment.h"

namespace {

// Prints failed assertions from ranks other than 0.
class RankFailurePrinter : public testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.summary());
  }
  void OnTestEnd(const testing::TestInfo& info) override {
    if (info.result()->Failed()) {
      std::fprintf(stderr, "[rank %d] FAILED %s.%s\n", rank_, info.test_suite_name(), info.name());
    }
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  // MPI first: a parameterised suite may ask the library which algorithms
  // serve its cases when GoogleTest evaluates its parameters, which
  // InitGoogleTest does (collectives_sweep_test.cc).
  collective::Environment environment(argc, argv);
  testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank != 0) {
    auto& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }
  const int local_failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any_failed = 0;
  MPI_Allreduce(&local_failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && any_failed && !local_failed) {
    std::fprintf(stderr, "A test failed on another rank (see its [rank N] lines above).\n");
  }
  if (rank == 0) std::printf("%d ranks: %s\n", size, any_failed ? "FAILED" : "all tests passed");
  return any_failed ? 1 : 0;
}
