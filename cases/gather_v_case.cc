// gather_v: the root gets every rank's block, in rank order, each at its
// recv_displacements[q] with recv_counts[q] elements (rank 0's count is
// `uneven` times the others', blocks one element apart). The size is the
// gathered elements (the sum of the counts); busbw = algbw * (n-1)/n. In
// place (the root only), the root's input is its block of the receive
// buffer.
#include <cstddef>

#include "collective_case.h"
#include "per_rank_counts.h"

namespace collective::cases {
namespace {

class GatherVCase final : public CollectiveCase {
 public:
  CollectiveKind kind() const override { return CollectiveKind::kGatherV; }
  bool per_rank_counts() const override { return true; }

  Geometry geometry(std::size_t count, std::size_t element_bytes,
                    const Shape& shape) const override {
    const std::vector<std::size_t> counts = counts_of(shape, count);
    return Geometry{count, count_of(shape, count, shape.rank), gapped_elements(counts),
                    total(counts) * element_bytes};
  }

  void place(CallArgs& args) const override {
    // Significant at the root only; every rank passes the same.
    args.recv_counts = counts_of(args.shape(), args.count);
    args.recv_displacements = gapped_displacements(args.recv_counts);
    args.send_counts = {own_count(args)};
    args.recv = args.recv_base;
    args.send = args.in_place && args.rank == args.root
                    ? element_at(args.recv_base, own_place(args), args.type)
                    : args.send_base;
  }

  // The input's indices are its place in the gathered buffer.
  std::vector<Region> inputs(const CallArgs& args) const override {
    return {Region{const_cast<void*>(args.send), own_count(args), own_place(args)}};
  }

  ResultLayout result(const CallArgs& args) const override {
    ResultLayout layout{args.recv, {}};
    if (args.rank != args.root) return layout;
    for (int from = 0; from < args.ranks; ++from) {
      const auto q = static_cast<std::size_t>(from);
      const std::size_t first = args.recv_displacements[q];
      layout.parts.push_back(ResultPart{first, args.recv_counts[q], from, first});
    }
    add_gaps(args.recv_counts, args.recv_displacements, layout.parts);
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
    communicator.gather_v(args.send, own_count(args), args.recv, args.recv_counts,
                          args.recv_displacements, args.type, options);
  }

  Work start(Communicator& communicator, const CallArgs& args) const override {
    const GatherOptions options = options_of(args);
    return communicator.gather_v_async(args.send, own_count(args), args.recv, args.recv_counts,
                                       args.recv_displacements, args.type, options);
  }

  Plan prepare(Communicator& communicator, const CallArgs& args) const override {
    const GatherOptions options = options_of(args);
    return communicator.gather_v_init(args.send, own_count(args), args.recv, args.recv_counts,
                                      args.recv_displacements, args.type, options);
  }

 protected:
  std::size_t elements_per_count(const Shape& shape) const override {
    return shape.uneven + static_cast<std::size_t>(shape.ranks) - 1;
  }

 private:
  static std::size_t own_count(const CallArgs& args) {
    return count_of(args.shape(), args.count, args.rank);
  }
  static std::size_t own_place(const CallArgs& args) {
    return gapped_displacements(
        counts_of(args.shape(), args.count))[static_cast<std::size_t>(args.rank)];
  }
};

}  // namespace

std::unique_ptr<CollectiveCase> make_gather_v_case() { return std::make_unique<GatherVCase>(); }

}  // namespace collective::cases
