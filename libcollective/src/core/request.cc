#include "core/request.h"

#include <numeric>

#include "collective/in_tree/collectives.h"

namespace collective::internal {
namespace {

// Elements before this rank's own block in the buffer that holds every
// rank's blocks (the root's, for a rooted kind).
std::size_t own_block_offset(const Request& request, int rank) {
  const auto block = static_cast<std::size_t>(traits_of(request.kind).rooted ? request.root : rank);
  switch (request.kind) {
    case CollectiveKind::kReduceScatterV:
      return std::accumulate(request.recv_counts.begin(), request.recv_counts.begin() + block,
                             std::size_t{0});
    case CollectiveKind::kScatterV: return request.send_displacements[block];
    case CollectiveKind::kAllGatherV:
    case CollectiveKind::kGatherV: return request.recv_displacements[block];
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllGather:
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce:
    case CollectiveKind::kBarrier:
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kAllToAllV:
    case CollectiveKind::kGather:
    case CollectiveKind::kScatter: return block * request.count;
  }
  return 0;
}

}  // namespace

bool Request::in_place() const { return send == static_cast<const void*>(recv); }

bool Request::in_place(int rank) const {
  const CollectiveTraits& traits = traits_of(kind);
  if (traits.rooted && rank != root) return false;
  const auto* send_bytes = static_cast<const std::byte*>(send);
  const auto* recv_bytes = static_cast<const std::byte*>(recv);
  switch (traits.in_place) {
    case InPlaceForm::kNone: return false;
    case InPlaceForm::kSameBuffer: return send_bytes == recv_bytes && send != nullptr;
    case InPlaceForm::kRecvInSend:
      return send != nullptr &&
             recv_bytes == send_bytes + own_block_offset(*this, rank) * element_bytes();
    case InPlaceForm::kSendInRecv:
      return recv != nullptr &&
             send_bytes == recv_bytes + own_block_offset(*this, rank) * element_bytes();
  }
  return false;
}

std::string Request::label() const {
  if (point_to_point != nullptr) {
    return std::string(point_to_point) + " #" + std::to_string(sequence) +
           (std::string_view(point_to_point) == "send" ? " to rank " : " from rank ") +
           std::to_string(peer);
  }
  return std::string(to_string(kind)) + " #" + std::to_string(sequence);
}

}  // namespace collective::internal
