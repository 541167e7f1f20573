// all_to_all: block q of rank r's send buffer goes to rank q, where it is
// block r. The size is what each rank sends (ranks * count elements), as in
// nccl-tests; busbw = algbw * (n-1)/n: each rank sends all blocks but its
// own. In place, the receive buffer is also the send buffer.
#include <cstddef>

#include "collective_case.h"

namespace collective::cases {
namespace {

class AllToAllCase final : public CollectiveCase {
 public:
  CollectiveKind kind() const override { return CollectiveKind::kAllToAll; }

  Geometry geometry(std::size_t count, std::size_t element_bytes,
                    const Shape& shape) const override {
    const std::size_t all = count * static_cast<std::size_t>(shape.ranks);
    return Geometry{count, all, all, all * element_bytes};
  }

  void place(CallArgs& args) const override {
    args.recv = args.recv_base;
    args.send = args.in_place ? args.recv_base : args.send_base;
  }

  // The input's indices are its places in this rank's buffer.
  std::vector<Region> inputs(const CallArgs& args) const override {
    return {
        Region{const_cast<void*>(args.send), args.count * static_cast<std::size_t>(args.ranks), 0}};
  }

  ResultLayout result(const CallArgs& args) const override {
    ResultLayout layout{args.recv, {}};
    const std::size_t mine = static_cast<std::size_t>(args.rank) * args.count;
    for (int from = 0; from < args.ranks; ++from) {
      layout.parts.push_back(
          ResultPart{static_cast<std::size_t>(from) * args.count, args.count, from, mine});
    }
    return layout;
  }

  // The call's options, the same for its blocking, started and planned
  // forms.
  static AllToAllOptions options_of(const CallArgs& args) {
    AllToAllOptions options;
    options.algorithm = args.algorithm;
    return options;
  }

  void run(Communicator& communicator, const CallArgs& args) const override {
    const AllToAllOptions options = options_of(args);
    communicator.all_to_all(args.send, args.recv, args.count, args.type, options);
  }

  Work start(Communicator& communicator, const CallArgs& args) const override {
    const AllToAllOptions options = options_of(args);
    return communicator.all_to_all_async(args.send, args.recv, args.count, args.type, options);
  }

  Plan prepare(Communicator& communicator, const CallArgs& args) const override {
    const AllToAllOptions options = options_of(args);
    return communicator.all_to_all_init(args.send, args.recv, args.count, args.type, options);
  }

 protected:
  std::size_t elements_per_count(const Shape& shape) const override {
    return static_cast<std::size_t>(shape.ranks);
  }
};

}  // namespace

std::unique_ptr<CollectiveCase> make_all_to_all_case() { return std::make_unique<AllToAllCase>(); }

}  // namespace collective::cases
