// --fusion N: what tensor fusion gains a user of the strategies layer. For
// each size, N tensors go through MultiWorkerMirroredStrategy's cross-device
// ops (CollectiveAllReduce, one replica per rank), reduced one by one with
// reduce() against all at once with batch_reduce(), which packs them into
// few all-reduces (CommunicationOptions::bytes_per_pack), alternating
// iteration by iteration. Reports the ratio of median times.
//
// Built from fusion.cc when the strategies layer is built, otherwise from
// fusion_unavailable.cc, which refuses the run.
#pragma once

#include "driver.h"

namespace collective::bench {

// Runs the fusion sweep of context.options (fusion_tensors > 0), reporting
// rows as they are measured, and returns the totals. Throws BenchError on
// every rank alike, before any call, when the run cannot go on (no
// strategies layer in this build, an algorithm that cannot serve a call).
RunSummary run_fusion(BenchContext& context);

}  // namespace collective::bench
