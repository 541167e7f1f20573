#include "api/communicator_topology.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "collective/errors.h"
#include "core/agreed_params.h"
#include "core/env_params.h"
#include "core/log.h"
#include "core/mpi_check.h"
#include "core/mpi_thread_level.h"
#include "core/rank_translation.h"
#include "selection/rules_file.h"
#include "topology/machine_probe.h"
#include "topology/survivors_topology.h"
#include "topology/topology_file.h"
#include "util/json.h"

namespace collective::internal {
namespace {

// What one rank tells the others about itself.
struct RankRecord {
  int real_leader = 0;  // smallest rank sharing memory with it: names its real node
  std::string cpuset;
  int bound = 0;
  Node machine;
  // Its COLLECTIVE_* parameters that must agree (core/agreed_params.h):
  // they ride on this exchange rather than costing one of their own.
  std::string parameters;
};

std::string record_json(int real_leader, const MachineProbe& probe) {
  std::ostringstream out;
  out << "{\"leader\": " << real_leader << ", \"cpuset\": " << json::json_quote(probe.cpuset)
      << ", \"bound\": " << probe.bound_processing_units
      << ", \"machine\": " << node_to_json(probe.machine)
      << ", \"parameters\": " << json::json_quote(agreed_parameters_text(env_params())) << "}";
  return out.str();
}

RankRecord parse_record(std::string_view text, int rank) {
  const std::string where = "topology record of rank " + std::to_string(rank);
  const json::Value value = json::parse(text, where);
  json::ObjectReader reader(value, where);
  RankRecord record;
  record.real_leader = static_cast<int>(reader.required_integer("leader", 0, INT_MAX));
  record.cpuset = reader.string("cpuset", "");
  record.bound = static_cast<int>(reader.integer("bound", 0, 0, INT_MAX));
  record.machine = node_from_json(*reader.required_object("machine"), where + ".machine");
  record.parameters = reader.string("parameters", "");
  reader.finish();
  return record;
}

// Every rank's record, on every rank.
std::vector<std::string> all_gather_text(const std::string& mine, MPI_Comm comm, int size,
                                         const char* operation, int rank) {
  // Blocking collectives under the MPI lock (below MULTIPLE): every rank
  // holds its creation turn (core/communicator_creation.h), so nothing
  // else blocking can hold up the ranks this one waits for.
  const MpiLock lock;
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<std::size_t>(size));
  COLLECTIVE_MPI_CHECK(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm),
                       operation, rank);
  std::vector<int> offsets(static_cast<std::size_t>(size));
  long long total = 0;
  for (int i = 0; i < size; ++i) {
    offsets[static_cast<std::size_t>(i)] = static_cast<int>(total);
    total += lengths[static_cast<std::size_t>(i)];
    if (total > INT_MAX) {
      throw CommunicationError(operation, rank, "topology records exceed 2 GiB");
    }
  }
  std::string all(static_cast<std::size_t>(total), '\0');
  COLLECTIVE_MPI_CHECK(MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(),
                                      offsets.data(), MPI_CHAR, comm),
                       operation, rank);
  std::vector<std::string> texts;
  for (int i = 0; i < size; ++i) {
    texts.push_back(all.substr(static_cast<std::size_t>(offsets[static_cast<std::size_t>(i)]),
                               static_cast<std::size_t>(lengths[static_cast<std::size_t>(i)])));
  }
  return texts;
}

// Raises on every rank when any rank failed, so that no rank goes on alone
// into a collective the others never reach.
void agree_on_failure(const std::string& local_error, bool local_invalid_argument, MPI_Comm comm,
                      int rank, const char* operation) {
  int first_failed = local_error.empty() ? INT_MAX : rank;
  {
    const MpiLock lock;
    COLLECTIVE_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &first_failed, 1, MPI_INT, MPI_MIN, comm),
                         operation, rank);
  }
  if (first_failed == INT_MAX) return;
  if (!local_error.empty()) {
    if (local_invalid_argument) throw InvalidArgumentError(operation, rank, local_error);
    throw CommunicationError(operation, rank, local_error);
  }
  throw InvalidArgumentError(
      operation, rank,
      "rank " + std::to_string(first_failed) + " could not build the topology (see its error)");
}

