// all_reduce: every rank gets op over all ranks' buffers.
// busbw = algbw * 2(n-1)/n: a bandwidth-optimal all-reduce moves 2(n-1)/n
// of the buffer through each rank's link (reduce-scatter, then all-gather).
#include <cstddef>

#include "collective_case.h"

namespace collective::bench {
namespace {

class AllReduceCase final : public CollectiveCase {
 public:
  CollectiveKind kind() const override { return CollectiveKind::kAllReduce; }

  double bus_factor(int ranks) const override { return 2.0 * (ranks - 1) / ranks; }

  Geometry geometry(std::size_t bytes, std::size_t element_bytes, int ranks) const override {
    (void)ranks;
    const std::size_t count = bytes / element_bytes;
    return Geometry{count, count, count, count * element_bytes};
  }

  void place(CallArgs& args, const Geometry& geometry) const override {
    (void)geometry;
    args.send = args.send_base;
    args.recv = args.in_place ? args.send_base : args.recv_base;
  }

  Region input(const CallArgs& args) const override {
    return Region{args.send_base, args.count, 0};
  }

  Region result(const CallArgs& args, Implementation implementation) const override {
    (void)implementation;
    return Region{args.recv, args.count, 0};
  }

  void run(Communicator& communicator, const CallArgs& args) const override {
    AllReduceOptions options;
    options.algorithm = args.algorithm;
    options.op = args.op;
    options.deterministic = args.deterministic;
    communicator.all_reduce(args.send, args.recv, args.count, args.type, options);
  }

  void run_mpi(const MpiBaseline& mpi, const CallArgs& args) const override {
    const std::size_t element = element_size(args.type);
    const auto* send = static_cast<const std::byte*>(args.send);
    auto* recv = static_cast<std::byte*>(args.recv);
    MpiBaseline::for_each_piece(args.count, [&](std::size_t first, int count) {
      const void* source = args.in_place ? MPI_IN_PLACE : send + first * element;
      mpi.check(
          MPI_Allreduce(source, recv + first * element, count, MpiBaseline::datatype(args.type),
                        mpi.op(args.type, args.op), mpi.comm()),
          "MPI_Allreduce");
    });
    mpi.finish_mean(args.recv, args.count, args.type, args.op);
  }
};

}  // namespace

std::unique_ptr<CollectiveCase> make_all_reduce_case() { return std::make_unique<AllReduceCase>(); }

}  // namespace collective::bench
