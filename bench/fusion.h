// --fusion N: N tensors of each size all-reduced one by one, against the
// same tensors packed into one buffer, all-reduced once and unpacked (the
// packing of tf.distribute's batch_reduce and Horovod's tensor fusion),
// alternating iteration by iteration. Reports the ratio of median times.
#pragma once

#include <vector>

#include "driver.h"

namespace collective::bench {

class FusionDriver {
 public:
  explicit FusionDriver(BenchContext& context)
      : context_(context), injector_(context.options.inject_error) {}

  void run();
  const std::vector<FusionRow>& rows() const { return rows_; }

 private:
  FusionRow measure(std::size_t count, DataType type, ReduceOp op, Algorithm algorithm);

  BenchContext& context_;
  ErrorInjector injector_;
  std::vector<AlignedBuffer> tensors_;
  AlignedBuffer packed_;
  std::vector<FusionRow> rows_;
};

// Totals over fusion rows, as summarize_rows does for size rows.
RunSummary summarize_fusion_rows(const std::vector<FusionRow>& rows, const BenchOptions& options);

}  // namespace collective::bench
