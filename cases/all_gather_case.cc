// all_gather: every rank gets every rank's block, in rank order.
// The size is the whole output (ranks * count elements), as in nccl-tests;
// busbw = algbw * (n-1)/n: each rank receives all blocks but its own.
// In place, rank r's input is block r of its receive buffer.
#include <cstddef>

#include "collective_case.h"

namespace collective::cases {
namespace {

class AllGatherCase final : public CollectiveCase {
 public:
  CollectiveKind kind() const override { return CollectiveKind::kAllGather; }

  Geometry geometry(std::size_t count, std::size_t element_bytes,
                    const Shape& shape) const override {
    const auto n = static_cast<std::size_t>(shape.ranks);
    return Geometry{count, count, count * n, count * n * element_bytes};
  }

  void place(CallArgs& args) const override {
    args.recv = args.recv_base;
    args.send = args.in_place ? static_cast<std::byte*>(args.recv_base) +
                                    block_of(args, args.rank) * element_size(args.type)
                              : args.send_base;
  }

  // The input's indices are its place in the gathered buffer: a block in
  // the wrong place is wrong.
  std::vector<Region> inputs(const CallArgs& args) const override {
    return {Region{const_cast<void*>(args.send), args.count, block_of(args, args.rank)}};
  }

  ResultLayout result(const CallArgs& args) const override {
    ResultLayout layout{args.recv, {}};
    for (int from = 0; from < args.ranks; ++from) {
      const std::size_t first = block_of(args, from);
      layout.parts.push_back(ResultPart{first, args.count, from, first});
    }
    return layout;
  }

  // The call's options, the same for its blocking, started and planned
  // forms.
  static AllGatherOptions options_of(const CallArgs& args) {
    AllGatherOptions options;
    options.algorithm = args.algorithm;
    return options;
  }

  void run(Communicator& communicator, const CallArgs& args) const override {
    const AllGatherOptions options = options_of(args);
    communicator.all_gather(args.send, args.recv, args.count, args.type, options);
  }

  Work start(Communicator& communicator, const CallArgs& args) const override {
    const AllGatherOptions options = options_of(args);
    return communicator.all_gather_async(args.send, args.recv, args.count, args.type, options);
  }

  Plan prepare(Communicator& communicator, const CallArgs& args) const override {
    const AllGatherOptions options = options_of(args);
    return communicator.all_gather_init(args.send, args.recv, args.count, args.type, options);
  }

 protected:
  std::size_t elements_per_count(const Shape& shape) const override {
    return static_cast<std::size_t>(shape.ranks);
  }

 private:
  static std::size_t block_of(const CallArgs& args, int rank) {
    return static_cast<std::size_t>(rank) * args.count;
  }
};

}  // namespace

std::unique_ptr<CollectiveCase> make_all_gather_case() { return std::make_unique<AllGatherCase>(); }

}  // namespace collective::cases
