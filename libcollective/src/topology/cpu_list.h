// How many processors a set of bindings covers together. A binding is a
// CPU list as the topology keeps it ("0-3,8", hwloc's list format): the
// ranks of a node that are each bound to a few processors time-share the
// union of their lists, whatever the machine's size (taskset, mpirun
// --cpu-set, a batch system's affinity).
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace collective::internal {

class CpuListUnion {
 public:
  // Adds one list; false (and nothing added) when it is not a CPU list.
  bool add(std::string_view list);
  // Processors in the union of the lists added.
  std::int64_t count() const;

 private:
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges_;  // [first, last]
};

}  // namespace collective::internal
