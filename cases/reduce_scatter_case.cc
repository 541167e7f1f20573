// reduce_scatter: rank r gets block r of op over all ranks' buffers.
// The size is the whole input (ranks * count elements), as in nccl-tests;
// busbw = algbw * (n-1)/n: each rank sends all but its own block once.
// In place, rank r's result is block r of its send buffer.
#include <cstddef>

#include "collective_case.h"

namespace collective::cases {
namespace {

class ReduceScatterCase final : public CollectiveCase {
 public:
  CollectiveKind kind() const override { return CollectiveKind::kReduceScatter; }

  Geometry geometry(std::size_t count, std::size_t element_bytes,
                    const Shape& shape) const override {
    const auto n = static_cast<std::size_t>(shape.ranks);
    return Geometry{count, count * n, count, count * n * element_bytes};
  }

  void place(CallArgs& args) const override {
    args.send = args.send_base;
    args.recv = args.in_place ? static_cast<std::byte*>(args.send_base) +
                                    own_block(args) * element_size(args.type)
                              : args.recv_base;
  }

  std::vector<Region> inputs(const CallArgs& args) const override {
    return {Region{args.send_base, args.count * static_cast<std::size_t>(args.ranks), 0}};
  }

  ResultLayout result(const CallArgs& args) const override {
    return ResultLayout{args.recv, {ResultPart{0, args.count, kReducedOverRanks, own_block(args)}}};
  }

  // The call's options, the same for its blocking, started and planned
  // forms.
  static ReduceScatterOptions options_of(const CallArgs& args) {
    ReduceScatterOptions options;
    options.algorithm = args.algorithm;
    options.op = args.op;
    options.deterministic = args.deterministic;
    return options;
  }

  void run(Communicator& communicator, const CallArgs& args) const override {
    const ReduceScatterOptions options = options_of(args);
    communicator.reduce_scatter(args.send, args.recv, args.count, args.type, options);
  }

  Work start(Communicator& communicator, const CallArgs& args) const override {
    const ReduceScatterOptions options = options_of(args);
    return communicator.reduce_scatter_async(args.send, args.recv, args.count, args.type, options);
  }

  Plan prepare(Communicator& communicator, const CallArgs& args) const override {
    const ReduceScatterOptions options = options_of(args);
    return communicator.reduce_scatter_init(args.send, args.recv, args.count, args.type, options);
  }

 protected:
  std::size_t elements_per_count(const Shape& shape) const override {
    return static_cast<std::size_t>(shape.ranks);
  }

 private:
  static std::size_t own_block(const CallArgs& args) {
    return static_cast<std::size_t>(args.rank) * args.count;
  }
};

}  // namespace

std::unique_ptr<CollectiveCase> make_reduce_scatter_case() {
  return std::make_unique<ReduceScatterCase>();
}

}  // namespace collective::cases
