#include "report.h"

namespace collective::bench {

void ReporterGroup::begin(const RunInfo& info, const BenchOptions& options) {
  for (auto& reporter : reporters_) reporter->begin(info, options);
}
void ReporterGroup::row(const SizeRow& row) {
  for (auto& reporter : reporters_) reporter->row(row);
}
void ReporterGroup::fusion_row(const FusionRow& row) {
  for (auto& reporter : reporters_) reporter->fusion_row(row);
}
void ReporterGroup::note(const std::string& text) {
  for (auto& reporter : reporters_) reporter->note(text);
}
void ReporterGroup::end(const RunSummary& summary) {
  for (auto& reporter : reporters_) reporter->end(summary);
}

std::unique_ptr<Reporter> make_reporter(OutputFormat format, std::ostream& out) {
  switch (format) {
    case OutputFormat::kTable: return make_table_reporter(out);
    case OutputFormat::kCsv: return make_csv_reporter(out);
    case OutputFormat::kJson: return make_json_reporter(out);
  }
  return make_table_reporter(out);
}

std::string op_name(const std::optional<ReduceOp>& op) {
  return op ? std::string(to_string(*op)) : std::string("none");
}

std::string algorithm_label(Algorithm requested, Algorithm ran) {
  if (requested == Algorithm::kAuto) return "auto:" + std::string(to_string(ran));
  return std::string(to_string(ran));
}

}  // namespace collective::bench
