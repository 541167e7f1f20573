#include "kernels/streaming_copy.h"

#include <cstring>

#if defined(__SSE2__)
#include "kernels/vector_copy_loop.h"
#endif

namespace collective::internal {

void streaming_copy(void* dst, const void* src, std::size_t bytes) {
#if defined(__SSE2__)
  vector_copy_loop<true>(static_cast<std::byte*>(dst), static_cast<const std::byte*>(src), bytes);
  _mm_sfence();
#else
  std::memcpy(dst, src, bytes);
#endif
}

}  // namespace collective::internal
