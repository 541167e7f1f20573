// reduce: the root gets op over all ranks' buffers. busbw = algbw: a
// pipelined reduce moves the whole buffer through each link once. In place
// (the root only), the root's send buffer receives the result.
#include <cstddef>

#include "collective_case.h"

namespace collective::cases {
namespace {

class ReduceCase final : public CollectiveCase {
 public:
  CollectiveKind kind() const override { return CollectiveKind::kReduce; }

  Geometry geometry(std::size_t count, std::size_t element_bytes,
                    const Shape& shape) const override {
    (void)shape;
    return Geometry{count, count, count, count * element_bytes};
  }

  void place(CallArgs& args) const override {
    args.send = args.send_base;
    args.recv = args.in_place && args.rank == args.root ? args.send_base : args.recv_base;
  }

  std::vector<Region> inputs(const CallArgs& args) const override {
    return {Region{args.send_base, args.count, 0}};
  }

  ResultLayout result(const CallArgs& args) const override {
    if (args.rank != args.root) return ResultLayout{args.recv, {}};
    return ResultLayout{args.recv, {ResultPart{0, args.count, kReducedOverRanks, 0}}};
  }

  int result_holder(const CallArgs& args) const override { return args.root; }

  // The call's options, the same for its blocking, started and planned
  // forms.
  static ReduceOptions options_of(const CallArgs& args) {
    ReduceOptions options;
    options.algorithm = args.algorithm;
    options.op = args.op;
    options.deterministic = args.deterministic;
    options.root = args.root;
    return options;
  }

  void run(Communicator& communicator, const CallArgs& args) const override {
    const ReduceOptions options = options_of(args);
    communicator.reduce(args.send, args.recv, args.count, args.type, options);
  }

  Work start(Communicator& communicator, const CallArgs& args) const override {
    const ReduceOptions options = options_of(args);
    return communicator.reduce_async(args.send, args.recv, args.count, args.type, options);
  }

  Plan prepare(Communicator& communicator, const CallArgs& args) const override {
    const ReduceOptions options = options_of(args);
    return communicator.reduce_init(args.send, args.recv, args.count, args.type, options);
  }
};

}  // namespace

std::unique_ptr<CollectiveCase> make_reduce_case() { return std::make_unique<ReduceCase>(); }

}  // namespace collective::cases
