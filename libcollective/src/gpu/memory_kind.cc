#include "gpu/memory_kind.h"

#include <string>

#include "collective/errors.h"
#include "collective/in_tree/collectives.h"
#include "gpu/device_runtime.h"

namespace collective::internal::gpu {
namespace {

struct Buffer {
  const char* name = "";
  const void* pointer = nullptr;
  PointerLocation location;
};

std::string describe(const Buffer& buffer) {
  if (!buffer.location.on_device) return std::string(buffer.name) + " buffer is host memory";
  return std::string(buffer.name) + " buffer is CUDA device memory (device " +
         std::to_string(buffer.location.device) + ")";
}

const char* declared_name(MemoryKind kind) {
  return kind == MemoryKind::kDevice ? "MemoryKind::kDevice" : "MemoryKind::kHost";
}

}  // namespace

MemoryKind resolve_memory_kind(const Request& request, int rank) {
  const MemoryKind declared = request.memory;
  if (!cuda_built_in()) {
    if (declared == MemoryKind::kDevice) {
      throw UnsupportedError(request.label(), rank,
                             "the buffers are declared MemoryKind::kDevice, but " +
                                 device_count().reason + "; device buffers need the NCCL path");
    }
    return MemoryKind::kHost;
  }
  if (device_count().count == 0) {
    if (declared == MemoryKind::kDevice) {
      throw InvalidArgumentError(request.label(), rank,
                                 "the buffers are declared MemoryKind::kDevice, but CUDA finds no "
                                 "device (" +
                                     device_count().reason + ")");
    }
    return MemoryKind::kHost;
  }

  // The buffers this rank's part of the call touches. A reduce's recv is
  // ignored off the root; a broadcast has one buffer.
  Buffer buffers[2];
  int used = 0;
  const CollectiveTraits& traits = traits_of(request.kind);
  const bool vector = traits.geometry == CollectiveGeometry::kVector;
  if ((request.count > 0 || vector) && traits.geometry != CollectiveGeometry::kNone) {
    const bool root = !traits.rooted || rank == request.root;
    auto used_here = [&](BufferUse use) {
      return use == BufferUse::kEveryRank || (use == BufferUse::kRootOnly && root);
    };
    if (used_here(traits.send_use) && request.send != nullptr) {
      buffers[used++] = Buffer{"send", request.send, locate(request.send)};
    }
    if (used_here(traits.recv_use) && request.recv != nullptr) {
      buffers[used++] = Buffer{request.kind == CollectiveKind::kBroadcast ? "broadcast" : "recv",
                               request.recv, locate(request.recv)};
    }
  }
  if (used == 0) return declared == MemoryKind::kAuto ? MemoryKind::kHost : declared;

  if (used == 2) {
    const PointerLocation& a = buffers[0].location;
    const PointerLocation& b = buffers[1].location;
    if (a.on_device != b.on_device) {
      throw InvalidArgumentError(request.label(), rank,
                                 describe(buffers[0]) + " but " + describe(buffers[1]) +
                                     ": both must live in the same kind of memory");
    }
    if (a.on_device && a.device != b.device) {
      throw InvalidArgumentError(request.label(), rank,
                                 describe(buffers[0]) + " but " + describe(buffers[1]) +
                                     ": both must be on the same device");
    }
  }
  const MemoryKind found = buffers[0].location.on_device ? MemoryKind::kDevice : MemoryKind::kHost;
  if (declared != MemoryKind::kAuto && declared != found) {
    throw InvalidArgumentError(request.label(), rank,
                               std::string("the buffers are declared ") + declared_name(declared) +
                                   " but the " + describe(buffers[0]));
  }
  return found;
}

}  // namespace collective::internal::gpu
