// broadcast: the root's buffer is copied to every rank. One buffer, so only
// the in-place form exists. busbw = algbw: a pipelined broadcast moves the
// whole buffer through each link once.
#include <cstddef>

#include "collective_case.h"

namespace collective::cases {
namespace {

class BroadcastCase final : public CollectiveCase {
 public:
  CollectiveKind kind() const override { return CollectiveKind::kBroadcast; }

  Geometry geometry(std::size_t count, std::size_t element_bytes,
                    const Shape& shape) const override {
    (void)shape;
    return Geometry{count, 0, count, count * element_bytes};
  }

  bool has_out_of_place() const override { return false; }

  void place(CallArgs& args) const override {
    args.send = args.recv_base;
    args.recv = args.recv_base;
  }

  std::vector<Region> inputs(const CallArgs& args) const override {
    if (args.rank != args.root) return {};
    return {Region{args.recv_base, args.count, 0}};
  }

  ResultLayout result(const CallArgs& args) const override {
    return ResultLayout{args.recv_base, {ResultPart{0, args.count, args.root, 0}}};
  }

  // The call's options, the same for its blocking, started and planned
  // forms.
  static BroadcastOptions options_of(const CallArgs& args) {
    BroadcastOptions options;
    options.algorithm = args.algorithm;
    options.root = args.root;
    return options;
  }

  void run(Communicator& communicator, const CallArgs& args) const override {
    const BroadcastOptions options = options_of(args);
    communicator.broadcast(args.recv, args.count, args.type, options);
  }

  Work start(Communicator& communicator, const CallArgs& args) const override {
    const BroadcastOptions options = options_of(args);
    return communicator.broadcast_async(args.recv, args.count, args.type, options);
  }

  Plan prepare(Communicator& communicator, const CallArgs& args) const override {
    const BroadcastOptions options = options_of(args);
    return communicator.broadcast_init(args.recv, args.count, args.type, options);
  }
};

}  // namespace

std::unique_ptr<CollectiveCase> make_broadcast_case() { return std::make_unique<BroadcastCase>(); }

}  // namespace collective::cases
