#include "topology/topology_file.h"

#include <climits>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "collective/errors.h"
#include "topology/machine_probe.h"

namespace collective::internal {
namespace {

constexpr const char* kFormatName = "collective-topology";
constexpr int kTopologyFormatVersion = 1;
// Upper bounds that reject nonsense without limiting any real machine.
constexpr std::int64_t kMaxTopologyCount = 1 << 24;
constexpr std::int64_t kMaxRanks = 1 << 24;
constexpr std::int64_t kMaxLinkBitsPerSecond = 1'000'000'000'000'000;  // 1 Pb/s

std::string device_json(const GpuDevice& gpu) {
  std::ostringstream out;
  out << "{\"name\": " << json::json_quote(gpu.name)
      << ", \"model\": " << json::json_quote(gpu.model)
      << ", \"pci_bus_id\": " << json::json_quote(gpu.pci_bus_id)
      << ", \"numa_node\": " << gpu.numa_node << "}";
  return out.str();
}

std::string device_json(const NetworkDevice& nic) {
  std::ostringstream out;
  out << "{\"name\": " << json::json_quote(nic.name) << ", \"kind\": " << json::json_quote(nic.kind)
      << ", \"pci_bus_id\": " << json::json_quote(nic.pci_bus_id)
      << ", \"numa_node\": " << nic.numa_node
      << ", \"link_bits_per_second\": " << nic.link_bits_per_second << "}";
  return out.str();
}

template <typename Device>
std::string devices_json(const std::vector<Device>& devices) {
  std::string out = "[";
  for (std::size_t i = 0; i < devices.size(); ++i) {
    out += (i == 0 ? "" : ", ") + device_json(devices[i]);
  }
  return out + "]";
}

GpuDevice gpu_from_json(const json::Value& value, const std::string& where) {
  json::ObjectReader reader(value, where);
  GpuDevice gpu;
  gpu.name = reader.required_string("name");
  gpu.model = reader.string("model", "");
  gpu.pci_bus_id = reader.string("pci_bus_id", "");
  gpu.numa_node = static_cast<int>(reader.integer("numa_node", -1, -1, kMaxTopologyCount));
  reader.finish();
  return gpu;
}

NetworkDevice nic_from_json(const json::Value& value, const std::string& where) {
  json::ObjectReader reader(value, where);
  NetworkDevice nic;
  nic.name = reader.required_string("name");
  nic.kind = reader.string("kind", "other");
  nic.pci_bus_id = reader.string("pci_bus_id", "");
  nic.numa_node = static_cast<int>(reader.integer("numa_node", -1, -1, kMaxTopologyCount));
  nic.link_bits_per_second = static_cast<std::uint64_t>(
      reader.integer("link_bits_per_second", 0, 0, kMaxLinkBitsPerSecond));
  reader.finish();
  return nic;
}

RankPlacement placement_from_json(const json::Value& value, const std::string& where,
                                  std::int64_t& rank) {
  json::ObjectReader reader(value, where);
  RankPlacement place;
  rank = reader.required_integer("rank", 0, kMaxRanks - 1);
  place.node = static_cast<int>(reader.required_integer("node", 0, kMaxRanks - 1));
  place.local_rank = static_cast<int>(reader.integer("local_rank", -1, -1, kMaxRanks - 1));
  place.cpuset = reader.string("cpuset", "");
  place.bound_processing_units =
      static_cast<int>(reader.integer("bound_processing_units", 0, 0, kMaxTopologyCount));
  reader.finish();
  return place;
}

TopologyFile read_dump(std::string_view text, const std::string& origin) {
  const json::Value document = json::parse(text, origin);
  json::ObjectReader reader(document, origin);
  const std::string format = reader.string("format", kFormatName);
  if (format != kFormatName) {
    reader.fail("\"format\" is " + json::json_quote(format) + ", expected \"" + kFormatName + "\"");
  }
  reader.integer("version", kTopologyFormatVersion, kTopologyFormatVersion, kTopologyFormatVersion);
  TopologyFile file;
  file.format = "dump";
  const json::Value* nodes = reader.required_array("nodes");
  if (nodes->items().empty()) reader.fail("\"nodes\" is empty");
  for (std::size_t i = 0; i < nodes->items().size(); ++i) {
    file.nodes.push_back(
        node_from_json(nodes->items()[i], origin + ": nodes[" + std::to_string(i) + "]"));
    if (file.nodes.back().source.empty()) file.nodes.back().source = "file " + origin;
  }
  const json::Value* placements = reader.array("placements");
  reader.finish();

  bool any_ranks = false;
  for (const Node& node : file.nodes) any_ranks = any_ranks || !node.ranks.empty();
  if (placements != nullptr) {
    // Explicit placements: node rank lists follow from them.
    std::vector<std::pair<std::int64_t, RankPlacement>> listed;
    for (std::size_t i = 0; i < placements->items().size(); ++i) {
      std::int64_t rank = 0;
      RankPlacement place = placement_from_json(
          placements->items()[i], origin + ": placements[" + std::to_string(i) + "]", rank);
      listed.emplace_back(rank, std::move(place));
    }
    file.placements.resize(listed.size());
    std::vector<bool> seen(listed.size(), false);
    for (auto& [rank, place] : listed) {
      if (static_cast<std::size_t>(rank) >= listed.size() || seen[static_cast<std::size_t>(rank)]) {
        reader.fail("placements must name each rank 0.." + std::to_string(listed.size() - 1) +
                    " once (rank " + std::to_string(rank) + ")");
      }
      seen[static_cast<std::size_t>(rank)] = true;
      if (static_cast<std::size_t>(place.node) >= file.nodes.size()) {
        reader.fail("rank " + std::to_string(rank) + " is placed on node " +
                    std::to_string(place.node) + " but there are " +
                    std::to_string(file.nodes.size()) + " nodes");
      }
      file.placements[static_cast<std::size_t>(rank)] = std::move(place);
    }
    std::vector<std::vector<int>> derived(file.nodes.size());
    for (std::size_t rank = 0; rank < file.placements.size(); ++rank) {
      RankPlacement& place = file.placements[rank];
      auto& list = derived[static_cast<std::size_t>(place.node)];
      const int position = static_cast<int>(list.size());
      if (place.local_rank >= 0 && place.local_rank != position) {
        reader.fail("rank " + std::to_string(rank) + " says local_rank " +
                    std::to_string(place.local_rank) + " but is number " +
                    std::to_string(position) + " among node " + std::to_string(place.node) +
                    "'s ranks");
      }
      place.local_rank = position;
      list.push_back(static_cast<int>(rank));
    }
    for (std::size_t i = 0; i < file.nodes.size(); ++i) {
      if (any_ranks && file.nodes[i].ranks != derived[i]) {
        reader.fail("nodes[" + std::to_string(i) + "].ranks disagrees with the placements");
      }
      file.nodes[i].ranks = derived[i];
    }
  } else if (any_ranks) {
    // Rank lists only: placements follow from them.
    std::size_t total = 0;
    for (const Node& node : file.nodes) total += node.ranks.size();
    file.placements.assign(total, RankPlacement{-1, -1, "", 0});
    for (std::size_t i = 0; i < file.nodes.size(); ++i) {
      const auto& ranks = file.nodes[i].ranks;
      for (std::size_t position = 0; position < ranks.size(); ++position) {
        const int rank = ranks[position];
        if (rank < 0 || static_cast<std::size_t>(rank) >= total ||
            file.placements[static_cast<std::size_t>(rank)].node != -1) {
          reader.fail("the nodes' rank lists must name each rank 0.." + std::to_string(total - 1) +
                      " once (rank " + std::to_string(rank) + ")");
        }
        file.placements[static_cast<std::size_t>(rank)] =
            RankPlacement{static_cast<int>(i), static_cast<int>(position), "", 0};
      }
    }
  }
  return file;
}

std::string trimmed_copy(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return "";
  const auto last = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(first, last - first + 1));
}

}  // namespace

