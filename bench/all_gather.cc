// all_gather: every rank gets every rank's block, in rank order.
// The size is the whole output (ranks * count elements), as in nccl-tests;
// busbw = algbw * (n-1)/n: each rank receives all blocks but its own.
#include <climits>
#include <cstddef>

#include "collective_case.h"

namespace collective::bench {
namespace {

class AllGatherCase final : public CollectiveCase {
 public:
  CollectiveKind kind() const override { return CollectiveKind::kAllGather; }

  double bus_factor(int ranks) const override { return static_cast<double>(ranks - 1) / ranks; }

  Geometry geometry(std::size_t bytes, std::size_t element_bytes, int ranks) const override {
    const auto n = static_cast<std::size_t>(ranks);
    const std::size_t count = bytes / (element_bytes * n);
    return Geometry{count, count, count * n, count * n * element_bytes};
  }

  void place(CallArgs& args, const Geometry& geometry) const override {
    (void)geometry;
    args.recv = args.recv_base;
    const std::size_t own = static_cast<std::size_t>(args.rank) * args.count;
    args.send = args.in_place
                    ? static_cast<std::byte*>(args.recv_base) + own * element_size(args.type)
                    : args.send_base;
  }

  Region input(const CallArgs& args) const override {
    return Region{const_cast<void*>(args.send), args.count,
                  static_cast<std::uint64_t>(args.rank) * args.count};
  }

  Region result(const CallArgs& args, Implementation implementation) const override {
    (void)implementation;
    return Region{args.recv, args.count * static_cast<std::size_t>(args.ranks), 0};
  }

  void run(Communicator& communicator, const CallArgs& args) const override {
    AllGatherOptions options;
    options.algorithm = args.algorithm;
    communicator.all_gather(args.send, args.recv, args.count, args.type, options);
  }

  void run_mpi(const MpiBaseline& mpi, const CallArgs& args) const override {
    const int count = static_cast<int>(args.count);
    const MPI_Datatype datatype = MpiBaseline::datatype(args.type);
    if (args.in_place) {
      mpi.check(
          MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, args.recv, count, datatype, mpi.comm()),
          "MPI_Allgather");
    } else {
      mpi.check(MPI_Allgather(args.send, count, datatype, args.recv, count, datatype, mpi.comm()),
                "MPI_Allgather");
    }
  }

  const char* mpi_limit(const Geometry& geometry) const override {
    if (geometry.count <= static_cast<std::size_t>(INT_MAX)) return nullptr;
    return "MPI_Allgather takes an int count per rank; the block exceeds 2^31-1 elements";
  }
};

}  // namespace

std::unique_ptr<CollectiveCase> make_all_gather_case() { return std::make_unique<AllGatherCase>(); }

}  // namespace collective::bench
