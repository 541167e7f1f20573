#include "row_fields.h"

#include "report.h"

namespace collective::bench {
namespace {

void add(std::vector<Field>& fields, std::string name, FieldValue value) {
  fields.push_back(Field{std::move(name), std::move(value)});
}

void add_time(std::vector<Field>& fields, const std::string& prefix, const TimeStats& time) {
  add(fields, prefix + "time_us", time.mean_us);
  add(fields, prefix + "p50_us", time.p50_us);
  add(fields, prefix + "p99_us", time.p99_us);
}

}  // namespace

std::vector<std::vector<Field>> flatten(const SizeRow& row) {
  std::vector<std::vector<Field>> records;
  for (const PlacementResult* p : {&row.out_of_place, &row.in_place}) {
    if (!p->measured) continue;
    std::vector<Field> fields;
    add(fields, "mode", std::string("collective"));
    add(fields, "collective", std::string(to_string(row.collective)));
    add(fields, "bytes", static_cast<std::uint64_t>(row.bytes));
    add(fields, "count", static_cast<std::uint64_t>(row.count));
    add(fields, "dtype", std::string(to_string(row.type)));
    add(fields, "op", op_name(row.op));
    add(fields, "root", static_cast<std::int64_t>(row.root));
    add(fields, "requested", std::string(to_string(row.requested)));
    add(fields, "algorithm", std::string(to_string(p->algorithm)));
    add(fields, "inplace", p->in_place);
    add_time(fields, "", p->time);
    add(fields, "algbw_gbs", p->algbw_gbs);
    add(fields, "busbw_gbs", p->busbw_gbs);
    add(fields, "checked", p->checked);
    add(fields, "wrong", p->checked ? FieldValue(p->wrong) : FieldValue());
    if (p->baseline) {
      add_time(fields, "baseline_", p->baseline->time);
      add(fields, "baseline_algbw_gbs", p->baseline->algbw_gbs);
      add(fields, "baseline_busbw_gbs", p->baseline->busbw_gbs);
      add(fields, "baseline_wrong", p->checked ? FieldValue(p->baseline->wrong) : FieldValue());
      add(fields, "speedup", p->baseline->speedup);
    }
    records.push_back(std::move(fields));
  }
  return records;
}

std::vector<Field> flatten(const FusionRow& row) {
  std::vector<Field> fields;
  add(fields, "mode", std::string("fusion"));
  add(fields, "collective", std::string("all_reduce"));
  add(fields, "bytes", static_cast<std::uint64_t>(row.tensor_bytes));
  add(fields, "count", static_cast<std::uint64_t>(row.count));
  add(fields, "dtype", std::string(to_string(row.type)));
  add(fields, "op", std::string(to_string(row.op)));
  add(fields, "root", std::int64_t{-1});
  add(fields, "requested", std::string(to_string(row.requested)));
  add(fields, "algorithm", algorithm_name(row.fused_algorithm));
  add(fields, "inplace", true);
  add_time(fields, "", row.fused);
  add(fields, "algbw_gbs", row.algbw_gbs);
  add(fields, "busbw_gbs", row.busbw_gbs);
  add(fields, "checked", row.checked);
  add(fields, "wrong", row.checked ? FieldValue(row.wrong) : FieldValue());
  add(fields, "tensors", static_cast<std::uint64_t>(row.tensors));
  add(fields, "bytes_per_pack", static_cast<std::uint64_t>(row.bytes_per_pack));
  add(fields, "packs", static_cast<std::uint64_t>(row.packs));
  add(fields, "separate_algorithm", algorithm_name(row.separate_algorithm));
  add_time(fields, "separate_", row.separate);
  add(fields, "speedup", row.speedup);
  return fields;
}

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> kColumns = {"mode",
                                                    "collective",
                                                    "bytes",
                                                    "count",
                                                    "dtype",
                                                    "op",
                                                    "root",
                                                    "requested",
                                                    "algorithm",
                                                    "inplace",
                                                    "time_us",
                                                    "p50_us",
                                                    "p99_us",
                                                    "algbw_gbs",
                                                    "busbw_gbs",
                                                    "checked",
                                                    "wrong",
                                                    "baseline_time_us",
                                                    "baseline_p50_us",
                                                    "baseline_p99_us",
                                                    "baseline_algbw_gbs",
                                                    "baseline_busbw_gbs",
                                                    "baseline_wrong",
                                                    "speedup",
                                                    "tensors",
                                                    "bytes_per_pack",
                                                    "packs",
                                                    "separate_algorithm",
                                                    "separate_time_us",
                                                    "separate_p50_us",
                                                    "separate_p99_us"};
  return kColumns;
}

}  // namespace collective::bench
