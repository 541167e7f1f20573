// scatter: block q of the root's send buffer goes to rank q. The size is
// the root's send buffer (ranks * count elements), as in nccl-tests; busbw
// = algbw * (n-1)/n: the root sends all blocks but its own. In place (the
// root only), the root's result is its block of the send buffer.
#include <cstddef>

#include "collective_case.h"

namespace collective::cases {
namespace {

class ScatterCase final : public CollectiveCase {
 public:
  CollectiveKind kind() const override { return CollectiveKind::kScatter; }

  Geometry geometry(std::size_t count, std::size_t element_bytes,
                    const Shape& shape) const override {
    const std::size_t all = count * static_cast<std::size_t>(shape.ranks);
    return Geometry{count, all, count, all * element_bytes};
  }

  void place(CallArgs& args) const override {
    args.send = args.send_base;
    args.recv = args.in_place && args.rank == args.root
                    ? element_at(args.send_base, block_of(args, args.rank), args.type)
                    : args.recv_base;
  }

  // The root's input's indices are its places in its send buffer.
  std::vector<Region> inputs(const CallArgs& args) const override {
    if (args.rank != args.root) return {};
    return {Region{args.send_base, args.count * static_cast<std::size_t>(args.ranks), 0}};
  }

  ResultLayout result(const CallArgs& args) const override {
    return ResultLayout{args.recv,
                        {ResultPart{0, args.count, args.root, block_of(args, args.rank)}}};
  }

  // The call's options, the same for its blocking, started and planned
  // forms.
  static ScatterOptions options_of(const CallArgs& args) {
    ScatterOptions options;
    options.algorithm = args.algorithm;
    options.root = args.root;
    return options;
  }

  void run(Communicator& communicator, const CallArgs& args) const override {
    const ScatterOptions options = options_of(args);
    communicator.scatter(args.send, args.recv, args.count, args.type, options);
  }

  Work start(Communicator& communicator, const CallArgs& args) const override {
    const ScatterOptions options = options_of(args);
    return communicator.scatter_async(args.send, args.recv, args.count, args.type, options);
  }

  Plan prepare(Communicator& communicator, const CallArgs& args) const override {
    const ScatterOptions options = options_of(args);
    return communicator.scatter_init(args.send, args.recv, args.count, args.type, options);
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

std::unique_ptr<CollectiveCase> make_scatter_case() { return std::make_unique<ScatterCase>(); }

}  // namespace collective::cases
