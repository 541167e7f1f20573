#include "topology/machine_probe.h"

#include <hwloc.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>

#include "collective/errors.h"
#include "core/log.h"
#include "topology/link_speed.h"

namespace collective::internal {
namespace {

// Owns an hwloc topology; destroyed on every path.
struct HwlocTopology {
  hwloc_topology_t handle = nullptr;
  HwlocTopology() {
    if (hwloc_topology_init(&handle) != 0) handle = nullptr;
  }
  ~HwlocTopology() {
    if (handle != nullptr) hwloc_topology_destroy(handle);
  }
  HwlocTopology(const HwlocTopology&) = delete;
  HwlocTopology& operator=(const HwlocTopology&) = delete;
};

struct BitmapOwner {
  hwloc_bitmap_t bitmap = hwloc_bitmap_alloc();
  ~BitmapOwner() { hwloc_bitmap_free(bitmap); }
};

std::string bitmap_list(hwloc_const_bitmap_t bitmap) {
  char* text = nullptr;
  if (hwloc_bitmap_list_asprintf(&text, bitmap) < 0 || text == nullptr) return "";
  std::string result(text);
  std::free(text);
  return result;
}

int count_of(hwloc_topology_t topology, hwloc_obj_type_t type) {
  const int count = hwloc_get_nbobjs_by_type(topology, type);
  return count < 0 ? 0 : count;
}

// The logical index of the NUMA node nearest to an I/O object.
int numa_of(hwloc_topology_t topology, hwloc_obj_t io_object) {
  hwloc_obj_t ancestor = hwloc_get_non_io_ancestor_obj(topology, io_object);
  if (ancestor == nullptr || ancestor->nodeset == nullptr) return -1;
  const int os_index = hwloc_bitmap_first(ancestor->nodeset);
  if (os_index < 0) return -1;
  // A device under the machine itself is local to every node: unknown.
  if (hwloc_bitmap_weight(ancestor->nodeset) != 1) return -1;
  hwloc_obj_t numa = hwloc_get_numanode_obj_by_os_index(topology, static_cast<unsigned>(os_index));
  return numa == nullptr ? -1 : static_cast<int>(numa->logical_index);
}

const char* info_or_empty(hwloc_obj_t object, const char* name) {
  const char* value = hwloc_obj_get_info_by_name(object, name);
  return value == nullptr ? "" : value;
}

std::string pci_bus_id(hwloc_obj_t pci) {
  char text[32];
  std::snprintf(text, sizeof(text), "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain,
                pci->attr->pcidev.bus, pci->attr->pcidev.dev, pci->attr->pcidev.func);
  return text;
}

bool is_nvidia_gpu(hwloc_obj_t pci) {
  const unsigned base_class = pci->attr->pcidev.class_id >> 8;
  return pci->attr->pcidev.vendor_id == 0x10de && base_class == 0x03;  // display controller
}

// The best name for a GPU among its OS devices: CUDA first, then NVML.
void name_gpu(hwloc_obj_t pci, GpuDevice& gpu) {
  std::string cuda;
  std::string nvml;
  std::string other;
  for (hwloc_obj_t child = pci->io_first_child; child != nullptr; child = child->next_sibling) {
    if (child->type != HWLOC_OBJ_OS_DEVICE || child->name == nullptr) continue;
    const std::string name = child->name;
    if (name.rfind("cuda", 0) == 0) cuda = name;
    else if (name.rfind("nvml", 0) == 0) nvml = name;
    else if (other.empty()) other = name;
    if (gpu.model.empty()) gpu.model = info_or_empty(child, "GPUModel");
  }
  gpu.name = !cuda.empty()    ? cuda
             : !nvml.empty()  ? nvml
             : !other.empty() ? other
                              : "pci " + gpu.pci_bus_id;
  if (gpu.model.empty()) gpu.model = info_or_empty(pci, "PCIDevice");
}

Node describe(hwloc_topology_t topology, std::string host, std::string source) {
  Node node;
  hwloc_obj_t root = hwloc_get_root_obj(topology);
  node.host = std::move(host);
  if (node.host.empty()) node.host = info_or_empty(root, "HostName");
  node.source = std::move(source);
  node.packages = count_of(topology, HWLOC_OBJ_PACKAGE);
  node.numa_nodes = count_of(topology, HWLOC_OBJ_NUMANODE);
  node.cores = count_of(topology, HWLOC_OBJ_CORE);
  node.processing_units = count_of(topology, HWLOC_OBJ_PU);
  // Descriptions without these levels still have one of each.
  if (node.packages == 0) node.packages = 1;
  if (node.numa_nodes == 0) node.numa_nodes = 1;
  if (node.cores == 0) node.cores = node.processing_units;
  node.memory_bytes = root->total_memory;
  for (hwloc_obj_type_t cache : {HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L2CACHE}) {
    for (int i = 0; i < count_of(topology, cache); ++i) {
      hwloc_obj_t object = hwloc_get_obj_by_type(topology, cache, static_cast<unsigned>(i));
      if (object != nullptr && object->attr->cache.size > node.l3_cache_bytes) {
        node.l3_cache_bytes = object->attr->cache.size;
      }
    }
    if (node.l3_cache_bytes != 0) break;
  }

  for (hwloc_obj_t pci = hwloc_get_next_pcidev(topology, nullptr); pci != nullptr;
       pci = hwloc_get_next_pcidev(topology, pci)) {
    if (!is_nvidia_gpu(pci)) continue;
    GpuDevice gpu;
    gpu.pci_bus_id = pci_bus_id(pci);
    gpu.numa_node = numa_of(topology, pci);
    name_gpu(pci, gpu);
    node.gpus.push_back(std::move(gpu));
  }
  for (hwloc_obj_t os = hwloc_get_next_osdev(topology, nullptr); os != nullptr;
       os = hwloc_get_next_osdev(topology, os)) {
    const auto type = os->attr->osdev.type;
    if (type != HWLOC_OBJ_OSDEV_NETWORK && type != HWLOC_OBJ_OSDEV_OPENFABRICS) continue;
    NetworkDevice nic;
    nic.name = os->name == nullptr ? "" : os->name;
    // IP over InfiniBand shows up as a network interface named ib*.
    nic.kind = type == HWLOC_OBJ_OSDEV_OPENFABRICS ? "openfabrics"
               : nic.name.rfind("ib", 0) == 0      ? "ipoib"
                                                   : "ethernet";
    if (os->parent != nullptr && os->parent->type == HWLOC_OBJ_PCI_DEVICE) {
      nic.pci_bus_id = pci_bus_id(os->parent);
    }
    nic.numa_node = numa_of(topology, os);
    node.nics.push_back(std::move(nic));
  }
  return node;
}

std::string local_host_name() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) return "unknown";
  return host;
}

