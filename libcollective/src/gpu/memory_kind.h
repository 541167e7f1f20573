// Resolves where a call's buffers live (MemoryKind::kAuto) and checks a
// declared kind against what CUDA says, before any buffer is touched.
#pragma once

#include "collective/options.h"
#include "core/request.h"

namespace collective::internal::gpu {

// Returns kHost or kDevice for the request (whose `memory` holds the kind
// the caller declared). The rules (docs/gpu.md, "Device buffers"):
//  - a build without CUDA: every buffer is host memory; declaring kDevice
//    raises UnsupportedError;
//  - CUDA finds no device: every buffer is host memory; declaring kDevice
//    raises InvalidArgumentError with the reason CUDA gave;
//  - otherwise each buffer the call reads or writes is located with
//    cudaPointerGetAttributes: send and recv must both be host memory or
//    both device memory on one device, and must agree with a declared
//    kind; anything else raises InvalidArgumentError naming the buffer.
MemoryKind resolve_memory_kind(const Request& request, int rank);

}  // namespace collective::internal::gpu