std::string node_to_json(const Node& node) {
  std::ostringstream out;
  out << "{\"host\": " << json::json_quote(node.host) << ", \"packages\": " << node.packages
      << ", \"numa_nodes\": " << node.numa_nodes << ", \"cores\": " << node.cores
      << ", \"processing_units\": " << node.processing_units
      << ", \"memory_bytes\": " << node.memory_bytes
      << ", \"l3_cache_bytes\": " << node.l3_cache_bytes
      << ", \"source\": " << json::json_quote(node.source)
      << ",\n     \"gpus\": " << devices_json(node.gpus)
      << ",\n     \"nics\": " << devices_json(node.nics) << ",\n     \"ranks\": [";
  for (std::size_t i = 0; i < node.ranks.size(); ++i) out << (i == 0 ? "" : ", ") << node.ranks[i];
  out << "]}";
  return out.str();
}

Node node_from_json(const json::Value& value, const std::string& where) {
  json::ObjectReader reader(value, where);
  Node node;
  node.host = reader.string("host", "");
  node.packages = static_cast<int>(reader.integer("packages", 1, 0, kMaxTopologyCount));
  node.numa_nodes = static_cast<int>(reader.integer("numa_nodes", 1, 0, kMaxTopologyCount));
  node.processing_units =
      static_cast<int>(reader.required_integer("processing_units", 1, kMaxTopologyCount));
  node.cores =
      static_cast<int>(reader.integer("cores", node.processing_units, 1, kMaxTopologyCount));
  node.memory_bytes = static_cast<std::uint64_t>(reader.integer("memory_bytes", 0, 0, INT64_MAX));
  node.l3_cache_bytes =
      static_cast<std::uint64_t>(reader.integer("l3_cache_bytes", 0, 0, INT64_MAX));
  node.source = reader.string("source", "");
  if (const json::Value* gpus = reader.array("gpus")) {
    for (std::size_t i = 0; i < gpus->items().size(); ++i) {
      node.gpus.push_back(
          gpu_from_json(gpus->items()[i], where + ".gpus[" + std::to_string(i) + "]"));
    }
  }
  if (const json::Value* nics = reader.array("nics")) {
    for (std::size_t i = 0; i < nics->items().size(); ++i) {
      node.nics.push_back(
          nic_from_json(nics->items()[i], where + ".nics[" + std::to_string(i) + "]"));
    }
  }
  if (const json::Value* ranks = reader.array("ranks")) {
    for (const json::Value& item : ranks->items()) {
      const std::optional<std::int64_t> rank = item.integer();
      if (!rank || *rank < 0 || *rank >= kMaxRanks) {
        reader.fail("\"ranks\" must hold rank numbers in [0, " + std::to_string(kMaxRanks) + ")");
      }
      node.ranks.push_back(static_cast<int>(*rank));
    }
  }
  reader.finish();
  return node;
}