// The topology as the hardware and MPI describe it.
Topology real_topology(const std::vector<RankRecord>& records) {
  std::map<int, int> node_of_leader;  // ascending leaders: nodes ordered by first rank
  for (const RankRecord& record : records) node_of_leader.emplace(record.real_leader, 0);
  int index = 0;
  for (auto& [leader, node] : node_of_leader) node = index++;
  std::vector<Node> nodes(node_of_leader.size());
  for (const auto& [leader, node] : node_of_leader) {
    nodes[static_cast<std::size_t>(node)] = records[static_cast<std::size_t>(leader)].machine;
    nodes[static_cast<std::size_t>(node)].ranks.clear();
  }
  std::vector<RankPlacement> placements;
  for (std::size_t rank = 0; rank < records.size(); ++rank) {
    const int node = node_of_leader[records[rank].real_leader];
    auto& ranks = nodes[static_cast<std::size_t>(node)].ranks;
    placements.push_back(RankPlacement{node, static_cast<int>(ranks.size()), records[rank].cpuset,
                                       records[rank].bound});
    ranks.push_back(static_cast<int>(rank));
  }
  return Topology::from_parts(std::move(nodes), std::move(placements));
}

void copy_hardware(const Node& from, Node& to) {
  to.packages = from.packages;
  to.numa_nodes = from.numa_nodes;
  to.cores = from.cores;
  to.processing_units = from.processing_units;
  to.memory_bytes = from.memory_bytes;
  to.l3_cache_bytes = from.l3_cache_bytes;
  to.gpus = from.gpus;
  to.nics = from.nics;
  to.source = from.source;
}

// COLLECTIVE_TOPOLOGY_FILE applied to the real topology (docs/topology.md):
// a file placing exactly this many ranks decides the nodes, provided each of
// its nodes lies inside one real node; otherwise it only describes the
// machines, and MPI decides where ranks are.
Topology apply_file(const Topology& real, TopologyFile file, const std::string& path) {
  // Every rank may read its own copy of the file, at its own path: the
  // source names the variable, not the path, so that ranks agree.
  for (Node& node : file.nodes) {
    if (file.format != "dump" || node.source.rfind("file ", 0) == 0) {
      node.source = "COLLECTIVE_TOPOLOGY_FILE (" + file.format + ")";
    }
  }
  if (!file.placements.empty() && static_cast<int>(file.placements.size()) == real.size()) {
    std::vector<Node> nodes = file.nodes;
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      const auto& ranks = nodes[n].ranks;
      for (const int rank : ranks) {
        if (real.node_of(rank) != real.node_of(ranks.front())) {
          throw InvalidArgumentError(path, -1,
                                     "node " + std::to_string(n) + " of the file holds ranks " +
                                         std::to_string(ranks.front()) + " and " +
                                         std::to_string(rank) +
                                         ", which do not share memory (hosts " +
                                         real.node(real.node_of(ranks.front())).host + " and " +
                                         real.node(real.node_of(rank)).host + ")");
        }
      }
    }
    std::vector<RankPlacement> placements = file.placements;
    for (int rank = 0; rank < real.size(); ++rank) {
      placements[static_cast<std::size_t>(rank)].cpuset = real.placement(rank).cpuset;
      placements[static_cast<std::size_t>(rank)].bound_processing_units =
          real.placement(rank).bound_processing_units;
    }
    COLLECTIVE_LOG(kInfo, "COLLECTIVE_TOPOLOGY_FILE " << path << ": " << nodes.size()
                                                      << " nodes placed as the file says");
    return Topology::from_parts(std::move(nodes), std::move(placements));
  }
  if (!file.placements.empty()) {
    COLLECTIVE_LOG(kInfo, "COLLECTIVE_TOPOLOGY_FILE "
                              << path << " places " << file.placements.size()
                              << " ranks, this communicator has " << real.size()
                              << "; using only its machine descriptions, MPI places the ranks");
  }
  std::vector<Node> nodes = real.nodes();
  const bool one_each = file.nodes.size() == nodes.size();
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    copy_hardware(file.nodes[one_each ? n : 0], nodes[n]);
  }
  std::vector<RankPlacement> placements;
  for (int rank = 0; rank < real.size(); ++rank) placements.push_back(real.placement(rank));
  return Topology::from_parts(std::move(nodes), std::move(placements));
}