// When hwloc cannot describe this machine: what sysconf knows, said loudly.
Node fallback_machine(const std::string& why) {
  COLLECTIVE_LOG(kWarn, "hwloc could not describe this machine ("
                            << why
                            << "); using sysconf's processor count, one package, one NUMA node");
  Node node;
  node.host = local_host_name();
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  node.processing_units = online > 0 ? static_cast<int>(online) : 1;
  node.cores = node.processing_units;
  node.packages = 1;
  node.numa_nodes = 1;
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0) {
    node.memory_bytes = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
  }
  node.source = "sysconf (hwloc failed: " + why + ")";
  return node;
}

struct CachedMachine {
  std::once_flag once;
  Node machine;
  bool from_hwloc = false;
};

CachedMachine& cached_machine() {
  static CachedMachine cache;
  return cache;
}

void load_this_machine(CachedMachine& cache) {
  HwlocTopology topology;
  if (topology.handle == nullptr) {
    cache.machine = fallback_machine("hwloc_topology_init failed");
    return;
  }
  // GPUs and NICs are I/O objects, dropped by default.
  hwloc_topology_set_io_types_filter(topology.handle, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(topology.handle) != 0) {
    cache.machine = fallback_machine(std::string("hwloc_topology_load: ") + std::strerror(errno));
    return;
  }
  cache.machine = describe(topology.handle, local_host_name(), "hwloc");
  // hwloc knows no link speeds; the kernel does, for this machine only
  // (descriptions from XML or synthetic text keep 0: unknown).
  read_link_speeds("/sys", cache.machine);
  cache.from_hwloc = true;
}

// This process's binding, from the OS (not from the cached description).
void read_binding(MachineProbe& probe) {
  HwlocTopology topology;
  if (topology.handle == nullptr) return;
  // The binding needs only the processors: skip I/O and caches.
  hwloc_topology_set_all_types_filter(topology.handle, HWLOC_TYPE_FILTER_KEEP_NONE);
  hwloc_topology_set_type_filter(topology.handle, HWLOC_OBJ_PU, HWLOC_TYPE_FILTER_KEEP_ALL);
  if (hwloc_topology_load(topology.handle) != 0) return;
  BitmapOwner bound;
  if (hwloc_get_cpubind(topology.handle, bound.bitmap, HWLOC_CPUBIND_PROCESS) != 0) return;
  hwloc_const_cpuset_t whole = hwloc_topology_get_allowed_cpuset(topology.handle);
  if (hwloc_bitmap_isincluded(whole, bound.bitmap)) return;  // unbound
  probe.cpuset = bitmap_list(bound.bitmap);
  probe.bound_processing_units = hwloc_bitmap_weight(bound.bitmap);
}

}  // namespace

