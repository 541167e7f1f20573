// broadcast: the root's buffer is copied to every rank. One buffer, so only
// the in-place form exists. busbw = algbw: a pipelined broadcast moves the
// whole buffer through each link once.
#include <cstddef>

#include "collective_case.h"

namespace collective::bench {
namespace {

class BroadcastCase final : public CollectiveCase {
 public:
  CollectiveKind kind() const override { return CollectiveKind::kBroadcast; }

  double bus_factor(int ranks) const override {
    (void)ranks;
    return 1.0;
  }

  Geometry geometry(std::size_t bytes, std::size_t element_bytes, int ranks) const override {
    (void)ranks;
    const std::size_t count = bytes / element_bytes;
    return Geometry{count, 0, count, count * element_bytes};
  }

  bool has_out_of_place() const override { return false; }

  void place(CallArgs& args, const Geometry& geometry) const override {
    (void)geometry;
    args.send = args.recv_base;
    args.recv = args.recv_base;
  }

  Region input(const CallArgs& args) const override {
    if (args.rank != args.root) return {};
    return Region{args.recv_base, args.count, 0};
  }

  Region result(const CallArgs& args, Implementation implementation) const override {
    (void)implementation;
    return Region{args.recv_base, args.count, 0};
  }

  void run(Communicator& communicator, const CallArgs& args) const override {
    BroadcastOptions options;
    options.algorithm = args.algorithm;
    options.root = args.root;
    communicator.broadcast(args.recv, args.count, args.type, options);
  }

  void run_mpi(const MpiBaseline& mpi, const CallArgs& args) const override {
    const std::size_t element = element_size(args.type);
    auto* buffer = static_cast<std::byte*>(args.recv);
    MpiBaseline::for_each_piece(args.count, [&](std::size_t first, int count) {
      mpi.check(MPI_Bcast(buffer + first * element, count, MpiBaseline::datatype(args.type),
                          args.root, mpi.comm()),
                "MPI_Bcast");
    });
  }
};

}  // namespace

std::unique_ptr<CollectiveCase> make_broadcast_case() { return std::make_unique<BroadcastCase>(); }

}  // namespace collective::bench