void check_same_everywhere(const Topology& topology, MPI_Comm comm, int rank,
                           const char* operation) {
  const std::uint64_t hash =
      std::hash<std::string>{}(topology.to_json()) ^ (process_rules_fingerprint() * 31);
  std::uint64_t low = hash;
  std::uint64_t high = hash;
  const MpiLock lock;
  COLLECTIVE_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &low, 1, MPI_UINT64_T, MPI_MIN, comm), operation,
                       rank);
  COLLECTIVE_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &high, 1, MPI_UINT64_T, MPI_MAX, comm),
                       operation, rank);
  if (low != high) {
    throw InvalidArgumentError(operation, rank,
                               "ranks built different topologies or read different rules; are "
                               "COLLECTIVE_TOPOLOGY_FILE and COLLECTIVE_RULES_FILE the same files "
                               "on every host?");
  }
}

void dump_once(const Topology& topology, int rank) {
  const std::string& path = env_params().topology_dump;
  if (path.empty() || rank != 0) return;
  int world_rank = 0;
  {
    const MpiLock lock;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  }
  static std::atomic<bool> dumped{false};
  if (world_rank != 0 || dumped.exchange(true)) return;
  std::ofstream out(path, std::ios::trunc);
  out << topology.to_json();
  out.close();
  if (!out) {
    COLLECTIVE_LOG(kWarn, "COLLECTIVE_TOPOLOGY_DUMP: could not write " << path);
  } else {
    COLLECTIVE_LOG(kInfo, "topology written to " << path);
  }
}

// A communicator of `members` (ranks of `comm`, in its new rank order), made
// by MPI_Comm_create_group: collective over the members only, so a node's
// group is made over its shared memory, and the group across nodes over its
// few members, where MPI_Comm_split would make every rank of `comm` agree
// (over TCP once it spans hosts; 40-200 ms between two simulated hosts).
MPI_Comm group_comm(MPI_Comm comm, const std::vector<int>& members, int tag, const char* operation,
                    int rank) {
  const MpiLock lock;  // blocking; see all_gather_text
  MPI_Group all = MPI_GROUP_NULL;
  MPI_Group group = MPI_GROUP_NULL;
  MPI_Comm made = MPI_COMM_NULL;
  COLLECTIVE_MPI_CHECK(MPI_Comm_group(comm, &all), operation, rank);
  const int included =
      MPI_Group_incl(all, static_cast<int>(members.size()), members.data(), &group);
  MPI_Group_free(&all);
  check_mpi(included, "MPI_Group_incl", operation, rank);
  const int created = MPI_Comm_create_group(comm, group, tag, &made);
  MPI_Group_free(&group);
  check_mpi(created, "MPI_Comm_create_group", operation, rank);
  MPI_Comm_set_errhandler(made, MPI_ERRORS_RETURN);
  return made;
}

// MPI_Comm_create_group's tags for the two kinds of groups (disjoint groups
// of one kind may share a tag).
constexpr int kNodeGroupTag = 7412;
constexpr int kCrossNodeGroupTag = 7413;

