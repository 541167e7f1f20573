// scatter_v: send_counts[q] elements from send_displacements[q] of the
// root's send buffer go to rank q (rank 0's count is `uneven` times the
// others', blocks one element apart). The size is the scattered elements
// (the sum of the counts); busbw = algbw * (n-1)/n. In place (the root
// only), the root's result is its block of the send buffer.
#include <cstddef>

#include "collective_case.h"
#include "per_rank_counts.h"

namespace collective::cases {
namespace {

class ScatterVCase final : public CollectiveCase {
 public:
  CollectiveKind kind() const override { return CollectiveKind::kScatterV; }
  bool per_rank_counts() const override { return true; }

  Geometry geometry(std::size_t count, std::size_t element_bytes,
                    const Shape& shape) const override {
    const std::vector<std::size_t> counts = counts_of(shape, count);
    return Geometry{count, gapped_elements(counts), count_of(shape, count, shape.rank),
                    total(counts) * element_bytes};
  }

  void place(CallArgs& args) const override {
    // Significant at the root only; every rank passes the same.
    args.send_counts = counts_of(args.shape(), args.count);
    args.send_displacements = gapped_displacements(args.send_counts);
    args.recv_counts = {own_count(args)};
    args.send = args.send_base;
    args.recv = args.in_place && args.rank == args.root
                    ? element_at(args.send_base, own_place(args), args.type)
                    : args.recv_base;
  }

  // The root's input's indices are its places in its send buffer.
  std::vector<Region> inputs(const CallArgs& args) const override {
    if (args.rank != args.root) return {};
    std::vector<Region> regions;
    for (std::size_t q = 0; q < args.send_counts.size(); ++q) {
      const std::size_t first = args.send_displacements[q];
      regions.push_back(
          Region{element_at(args.send_base, first, args.type), args.send_counts[q], first});
    }
    return regions;
  }

  ResultLayout result(const CallArgs& args) const override {
    return ResultLayout{args.recv, {ResultPart{0, own_count(args), args.root, own_place(args)}}};
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
    communicator.scatter_v(args.send, args.send_counts, args.send_displacements, args.recv,
                           own_count(args), args.type, options);
  }

  Work start(Communicator& communicator, const CallArgs& args) const override {
    const ScatterOptions options = options_of(args);
    return communicator.scatter_v_async(args.send, args.send_counts, args.send_displacements,
                                        args.recv, own_count(args), args.type, options);
  }

  Plan prepare(Communicator& communicator, const CallArgs& args) const override {
    const ScatterOptions options = options_of(args);
    return communicator.scatter_v_init(args.send, args.send_counts, args.send_displacements,
                                       args.recv, own_count(args), args.type, options);
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

std::unique_ptr<CollectiveCase> make_scatter_v_case() { return std::make_unique<ScatterVCase>(); }

}  // namespace collective::cases
