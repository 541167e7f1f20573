// One machine as hwloc sees it, reduced to the library's Node value: this
// process's machine (probed once per process), or one described by hwloc XML
// or an hwloc synthetic description (for machines we do not have).
#pragma once

#include <string>

#include "collective/topology.h"

namespace collective::internal {

struct MachineProbe {
  Node machine;        // hardware fields and host; ranks left empty
  std::string cpuset;  // this process's binding ("" when bound to the whole machine)
  int bound_processing_units = 0;
};

// This process's machine and binding. hwloc runs once per process (about
// 20 ms with I/O discovery); later calls return the cached result, except
// for the binding, which is read again (a process may rebind itself).
// Each NIC's link speed comes from sysfs (topology/link_speed.h).
// When hwloc fails, the machine is described from sysconf with a warning
// (host name, processors) and `machine.source` says so.
MachineProbe probe_this_machine();

// A machine from hwloc XML text (as lstopo --of xml writes it).
Node machine_from_hwloc_xml(const std::string& xml, const std::string& origin);

// A machine from an hwloc synthetic description ("package:2 core:8 pu:2").
Node machine_from_synthetic(const std::string& description, const std::string& origin);

}  // namespace collective::internal
