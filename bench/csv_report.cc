// CSV: a header line naming the columns, then one line per row; empty
// cells where a column does not apply. No comment lines, so any CSV reader
// takes it as it is.
#include <sstream>

#include "report.h"
#include "row_fields.h"

namespace collective::bench {
namespace {

std::string cell(const FieldValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return "";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return v;  // names only: no commas or quotes
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else {
          std::ostringstream text;
          text.precision(9);
          text << v;
          return text.str();
        }
      },
      value);
}

class CsvReporter final : public Reporter {
 public:
  explicit CsvReporter(std::ostream& out) : out_(out) {}

  void begin(const RunInfo& info, const BenchOptions& options) override {
    (void)options;
    ranks_ = info.ranks;
    nodes_ = info.nodes;
    for (const std::string& column : csv_columns()) out_ << column << ",";
    out_ << "ranks,nodes\n";
  }

  void row(const SizeRow& row) override {
    for (const auto& record : flatten(row)) write(record);
  }

  void fusion_row(const FusionRow& row) override { write(flatten(row)); }

  void note(const std::string& text) override { (void)text; }

  void end(const RunSummary& summary) override {
    (void)summary;
    out_.flush();
  }

 private:
  void write(const std::vector<Field>& fields) {
    for (const std::string& column : csv_columns()) {
      for (const Field& field : fields) {
        if (field.name == column) {
          out_ << cell(field.value);
          break;
        }
      }
      out_ << ",";
    }
    out_ << ranks_ << "," << nodes_ << "\n";
    out_.flush();
  }

  std::ostream& out_;
  int ranks_ = 1;
  int nodes_ = 1;
};

}  // namespace

std::unique_ptr<Reporter> make_csv_reporter(std::ostream& out) {
  return std::make_unique<CsvReporter>(out);
}

}  // namespace collective::bench
