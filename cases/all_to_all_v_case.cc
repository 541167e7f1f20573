// all_to_all_v: rank r sends send_counts[q] elements from
// send_displacements[q] to rank q, which receives them at its
// recv_displacements[r]. The uneven pattern is symmetric, as MPI's in-place
// form needs (what r sends q, q sends r): rank 0 exchanges `uneven` times
// the base count with every rank, the others the base count (--uneven 4:
// rank 0 sends 4x the others). Blocks lie one element apart. The size is
// what a rank other than 0 sends (ranks * count elements), as all_to_all's;
// busbw = algbw * (n-1)/n. In place, send == recv: each block is sent from
// where the block received from that rank lands.
#include <cstddef>

#include "collective_case.h"
#include "per_rank_counts.h"

namespace collective::cases {
namespace {

// Elements `from` sends `to`.
std::size_t amount(const Shape& shape, std::size_t count, int from, int to) {
  return from == 0 || to == 0 ? shape.uneven * count : count;
}

// Every amount `rank` exchanges, by peer.
std::vector<std::size_t> amounts_of(const Shape& shape, std::size_t count, int rank) {
  std::vector<std::size_t> amounts(static_cast<std::size_t>(shape.ranks));
  for (int q = 0; q < shape.ranks; ++q) {
    amounts[static_cast<std::size_t>(q)] = amount(shape, count, rank, q);
  }
  return amounts;
}

class AllToAllVCase final : public CollectiveCase {
 public:
  CollectiveKind kind() const override { return CollectiveKind::kAllToAllV; }
  bool per_rank_counts() const override { return true; }

  Geometry geometry(std::size_t count, std::size_t element_bytes,
                    const Shape& shape) const override {
    const std::size_t elements = gapped_elements(amounts_of(shape, count, shape.rank));
    const std::size_t size = count * static_cast<std::size_t>(shape.ranks) * element_bytes;
    return Geometry{count, elements, elements, size};
  }

  void place(CallArgs& args) const override {
    args.recv_counts = amounts_of(args.shape(), args.count, args.rank);
    args.recv_displacements = gapped_displacements(args.recv_counts);
    args.send_counts = args.recv_counts;  // symmetric
    args.send_displacements = args.recv_displacements;
    args.recv = args.recv_base;
    args.send = args.in_place ? args.recv_base : args.send_base;
  }

  // The input's indices are its places in this rank's buffer.
  std::vector<Region> inputs(const CallArgs& args) const override {
    std::vector<Region> regions;
    for (std::size_t q = 0; q < args.send_counts.size(); ++q) {
      const std::size_t first = args.send_displacements[q];
      regions.push_back(Region{element_at(const_cast<void*>(args.send), first, args.type),
                               args.send_counts[q], first});
    }
    return regions;
  }

  ResultLayout result(const CallArgs& args) const override {
    ResultLayout layout{args.recv, {}};
    for (int from = 0; from < args.ranks; ++from) {
      const auto q = static_cast<std::size_t>(from);
      // Where `from` keeps its block for this rank.
      const std::size_t source = gapped_displacements(
          amounts_of(args.shape(), args.count, from))[static_cast<std::size_t>(args.rank)];
      layout.parts.push_back(
          ResultPart{args.recv_displacements[q], args.recv_counts[q], from, source});
    }
    add_gaps(args.recv_counts, args.recv_displacements, layout.parts);
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
    communicator.all_to_all_v(args.send, args.send_counts, args.send_displacements, args.recv,
                              args.recv_counts, args.recv_displacements, args.type, options);
  }

  Work start(Communicator& communicator, const CallArgs& args) const override {
    const AllToAllOptions options = options_of(args);
    return communicator.all_to_all_v_async(args.send, args.send_counts, args.send_displacements,
                                           args.recv, args.recv_counts, args.recv_displacements,
                                           args.type, options);
  }

  Plan prepare(Communicator& communicator, const CallArgs& args) const override {
    const AllToAllOptions options = options_of(args);
    return communicator.all_to_all_v_init(args.send, args.send_counts, args.send_displacements,
                                          args.recv, args.recv_counts, args.recv_displacements,
                                          args.type, options);
  }

 protected:
  std::size_t elements_per_count(const Shape& shape) const override {
    return static_cast<std::size_t>(shape.ranks);
  }
};

}  // namespace

std::unique_ptr<CollectiveCase> make_all_to_all_v_case() {
  return std::make_unique<AllToAllVCase>();
}

}  // namespace collective::cases
