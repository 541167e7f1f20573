// Where results go: the nccl-tests table, CSV or JSON. Only rank 0 reports.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "bench_options.h"
#include "results.h"
#include "run_info.h"

namespace collective::bench {

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void begin(const RunInfo& info, const BenchOptions& options) = 0;
  virtual void row(const SizeRow& row) = 0;
  virtual void fusion_row(const FusionRow& row) = 0;
  // A line of commentary (a table comment; ignored by CSV and JSON).
  virtual void note(const std::string& text) = 0;
  virtual void end(const RunSummary& summary) = 0;
};

std::unique_ptr<Reporter> make_table_reporter(std::ostream& out);
std::unique_ptr<Reporter> make_csv_reporter(std::ostream& out);
std::unique_ptr<Reporter> make_json_reporter(std::ostream& out);
std::unique_ptr<Reporter> make_reporter(OutputFormat format, std::ostream& out);

// Sends everything to several reporters (table on stdout, JSON to a file).
class ReporterGroup final : public Reporter {
 public:
  void add(std::unique_ptr<Reporter> reporter) { reporters_.push_back(std::move(reporter)); }
  void begin(const RunInfo& info, const BenchOptions& options) override;
  void row(const SizeRow& row) override;
  void fusion_row(const FusionRow& row) override;
  void note(const std::string& text) override;
  void end(const RunSummary& summary) override;

 private:
  std::vector<std::unique_ptr<Reporter>> reporters_;
};

// Shared wording: "none" for a missing op, "auto:ring" for what AUTO ran.
std::string op_name(const std::optional<ReduceOp>& op);
std::string algorithm_label(Algorithm requested, Algorithm ran);

}  // namespace collective::bench