void split_node_groups(CommunicatorState& state, const char* operation) {
  const Topology& topology = *state.topology;
  const int local = topology.local_rank(state.rank);
  state.node_comm = group_comm(state.comm, topology.node(topology.node_of(state.rank)).ranks,
                               kNodeGroupTag, operation, state.rank);
  if (topology.node_count() < 2) return;
  MPI_Comm cross = MPI_COMM_NULL;
  if (local < topology.min_ranks_per_node()) {
    // The ranks of local rank `local` on each node, in node order.
    std::vector<int> across;
    for (int node = 0; node < topology.node_count(); ++node) {
      across.push_back(topology.node(node).ranks[static_cast<std::size_t>(local)]);
    }
    cross = group_comm(state.comm, across, kCrossNodeGroupTag, operation, state.rank);
  }
  if (cross != MPI_COMM_NULL) {
    state.cross_node = std::make_unique<CommunicatorState>(cross);
    state.cross_node->spans_nodes = true;
    state.cross_node->node_oversubscribed = state.node_oversubscribed;
    state.cross_node->step_of = &state;
    // Its errors (a dead peer, a timeout in the ring step) name this
    // communicator's ranks, not the cross-node ring's.
    CommunicatorState& across = *state.cross_node;
    across.shown_ranks = ranks_in(across.comm, state.comm);
    if (std::find(across.shown_ranks.begin(), across.shown_ranks.end(), MPI_UNDEFINED) !=
        across.shown_ranks.end()) {
      across.shown_ranks.clear();  // never the case; the ring's own numbers then
    }
  }
}

// What the state keeps of its topology: whether its node is oversubscribed,
// its node and cross-node communicators.
void use_topology(CommunicatorState& state, const char* operation) {
  const int node_index = state.topology->node_of(state.rank);
  const int usable = state.topology->usable_processing_units(node_index);
  state.node_oversubscribed =
      usable > 0 && static_cast<int>(state.topology->node(node_index).ranks.size()) > usable;
  split_node_groups(state, operation);
  if (state.rank == 0) {
    COLLECTIVE_LOG(kDebug, "topology of a new communicator of " << state.size << " ranks:\n"
                                                                << state.topology->describe());
  }
}

}  // namespace

void attach_topology(CommunicatorState& state, const char* operation) {
  const int rank = state.rank;
  const MachineProbe probe = probe_this_machine();

  MPI_Comm shared = MPI_COMM_NULL;
  int leader = rank;
  int rc = MPI_SUCCESS;
  {
    const MpiLock lock;  // blocking; see all_gather_text
    COLLECTIVE_MPI_CHECK(
        MPI_Comm_split_type(state.comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared),
        operation, rank);
    rc = MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, shared);
    MPI_Comm_free(&shared);
  }
  check_mpi(rc, "MPI_Allreduce", operation, rank);

  const std::vector<std::string> texts =
      all_gather_text(record_json(leader, probe), state.comm, state.size, operation, rank);

  std::string error;
  bool invalid_argument = true;
  std::optional<Topology> topology;
  std::vector<std::string> parameters;  // every rank's, from the same records
  try {
    std::vector<RankRecord> records;
    for (int r = 0; r < state.size; ++r) {
      records.push_back(parse_record(texts[static_cast<std::size_t>(r)], r));
    }
    for (const RankRecord& record : records) parameters.push_back(record.parameters);
    topology = real_topology(records);
    const std::string path = current_env_params().topology_file;
    if (!path.empty()) {
      TopologyFile file =
          read_topology_text(read_text_file(path, "COLLECTIVE_TOPOLOGY_FILE"), path);
      topology = apply_file(*topology, std::move(file), path);
    }
    // AUTO reads the rules file too; a bad one fails here, on every rank.
    process_rules();
  } catch (const Error& failure) {
    error = failure.what();
    invalid_argument = dynamic_cast<const InvalidArgumentError*>(&failure) != nullptr;
  } catch (const std::exception& failure) {
    error = failure.what();
    invalid_argument = false;
  }
  agree_on_failure(error, invalid_argument, state.comm, rank, operation);
  check_agreed_parameters(parameters, operation, rank);
  check_same_everywhere(*topology, state.comm, rank, operation);
  state.topology = std::make_shared<const Topology>(std::move(*topology));
  dump_once(*state.topology, rank);
  use_topology(state, operation);
}

void attach_survivors_topology(CommunicatorState& state, const Topology& before,
                               const std::vector<int>& members, const char* operation) {
  state.topology = std::make_shared<const Topology>(survivors_topology(before, members));
  use_topology(state, operation);
}

}  // namespace collective::internal
