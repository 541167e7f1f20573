// reduce_scatter_v: the send buffer holds every rank's block in rank order
// (recv_counts[q] elements for rank q: rank 0's is `uneven` times the
// others'); rank r gets block r of op over all ranks' buffers. The size is
// the whole input (the sum of the counts), as reduce_scatter's; busbw =
// algbw * (n-1)/n. In place, rank r's result is block r of its send buffer.
#include <cstddef>

#include "collective_case.h"
#include "per_rank_counts.h"

namespace collective::cases {
namespace {

class ReduceScatterVCase final : public CollectiveCase {
 public:
  CollectiveKind kind() const override { return CollectiveKind::kReduceScatterV; }
  bool per_rank_counts() const override { return true; }

  Geometry geometry(std::size_t count, std::size_t element_bytes,
                    const Shape& shape) const override {
    const std::vector<std::size_t> counts = counts_of(shape, count);
    return Geometry{count, total(counts), count_of(shape, count, shape.rank),
                    total(counts) * element_bytes};
  }

  void place(CallArgs& args) const override {
    args.recv_counts = counts_of(args.shape(), args.count);
    args.send = args.send_base;
    args.recv =
        args.in_place ? element_at(args.send_base, own_block(args), args.type) : args.recv_base;
  }

  std::vector<Region> inputs(const CallArgs& args) const override {
    return {Region{args.send_base, total(args.recv_counts), 0}};
  }

  ResultLayout result(const CallArgs& args) const override {
    return ResultLayout{args.recv,
                        {ResultPart{0, args.recv_counts[static_cast<std::size_t>(args.rank)],
                                    kReducedOverRanks, own_block(args)}}};
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
    communicator.reduce_scatter_v(args.send, args.recv, args.recv_counts, args.type, options);
  }

  Work start(Communicator& communicator, const CallArgs& args) const override {
    const ReduceScatterOptions options = options_of(args);
    return communicator.reduce_scatter_v_async(args.send, args.recv, args.recv_counts, args.type,
                                               options);
  }

  Plan prepare(Communicator& communicator, const CallArgs& args) const override {
    const ReduceScatterOptions options = options_of(args);
    return communicator.reduce_scatter_v_init(args.send, args.recv, args.recv_counts, args.type,
                                              options);
  }

 protected:
  std::size_t elements_per_count(const Shape& shape) const override {
    return shape.uneven + static_cast<std::size_t>(shape.ranks) - 1;
  }

 private:
  // Where rank r's block starts in the send buffer.
  static std::size_t own_block(const CallArgs& args) {
    const std::vector<std::size_t> counts = counts_of(args.shape(), args.count);
    std::size_t first = 0;
    for (int q = 0; q < args.rank; ++q) first += counts[static_cast<std::size_t>(q)];
    return first;
  }
};

}  // namespace

std::unique_ptr<CollectiveCase> make_reduce_scatter_v_case() {
  return std::make_unique<ReduceScatterVCase>();
}

}  // namespace collective::cases
