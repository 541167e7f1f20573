// Copies whose destination the caller will not read soon: non-temporal
// stores write it to memory directly instead of first reading every line
// into the cache (which a plain copy does), a third less memory traffic for
// buffers larger than the cache.
#pragma once

#include <cstddef>

namespace collective::internal {

// memcpy with non-temporal stores where the processor has them (SSE2 on
// x86-64), plain memcpy elsewhere. No overlap. Ends with a store fence, so
// the data is visible before any flag the caller publishes afterwards.
void streaming_copy(void* dst, const void* src, std::size_t bytes);

}  // namespace collective::internal
