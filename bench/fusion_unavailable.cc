// --fusion in a build without the strategies layer: the mode measures that
// layer's batch_reduce, so there is nothing to measure. Refused by rule
// rather than measured with other packing code, which would report numbers
// no user of this build can get.
#include "fusion.h"

namespace collective::bench {

RunSummary run_fusion(BenchContext&) {
  throw BenchError(
      "--fusion measures the strategies layer's batch_reduce, and this build has no strategies "
      "layer (configured with COLLECTIVE_BUILD_STRATEGIES=OFF); rebuild with it ON");
}

}  // namespace collective::bench
