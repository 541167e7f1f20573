// reduce: the root gets op over all ranks' buffers. busbw = algbw: a
// pipelined reduce moves the whole buffer through each link once.
#include <cstddef>

#include "collective_case.h"

namespace collective::bench {
namespace {

class ReduceCase final : public CollectiveCase {
 public:
  CollectiveKind kind() const override { return CollectiveKind::kReduce; }

  double bus_factor(int ranks) const override {
    (void)ranks;
    return 1.0;
  }

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
    if (args.rank != args.root) return {};
    return Region{args.recv, args.count, 0};
  }

  void run(Communicator& communicator, const CallArgs& args) const override {
    ReduceOptions options;
    options.algorithm = args.algorithm;
    options.op = args.op;
    options.deterministic = args.deterministic;
    options.root = args.root;
    communicator.reduce(args.send, args.recv, args.count, args.type, options);
  }

  void run_mpi(const MpiBaseline& mpi, const CallArgs& args) const override {
    const std::size_t element = element_size(args.type);
    const bool root = args.rank == args.root;
    const auto* send = static_cast<const std::byte*>(args.send);
    auto* recv = static_cast<std::byte*>(args.recv);
    MpiBaseline::for_each_piece(args.count, [&](std::size_t first, int count) {
      const void* source = root && args.in_place ? MPI_IN_PLACE : send + first * element;
      void* target = root ? recv + first * element : nullptr;
      mpi.check(MPI_Reduce(source, target, count, MpiBaseline::datatype(args.type),
                           mpi.op(args.type, args.op), args.root, mpi.comm()),
                "MPI_Reduce");
    });
    if (root) mpi.finish_mean(args.recv, args.count, args.type, args.op);
  }
};

}  // namespace

std::unique_ptr<CollectiveCase> make_reduce_case() { return std::make_unique<ReduceCase>(); }

}  // namespace collective::bench
