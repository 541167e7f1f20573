// The JSON writer, the rules file, the statistics and the CPU lists: the
// parts of the report that scripts and AUTO read.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "json_writer.h"
#include "rules_file.h"
#include "run_info.h"
#include "time_stats.h"

namespace collective::bench {
namespace {

TEST(JsonWriter, EscapesAndNests) {
  std::ostringstream out;
  JsonWriter json(out);
  json.begin_object();
  json.field("text", "a \"quoted\"\\ line\n\t\x01");
  json.field("count", std::uint64_t{18446744073709551615ull});
  json.field("negative", -3);
  json.field("ratio", 0.25);
  json.field("flag", false);
  json.key("missing");
  json.null();
  json.key("list");
  json.begin_array();
  json.value(1);
  json.begin_object();
  json.field("inner", std::numeric_limits<double>::quiet_NaN());
  json.end_object();
  json.end_array();
  json.end_object();
  EXPECT_EQ(out.str(),
            "{\n  \"text\": \"a \\\"quoted\\\"\\\\ line\\n\\t\\u0001\",\n"
            "  \"count\": 18446744073709551615,\n  \"negative\": -3,\n  \"ratio\": 0.25,\n"
            "  \"flag\": false,\n  \"missing\": null,\n  \"list\": [\n    1,\n"
            "    {\"inner\": null}\n  ]\n}\n");
}

TEST(JsonWriter, EmptyContainers) {
  std::ostringstream out;
  JsonWriter json(out);
  json.begin_object();
  json.key("rows");
  json.begin_array();
  json.end_array();
  json.end_object();
  EXPECT_EQ(out.str(), "{\n  \"rows\": []\n}\n");
}

SizeRow row(CollectiveKind kind, std::size_t count, std::size_t element, Algorithm algorithm,
            double p50_us) {
  SizeRow r;
  r.collective = kind;
  r.count = count;
  r.element_bytes = element;
  r.bytes = count * element;
  r.requested = algorithm;
  r.out_of_place.measured = true;
  r.out_of_place.time.p50_us = p50_us;
  r.in_place.measured = true;
  r.in_place.time.p50_us = p50_us;
  return r;
}

TEST(Rules, FastestPerSizeMergedIntoInclusiveRanges) {
  const auto ar = CollectiveKind::kAllReduce;
  const auto rd = Algorithm::kRecursiveDoubling;
  const auto ring = Algorithm::kRing;
  const auto mpi = Algorithm::kMpi;
  std::vector<SizeRow> rows = {
      row(ar, 2, 4, rd, 1.0),
      row(ar, 2, 4, ring, 3.0),
      row(ar, 2, 4, mpi, 2.0),
      row(ar, 256, 4, rd, 2.0),
      row(ar, 256, 4, ring, 4.0),
      row(ar, 256, 4, mpi, 2.5),
      row(ar, 4096, 4, rd, 9.0),
      row(ar, 4096, 4, ring, 5.0),
      row(ar, 4096, 4, mpi, 6.0),
      row(ar, 65536, 4, rd, 90.0),
      row(ar, 65536, 4, ring, 50.0),
      row(ar, 65536, 4, mpi, 60.0),
      // AUTO rows never make rules.
      row(ar, 65536, 4, Algorithm::kAuto, 1.0),
  };
  const auto rules = derive_rules(rows, 1, 2);
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].min_bytes, 0u);
  EXPECT_EQ(rules[0].max_bytes, 1024u);
  EXPECT_EQ(rules[0].algorithm, rd);
  EXPECT_EQ(rules[1].min_bytes, 1025u);
  EXPECT_EQ(rules[1].max_bytes, kUnboundedBytes);
  EXPECT_EQ(rules[1].algorithm, ring);
  EXPECT_EQ(rules[1].nodes, 1);
  EXPECT_EQ(rules[1].ranks_per_node, 2);
}

TEST(Rules, BlockBytesPerCollectiveAndTheAgreedFormat) {
  std::vector<SizeRow> rows = {
      row(CollectiveKind::kReduceScatter, 100, 2, Algorithm::kRing, 5.0),
      row(CollectiveKind::kReduceScatter, 100, 2, Algorithm::kMpi, 6.0),
      row(CollectiveKind::kBroadcast, 8, 8, Algorithm::kMpi, 1.0),
  };
  rows[0].bytes = 100 * 2 * 3;  // the whole input of 3 ranks, as reported
  const auto rules = derive_rules(rows, 2, std::nullopt);
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].collective, CollectiveKind::kReduceScatter);
  EXPECT_EQ(rules[0].max_bytes, kUnboundedBytes);
  std::ostringstream out;
  write_rules(out, rules);
  EXPECT_EQ(out.str(),
            "{\n  \"version\": 1,\n  \"rules\": [\n"
            "    {\"collective\": \"reduce_scatter\", \"nodes\": 2, \"min_bytes\": 0, "
            "\"max_bytes\": 9223372036854775807, \"algorithm\": \"ring\"},\n"
            "    {\"collective\": \"broadcast\", \"nodes\": 2, \"min_bytes\": 0, "
            "\"max_bytes\": 9223372036854775807, \"algorithm\": \"mpi\"}\n  ]\n}\n");
  // The library reads back exactly what the bench wrote (one rule, one format).
  EXPECT_EQ(parse_selection_rules(out.str(), "written"), rules);
  EXPECT_EQ(parse_selection_rules(format_selection_rules({}), "empty"), std::vector<Rule>{});
}

TEST(TimeStats, MeanAndNearestRankPercentiles) {
  std::vector<double> seconds;
  for (int i = 100; i >= 1; --i) seconds.push_back(i * 1e-6);
  const TimeStats stats = summarize(seconds);
  EXPECT_NEAR(stats.mean_us, 50.5, 1e-9);
  EXPECT_NEAR(stats.p50_us, 50.0, 1e-9);
  EXPECT_NEAR(stats.p99_us, 99.0, 1e-9);
  const TimeStats one = summarize({3e-6});
  EXPECT_NEAR(one.p50_us, 3.0, 1e-12);
  EXPECT_NEAR(one.p99_us, 3.0, 1e-12);
  EXPECT_EQ(summarize({}).mean_us, 0.0);
}

TEST(TimeStats, GigabytesAreTenToTheNinth) {
  EXPECT_DOUBLE_EQ(gigabytes_per_second(1e9, 1e6), 1.0);
  EXPECT_DOUBLE_EQ(gigabytes_per_second(4096, 1.0), 4.096);
  EXPECT_EQ(gigabytes_per_second(100, 0), 0.0);
}

TEST(RunInfo, CpuLists) {
  EXPECT_EQ(format_cpu_list({}), "none");
  EXPECT_EQ(format_cpu_list({0}), "0");
  EXPECT_EQ(format_cpu_list({0, 1}), "0-1");
  EXPECT_EQ(format_cpu_list({0, 2, 4, 5, 6, 9}), "0,2,4-6,9");
}

}  // namespace
}  // namespace collective::bench