std::string read_text_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InvalidArgumentError(what, -1, "cannot open " + path);
  std::string text;
  char buffer[65536];
  while (in.read(buffer, sizeof(buffer)) || in.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
    if (text.size() > json::kMaxDocumentBytes) {
      throw InvalidArgumentError(
          what, -1, path + " is larger than " + std::to_string(json::kMaxDocumentBytes) + " bytes");
    }
  }
  if (in.bad()) throw InvalidArgumentError(what, -1, "cannot read " + path);
  return text;
}

TopologyFile read_topology_text(std::string_view text, const std::string& origin) {
  const std::string content = trimmed_copy(text);
  if (content.empty()) throw InvalidArgumentError(origin, -1, "the topology description is empty");
  // hwloc reads a synthetic description as a C string: text past a NUL
  // would escape the size bound checked on the whole text (the fuzzer's
  // "34086\0...:" spent a minute in hwloc).
  if (const std::size_t nul = content.find('\0'); nul != std::string::npos) {
    throw InvalidArgumentError(origin, -1,
                               "the topology description holds a NUL byte at offset " +
                                   std::to_string(nul) + "; it is text");
  }
  if (content.front() == '{') return read_dump(content, origin);
  TopologyFile file;
  if (content.front() == '<') {
    file.format = "hwloc-xml";
    file.nodes.push_back(machine_from_hwloc_xml(content, origin));
  } else {
    if (content.find('\n') != std::string::npos) {
      throw InvalidArgumentError(origin, -1,
                                 "not a topology dump ('{'), hwloc XML ('<') or a one-line "
                                 "hwloc synthetic description");
    }
    file.format = "synthetic";
    file.nodes.push_back(machine_from_synthetic(content, origin));
  }
  return file;
}

}  // namespace collective::internal

