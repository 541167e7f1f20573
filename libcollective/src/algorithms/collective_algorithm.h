// The interface every collective algorithm implements. Algorithms do not
// know each other; registry.cc lists them all, in order of preference.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "collective/algorithm.h"
#include "collective/topology.h"
#include "core/communicator_state.h"
#include "core/request.h"

namespace collective::internal {

// Whether an algorithm can serve a request, and why not.
struct Support {
  bool ok = true;
  std::string reason;  // set when !ok: "recursive_doubling implements all_reduce only"

  static Support yes() { return {}; }
  static Support no(std::string why) { return Support{false, std::move(why)}; }
};

class CollectiveAlgorithm {
 public:
  virtual ~CollectiveAlgorithm() = default;

  virtual Algorithm id() const = 0;
  const char* name() const;

  // The collectives this algorithm implements (it opts in to each). Every
  // other kind is refused by supports() with "ring does not implement
  // all_to_all (it serves all_reduce, ...)", and run() never sees it.
  virtual std::span<const CollectiveKind> serves() const = 0;
  bool serves(CollectiveKind kind) const;

  // Whether it serves the kind, then supports_served(). Must give the same
  // answer on every rank for the same request.
  Support supports(const Request& request, const CommunicatorState& state) const;

  // Seconds this algorithm needs for `request` on `topology`, for AUTO
  // (cost/cost_model.h has the shared link costs and constants); nullopt
  // when the algorithm offers no estimate (then AUTO uses the size rule in
  // selector.cc). Must be the same on every rank.
  virtual std::optional<double> estimate_seconds(const Request& request,
                                                 const Topology& topology) const {
    (void)request;
    (void)topology;
    return std::nullopt;
  }

  // Whether run() can make the cross-rank check itself, in the exchange it
  // makes anyway (then request.carried_check is set). Ranks may answer
  // differently only when their calls differ, which the check reports.
  virtual bool carries_check(const Request& request, CommunicatorState& state) const {
    (void)request;
    (void)state;
    return false;
  }

  // Runs the collective. The request has been validated, the communicator
  // has at least two ranks, and supports() said yes.
  virtual void run(const Request& request, CommunicatorState& state) const = 0;

 protected:
  // supports() for a kind in serves(): whether this request can be served
  // (buffers, topology, options). Same answer on every rank.
  virtual Support supports_served(const Request& request, const CommunicatorState& state) const = 0;

  // For the cases of run()'s switch that serves() excludes (the switch
  // names every kind, so that a new kind is a compile error until each
  // algorithm decides): raises UnsupportedError, as supports() would have.
  [[noreturn]] void refuse_unserved(const Request& request, const CommunicatorState& state) const;
};

}  // namespace collective::internal
