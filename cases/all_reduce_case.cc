// all_reduce: every rank gets op over all ranks' buffers.
// busbw = algbw * 2(n-1)/n: a bandwidth-optimal all-reduce moves 2(n-1)/n
// of the buffer through each rank's link (reduce-scatter, then all-gather).
#include <cstddef>

#include "collective_case.h"

namespace collective::cases {
namespace {

class AllReduceCase final : public CollectiveCase {
 public:
  CollectiveKind kind() const override { return CollectiveKind::kAllReduce; }

  Geometry geometry(std::size_t count, std::size_t element_bytes,
                    const Shape& shape) const override {
    (void)shape;
    return Geometry{count, count, count, count * element_bytes};
  }

  void place(CallArgs& args) const override {
    args.send = args.send_base;
    args.recv = args.in_place ? args.send_base : args.recv_base;
  }

  std::vector<Region> inputs(const CallArgs& args) const override {
    return {Region{args.send_base, args.count, 0}};
  }

  ResultLayout result(const CallArgs& args) const override {
    return ResultLayout{args.recv, {ResultPart{0, args.count, kReducedOverRanks, 0}}};
  }

  // The call's options, the same for its blocking, started and planned
  // forms.
  static AllReduceOptions options_of(const CallArgs& args) {
    AllReduceOptions options;
    options.algorithm = args.algorithm;
    options.op = args.op;
    options.deterministic = args.deterministic;
    return options;
  }

  void run(Communicator& communicator, const CallArgs& args) const override {
    const AllReduceOptions options = options_of(args);
    communicator.all_reduce(args.send, args.recv, args.count, args.type, options);
  }

  Work start(Communicator& communicator, const CallArgs& args) const override {
    const AllReduceOptions options = options_of(args);
    return communicator.all_reduce_async(args.send, args.recv, args.count, args.type, options);
  }

  Plan prepare(Communicator& communicator, const CallArgs& args) const override {
    const AllReduceOptions options = options_of(args);
    return communicator.all_reduce_init(args.send, args.recv, args.count, args.type, options);
  }
};

}  // namespace

std::unique_ptr<CollectiveCase> make_all_reduce_case() { return std::make_unique<AllReduceCase>(); }

}  // namespace collective::cases
