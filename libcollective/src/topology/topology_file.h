// Reading and writing topology descriptions: the library's JSON dump
// (COLLECTIVE_TOPOLOGY_DUMP), hwloc XML and hwloc synthetic descriptions
// (any of them as COLLECTIVE_TOPOLOGY_FILE). The format is in
// docs/topology.md.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "collective/topology.h"
#include "util/json.h"

namespace collective::internal {

// What a file describes: machines, and where ranks run when it says so.
struct TopologyFile {
  std::vector<Node> nodes;                // at least one
  std::vector<RankPlacement> placements;  // empty when the file places no ranks
  std::string format;                     // "dump", "hwloc-xml" or "synthetic"
};

// Detects the format from the content: '{' a dump, '<' hwloc XML, anything
// else an hwloc synthetic description. Errors name `origin`.
TopologyFile read_topology_text(std::string_view text, const std::string& origin);

// The whole file at `path` (bounded by json::kMaxDocumentBytes).
std::string read_text_file(const std::string& path, const char* what);

// One node's hardware (and its rank list) as a JSON object, and back.
std::string node_to_json(const Node& node);
Node node_from_json(const json::Value& value, const std::string& where);

}  // namespace collective::internal