MachineProbe probe_this_machine() {
  CachedMachine& cache = cached_machine();
  std::call_once(cache.once, [&] { load_this_machine(cache); });
  MachineProbe probe;
  probe.machine = cache.machine;
  if (cache.from_hwloc) read_binding(probe);
  return probe;
}

Node machine_from_hwloc_xml(const std::string& xml, const std::string& origin) {
  HwlocTopology topology;
  if (topology.handle == nullptr) {
    throw InvalidArgumentError(origin, -1, "hwloc_topology_init failed");
  }
  hwloc_topology_set_io_types_filter(topology.handle, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  // hwloc reads the length given, so the text needs no terminator; it wants
  // the terminator counted when there is one.
  if (xml.size() > static_cast<std::size_t>(INT32_MAX) - 1 ||
      hwloc_topology_set_xmlbuffer(topology.handle, xml.c_str(),
                                   static_cast<int>(xml.size()) + 1) != 0 ||
      hwloc_topology_load(topology.handle) != 0) {
    throw InvalidArgumentError(
        origin, -1,
        "hwloc could not load this XML topology (hwloc " + std::string(HWLOC_VERSION) + ")");
  }
  return describe(topology.handle, "", "hwloc-xml " + origin);
}

// hwloc builds every object a synthetic description names, in time that
// grows faster than their number: bound the product of the level counts
// before asking it. A level is "type:N" or a bare arity "N" (hwloc accepts
// both); "(...)" attributes such as l3:1(size=32MB) are not counts. 4096
// processing units is 8x the largest nodes sold today; a typo such as
// core:16000000, or a bare "34086" (found by the fuzzer: over a minute in
// hwloc), is refused at once.
void check_synthetic_size(const std::string& description, const std::string& origin) {
  constexpr unsigned long long kMaxObjects = 4096;
  unsigned long long product = 1;
  std::size_t at = 0;
  while (at < description.size()) {
    // One whitespace-separated level, its attributes left out.
    while (at < description.size() && std::isspace(static_cast<unsigned char>(description[at])))
      ++at;
    std::size_t end = at;
    int depth = 0;
    std::string level;
    while (end < description.size() &&
           (depth > 0 || !std::isspace(static_cast<unsigned char>(description[end])))) {
      const char c = description[end++];
      if (c == '(') ++depth;
      if (depth == 0) level += c;
      if (c == ')' && depth > 0) --depth;
    }
    at = end;
    const std::size_t colon = level.rfind(':');
    const std::size_t first = colon == std::string::npos ? 0 : colon + 1;
    unsigned long long count = 0;
    bool digits = false;
    for (std::size_t k = first; k < level.size() && level[k] >= '0' && level[k] <= '9'; ++k) {
      count = count * 10 + static_cast<unsigned long long>(level[k] - '0');
      digits = true;
      if (count > kMaxObjects) break;
    }
    if (!digits) continue;
    product *= count == 0 ? 1 : count;
    if (count > kMaxObjects || product > kMaxObjects) {
      throw InvalidArgumentError(origin, -1,
                                 "synthetic topology \"" + description + "\" has more than " +
                                     std::to_string(kMaxObjects) + " processing units");
    }
  }
}

Node machine_from_synthetic(const std::string& description, const std::string& origin) {
  check_synthetic_size(description, origin);
  HwlocTopology topology;
  if (topology.handle == nullptr) {
    throw InvalidArgumentError(origin, -1, "hwloc_topology_init failed");
  }
  if (hwloc_topology_set_synthetic(topology.handle, description.c_str()) != 0 ||
      hwloc_topology_load(topology.handle) != 0) {
    throw InvalidArgumentError(origin, -1,
                               "hwloc does not accept \"" + description +
                                   "\" as a synthetic topology (e.g. \"package:2 core:8 pu:2\")");
  }
  Node node = describe(topology.handle, "", "synthetic " + description);
  if (node.host.empty()) node.host = "synthetic";
  return node;
}

}  // namespace collective::internal
