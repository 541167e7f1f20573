// gather: the root gets every rank's block, in rank order. The size is the
// root's receive buffer (ranks * count elements), as in nccl-tests; busbw =
// algbw * (n-1)/n: the root receives all blocks but its own. In place (the
// root only), the root's input is its block of the receive buffer.
#include <cstddef>

#include "collective_case.h"

namespace collective::cases {
namespace {

class GatherCase final : public CollectiveCase {
 public:
  CollectiveKind kind() const override { return CollectiveKind::kGather; }

  Geometry geometry(std::size_t count, std::size_t element_bytes,
                    const Shape& shape) const override {
    const std::size_t all = count * static_cast<std::size_t>(shape.ranks);
    return Geometry{count, count, all, all * element_bytes};
  }

  void place(CallArgs& args) const override {
    args.recv = args.recv_base;
    args.send = args.in_place && args.rank == args.root
                    ? element_at(args.recv_base, block_of(args, args.rank), args.type)
                    : args.send_base;
  }

  // The input's indices are its place in the gathered buffer.
  std::vector<Region> inputs(const CallArgs& args) const override {
    return {Region{const_cast<void*>(args.send), args.count, block_of(args, args.rank)}};
  }

  ResultLayout result(const CallArgs& args) const override {
    ResultLayout layout{args.recv, {}};
    if (args.rank != args.root) return layout;
    for (int from = 0; from < args.ranks; ++from) {
      const std::size_t first = block_of(args, from);
      layout.parts.push_back(ResultPart{first, args.count, from, first});
    }
    return layout;
  }

  int result_holder(const CallArgs& args) const override { return args.root; }

  // The call's options, the same for its blocking, started and planned
  // forms.
  static GatherOptions options_of(const CallArgs& args) {
    GatherOptions options;
    options.algorithm = args.algorithm;
    options.root = args.root;
    return options;
  }

  void run(Communicator& communicator, const CallArgs& args) const override {
    const GatherOptions options = options_of(args);
    communicator.gather(args.send, args.recv, args.count, args.type, options);
  }

  Work start(Communicator& communicator, const CallArgs& args) const override {
    const GatherOptions options = options_of(args);
    return communicator.gather_async(args.send, args.recv, args.count, args.type, options);
  }

  Plan prepare(Communicator& communicator, const CallArgs& args) const override {
    const GatherOptions options = options_of(args);
    return communicator.gather_init(args.send, args.recv, args.count, args.type, options);
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

std::unique_ptr<CollectiveCase> make_gather_case() { return std::make_unique<GatherCase>(); }

}  // namespace collective::cases
