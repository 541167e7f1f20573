// A hint to the processor inside a spin loop (x86 PAUSE): saves power and
// lets a sibling hyper-thread run.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace collective::internal {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

}  // namespace collective::internal
