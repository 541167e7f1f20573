// JSON: {"header": {...the run...}, "rows": [one object per row], "summary":
// {...}}. Rows are written as they come, so a long sweep that dies still
// leaves the rows it measured (the file is then not closed).
#include "json_writer.h"
#include "report.h"
#include "row_fields.h"
#include "speedup_summary.h"

namespace collective::bench {
namespace {

void write_value(JsonWriter& json, const FieldValue& value) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          json.null();
        } else {
          json.value(v);
        }
      },
      value);
}

void write_record(JsonWriter& json, const std::vector<Field>& fields) {
  json.begin_object();
  for (const Field& field : fields) {
    json.key(field.name);
    write_value(json, field.value);
  }
  json.end_object();
}

// {"median", "worst" and where the worst was measured, in the rows' field
// names}, or null without a baseline or without such rows.
void write_speedup(JsonWriter& json, std::string_view name,
                   const std::optional<SpeedupSummary>& speedup) {
  json.key(name);
  if (!speedup) {
    json.null();
    return;
  }
  json.begin_object();
  json.field("measured", static_cast<std::uint64_t>(speedup->measured));
  json.field("median", speedup->median);
  json.field("worst", speedup->worst);
  json.field("worst_collective", to_string(speedup->worst_collective));
  json.field("worst_bytes", static_cast<std::uint64_t>(speedup->worst_bytes));
  json.field("worst_dtype", to_string(speedup->worst_type));
  json.field("worst_op", op_name(speedup->worst_op));
  json.field("worst_inplace", speedup->worst_in_place);
  json.field("worst_algorithm", to_string(speedup->worst_algorithm));
  json.end_object();
}

class JsonReporter final : public Reporter {
 public:
  explicit JsonReporter(std::ostream& out) : out_(out), json_(out) {}

  void begin(const RunInfo& info, const BenchOptions& options) override {
    json_.begin_object();
    json_.key("header");
    json_.begin_object();
    json_.field("tool", "collective_bench");
    json_.field("version", info.version);
    json_.field("git_revision", info.git_revision);
    json_.field("with_nccl", info.with_nccl);
    json_.field("mpi_library", info.mpi_library);
    json_.key("environment");
    json_.begin_object();
    for (const auto& [name, value] : info.environment) json_.field(name, value);
    json_.end_object();
    json_.field("started_utc", info.started_utc);
    json_.field("command_line", info.command_line);
    json_.field("ranks", info.ranks);
    json_.field("nodes", info.nodes);
    json_.field("min_ranks_per_node", info.min_ranks_per_node);
    json_.field("max_ranks_per_node", info.max_ranks_per_node);
    json_.field("min_bytes", static_cast<std::uint64_t>(options.min_bytes));
    json_.field("max_bytes", static_cast<std::uint64_t>(options.max_bytes));
    json_.field("step_factor", static_cast<std::uint64_t>(options.step_factor));
    json_.field("step_bytes", static_cast<std::uint64_t>(options.step_bytes));
    json_.field("iters", options.iters);
    json_.field("warmup_iters", options.warmup_iters);
    json_.field("check", options.check);
    json_.field("deterministic", options.deterministic);
    json_.field("baseline", options.baseline_mpi ? "mpi" : "none");
    json_.field("fusion_tensors", static_cast<std::uint64_t>(options.fusion_tensors));
    json_.field("fusion_bytes_per_pack", static_cast<std::uint64_t>(options.fusion_bytes_per_pack));
    json_.field("time", "slowest rank per iteration; time_us is the mean over iterations");
    json_.field("gb", 1e9);
    json_.key("placements");
    json_.begin_array();
    for (const RankPlacement& p : info.placements) {
      json_.begin_object();
      json_.field("rank", p.rank);
      json_.field("node", p.node);
      json_.field("local_rank", p.local_rank);
      json_.field("host", p.host);
      json_.field("pid", static_cast<std::int64_t>(p.pid));
      json_.field("cpus", p.cpus);
      json_.field("online_cpus", p.online_cpus);
      json_.end_object();
    }
    json_.end_array();
    json_.end_object();
    json_.key("rows");
    json_.begin_array();
    out_.flush();
  }

  void row(const SizeRow& row) override {
    for (const auto& record : flatten(row)) write_record(json_, record);
    out_.flush();
  }

  void fusion_row(const FusionRow& row) override {
    write_record(json_, flatten(row));
    out_.flush();
  }

  void note(const std::string& text) override { (void)text; }

  void end(const RunSummary& summary) override {
    json_.end_array();
    json_.key("summary");
    json_.begin_object();
    json_.field("wrong", summary.wrong);
    json_.field("ok", summary.wrong == 0 && summary.busbw_ok);
    json_.field("avg_busbw_gbs", summary.avg_busbw_gbs);
    json_.key("avg_baseline_busbw_gbs");
    summary.avg_baseline_busbw_gbs ? json_.value(*summary.avg_baseline_busbw_gbs) : json_.null();
    write_speedup(json_, "auto_speedup", summary.auto_speedup);
    write_speedup(json_, "forced_speedup", summary.forced_speedup);
    json_.key("min_busbw_gbs");
    summary.min_busbw_gbs ? json_.value(*summary.min_busbw_gbs) : json_.null();
    json_.key("rules_file");
    summary.rules_file ? json_.value(*summary.rules_file) : json_.null();
    json_.end_object();
    json_.end_object();
    out_.flush();
  }

 private:
  std::ostream& out_;
  JsonWriter json_;
};

}  // namespace

std::unique_ptr<Reporter> make_json_reporter(std::ostream& out) {
  return std::make_unique<JsonReporter>(out);
}

}  // namespace collective::bench