namespace collective {

std::string Topology::to_json() const {
  std::ostringstream out;
  out << "{\"format\": \"collective-topology\", \"version\": 1,\n \"nodes\": [\n";
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    out << "    " << internal::node_to_json(nodes_[i]) << (i + 1 < nodes_.size() ? ",\n" : "\n");
  }
  out << " ],\n \"placements\": [\n";
  for (std::size_t rank = 0; rank < placements_.size(); ++rank) {
    const RankPlacement& place = placements_[rank];
    out << "    {\"rank\": " << rank << ", \"node\": " << place.node
        << ", \"local_rank\": " << place.local_rank
        << ", \"cpuset\": " << internal::json::json_quote(place.cpuset)
        << ", \"bound_processing_units\": " << place.bound_processing_units << "}"
        << (rank + 1 < placements_.size() ? ",\n" : "\n");
  }
  out << " ]}\n";
  return out.str();
}

Topology Topology::parse(std::string_view text, const std::string& origin, int nodes,
                         int ranks_per_node) {
  internal::TopologyFile file = internal::read_topology_text(text, origin);
  if (nodes < 0 || ranks_per_node < 0 || (nodes == 0) != (ranks_per_node == 0)) {
    throw InvalidArgumentError(origin, -1,
                               "nodes and ranks_per_node must both be positive, or both 0 to "
                               "use the file's own placement");
  }
  if (nodes == 0) {
    if (file.placements.empty()) {
      throw InvalidArgumentError(
          origin, -1,
          "this " + file.format + " description places no ranks: give nodes and ranks per node");
    }
    return from_parts(std::move(file.nodes), std::move(file.placements));
  }
  if (static_cast<long long>(nodes) * ranks_per_node > internal::kMaxRanks) {
    throw InvalidArgumentError(origin, -1,
                               "more than " + std::to_string(internal::kMaxRanks) + " ranks");
  }
  // The file's machines, one per node when it has as many, else its first
  // machine everywhere; block placement of ranks.
  const bool one_each = file.nodes.size() == static_cast<std::size_t>(nodes);
  std::vector<Node> built;
  std::vector<RankPlacement> placements;
  for (int n = 0; n < nodes; ++n) {
    Node node = file.nodes[one_each ? static_cast<std::size_t>(n) : 0];
    if (node.host.empty()) node.host = "node";
    if (!one_each && nodes > 1) node.host += "-" + std::to_string(n);
    node.ranks.clear();
    for (int local = 0; local < ranks_per_node; ++local) {
      node.ranks.push_back(n * ranks_per_node + local);
      placements.push_back(RankPlacement{n, local, "", 0});
    }
    built.push_back(std::move(node));
  }
  return from_parts(std::move(built), std::move(placements));
}

Topology Topology::load(const std::string& path, int nodes, int ranks_per_node) {
  return parse(internal::read_text_file(path, "Topology::load"), path, nodes, ranks_per_node);
}

}  // namespace collective
