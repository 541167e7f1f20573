// collective_bench's command line: nccl-tests' flags with their meanings,
// and every refusal naming the flag.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench_options.h"
#include "byte_size.h"
#include "overlap.h"

namespace collective::bench {
namespace {

ParsedCommandLine parse(std::vector<std::string> args) {
  args.insert(args.begin(), "collective_bench");
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  return parse_command_line(static_cast<int>(argv.size()), argv.data());
}

BenchOptions options(std::vector<std::string> args) { return parse(std::move(args)).options; }

// The refusal's message, which must name the flag.
std::string refusal(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const UsageError& error) {
    return error.what();
  }
  return "(accepted)";
}

TEST(ByteSize, ParsesPowersOf1024Suffixes) {
  EXPECT_EQ(parse_byte_size("0"), 0u);
  EXPECT_EQ(parse_byte_size("8"), 8u);
  EXPECT_EQ(parse_byte_size("8B"), 8u);
  EXPECT_EQ(parse_byte_size("1K"), 1024u);
  EXPECT_EQ(parse_byte_size("1k"), 1024u);
  EXPECT_EQ(parse_byte_size("64M"), 64u << 20);
  EXPECT_EQ(parse_byte_size("3MiB"), 3u << 20);
  EXPECT_EQ(parse_byte_size("2G"), std::size_t{2} << 30);
  EXPECT_EQ(parse_byte_size("16GB"), std::size_t{16} << 30);
}

TEST(ByteSize, RejectsMalformedAndOverflowingSizes) {
  for (const char* bad :
       {"", "K", "-1", "1X", "1.5M", "1 M", "99999999999999999999", "17179869184G"}) {
    EXPECT_FALSE(parse_byte_size(bad).has_value()) << bad;
  }
}

TEST(ByteSize, FormatsWholeUnits) {
  EXPECT_EQ(format_byte_size(8), "8 B");
  EXPECT_EQ(format_byte_size(1000), "1000 B");
  EXPECT_EQ(format_byte_size(65536), "64 KiB");
  EXPECT_EQ(format_byte_size(std::size_t{3} << 30), "3 GiB");
}

TEST(BenchOptions, DefaultsSuitATwoCoreMachine) {
  const BenchOptions o = options({});
  EXPECT_EQ(o.min_bytes, 8u);
  EXPECT_EQ(o.max_bytes, 32u << 20);
  EXPECT_EQ(o.step_factor, 2u);
  EXPECT_EQ(o.iters, 20);
  EXPECT_EQ(o.warmup_iters, 5);
  EXPECT_TRUE(o.check);
  EXPECT_FALSE(o.deterministic);
  EXPECT_TRUE(options({"--deterministic", "1"}).deterministic);
  EXPECT_TRUE(options({"--deterministic"}).deterministic);
  EXPECT_EQ(o.collectives, std::vector<CollectiveKind>{CollectiveKind::kAllReduce});
  EXPECT_EQ(o.datatypes, std::vector<DataType>{DataType::kFloat32});
  EXPECT_EQ(o.ops, std::vector<ReduceOp>{ReduceOp::kSum});
  EXPECT_EQ(o.algorithms, std::vector<Algorithm>{Algorithm::kAuto});
  EXPECT_FALSE(o.all_algorithms);
  EXPECT_FALSE(o.baseline_mpi);
  EXPECT_EQ(o.format, OutputFormat::kTable);
  EXPECT_FALSE(o.inject_error);
}

TEST(BenchOptions, ShortAndLongNcclTestsFlags) {
  const BenchOptions s = options({"-b", "1K", "-e", "64M", "-f", "4", "-n", "7", "-w", "3", "-c",
                                  "0", "-d", "half", "-o", "max", "-r", "1"});
  const BenchOptions l = options({"--minbytes", "1K", "--maxbytes=64M", "--stepfactor", "4",
                                  "--iters", "7", "--warmup_iters", "3", "--check", "0",
                                  "--datatype", "half", "--op", "max", "--root", "1"});
  for (const BenchOptions& o : {s, l}) {
    EXPECT_EQ(o.min_bytes, 1024u);
    EXPECT_EQ(o.max_bytes, 64u << 20);
    EXPECT_EQ(o.step_factor, 4u);
    EXPECT_EQ(o.iters, 7);
    EXPECT_EQ(o.warmup_iters, 3);
    EXPECT_FALSE(o.check);
    EXPECT_EQ(o.datatypes, std::vector<DataType>{DataType::kFloat16});
    EXPECT_EQ(o.ops, std::vector<ReduceOp>{ReduceOp::kMax});
    EXPECT_EQ(o.root, 1);
  }
}

TEST(BenchOptions, SizesMultiplyOrAdd) {
  EXPECT_EQ(options({"-b", "8", "-e", "64"}).sizes(), (std::vector<std::size_t>{8, 16, 32, 64}));
  EXPECT_EQ(options({"-b", "8", "-e", "100", "-f", "3"}).sizes(),
            (std::vector<std::size_t>{8, 24, 72}));
  EXPECT_EQ(options({"-b", "0", "-e", "4"}).sizes(), (std::vector<std::size_t>{0, 1, 2, 4}));
  const BenchOptions additive = options({"-b", "4", "-e", "40", "-i", "12"});
  EXPECT_EQ(additive.step_factor, 1u);
  EXPECT_EQ(additive.sizes(), (std::vector<std::size_t>{4, 16, 28, 40}));
  // nccl-tests: -f 1 without -i steps by 1 MiB.
  EXPECT_EQ(options({"-b", "1M", "-e", "3M", "-f", "1"}).sizes(),
            (std::vector<std::size_t>{1u << 20, 2u << 20, 3u << 20}));
  EXPECT_EQ(options({"-b", "5", "-e", "5"}).sizes(), std::vector<std::size_t>{5});
}

TEST(BenchOptions, ListsAndAll) {
  EXPECT_EQ(options({"-d", "all"}).datatypes.size(), static_cast<std::size_t>(kNumDataTypes));
  EXPECT_EQ(options({"-o", "all"}).ops.size(), static_cast<std::size_t>(kNumReduceOps));
  EXPECT_EQ(options({"-d", "bf16,int8"}).datatypes,
            (std::vector<DataType>{DataType::kBFloat16, DataType::kInt8}));
  // Every collective with a case (cases/), barrier aside.
  EXPECT_EQ(options({"-C", "all"}).collectives.size(),
            static_cast<std::size_t>(kNumCollectiveKinds) - 1);
  EXPECT_EQ(options({"-C", "allreduce,reducescatter,allgather"}).collectives,
            (std::vector<CollectiveKind>{CollectiveKind::kAllReduce, CollectiveKind::kReduceScatter,
                                         CollectiveKind::kAllGather}));
  // nccl-tests' names, the library's, and the library's without underscores.
  EXPECT_EQ(options({"-C",
                     "alltoall,alltoallv,all_gather_v,reducescatterv,gather,gatherv,scatter,"
                     "scatter_v"})
                .collectives,
            (std::vector<CollectiveKind>{
                CollectiveKind::kAllToAll, CollectiveKind::kAllToAllV, CollectiveKind::kAllGatherV,
                CollectiveKind::kReduceScatterV, CollectiveKind::kGather, CollectiveKind::kGatherV,
                CollectiveKind::kScatter, CollectiveKind::kScatterV}));
  EXPECT_EQ(options({"-C", "alltoallv", "--uneven", "4"}).uneven, 4u);
  EXPECT_EQ(options({"-C", "gather_v", "--uneven", "0"}).uneven, 0u);
  EXPECT_EQ(options({"--collective", "broadcast"}).collectives,
            std::vector<CollectiveKind>{CollectiveKind::kBroadcast});
  const BenchOptions all = options({"-a", "all"});
  EXPECT_TRUE(all.all_algorithms);
  EXPECT_TRUE(all.algorithms.empty());
  const BenchOptions all_and_auto = options({"-a", "all,auto"});
  EXPECT_TRUE(all_and_auto.all_algorithms);
  EXPECT_EQ(all_and_auto.algorithms, std::vector<Algorithm>{Algorithm::kAuto});
  EXPECT_EQ(options({"-a", "ring,mpi,auto,ring"}).algorithms,
            (std::vector<Algorithm>{Algorithm::kRing, Algorithm::kMpi, Algorithm::kAuto}));
  EXPECT_EQ(options({"--algorithm", "recursive_doubling"}).algorithms,
            std::vector<Algorithm>{Algorithm::kRecursiveDoubling});
}

TEST(BenchOptions, OutputBaselineAndThresholds) {
  const BenchOptions o = options({"--baseline", "mpi", "--format", "json", "--output", "r.json",
                                  "--min-busbw", "2.5", "--progress", "off"});
  EXPECT_TRUE(o.baseline_mpi);
  EXPECT_EQ(o.format, OutputFormat::kJson);
  EXPECT_EQ(o.output_file, "r.json");
  EXPECT_EQ(o.min_busbw_gbs, 2.5);
  EXPECT_EQ(o.progress, ProgressMode::kOff);
  EXPECT_EQ(options({"--format", "csv"}).format, OutputFormat::kCsv);
}

TEST(BenchOptions, RefusalsNameTheFlag) {
  EXPECT_NE(refusal({"-b", "2M", "-e", "1M"}).find("-b/--minbytes"), std::string::npos);
  EXPECT_NE(refusal({"-b", "12X"}).find("-b/--minbytes"), std::string::npos);
  EXPECT_NE(refusal({"-e", "lots"}).find("-e/--maxbytes"), std::string::npos);
  EXPECT_NE(refusal({"-f", "2", "-i", "1K"}).find("not both"), std::string::npos);
  EXPECT_NE(refusal({"-f", "0"}).find("-f/--stepfactor"), std::string::npos);
  EXPECT_NE(refusal({"-i", "0"}).find("-i/--stepbytes"), std::string::npos);
  EXPECT_NE(refusal({"-n", "0"}).find("-n/--iters"), std::string::npos);
  EXPECT_NE(refusal({"-w", "-1"}).find("-w/--warmup_iters"), std::string::npos);
  EXPECT_NE(refusal({"-c", "2"}).find("-c/--check"), std::string::npos);
  EXPECT_NE(refusal({"--deterministic", "yes"}).find("--deterministic"), std::string::npos);
  EXPECT_NE(refusal({"-d", "float128"}).find("-d/--datatype"), std::string::npos);
  EXPECT_NE(refusal({"-o", "xor"}).find("-o/--op"), std::string::npos);
  EXPECT_NE(refusal({"-o", "band"}).find("-o/--op band combines bits, of integer types only"),
            std::string::npos);
  EXPECT_NE(refusal({"-o", "sum,bxor", "-d", "float,half"}).find("-o/--op bxor"),
            std::string::npos);
  EXPECT_EQ(options({"-o", "bor", "-d", "float,int8"}).ops,
            std::vector<ReduceOp>{ReduceOp::kBitwiseOr});
  EXPECT_EQ(options({"-o", "all", "-d", "float"}).ops.size(),
            static_cast<std::size_t>(kNumReduceOps));  // the driver skips bitwise x float
  EXPECT_NE(refusal({"-r", "-1"}).find("-r/--root"), std::string::npos);
  EXPECT_NE(refusal({"-C", "barrier"}).find("-C/--collective"), std::string::npos);
  EXPECT_NE(refusal({"-C", "sendrecv"}).find("-C/--collective"), std::string::npos);
  EXPECT_NE(refusal({"-C", "alltoall", "--uneven", "4"}).find("--uneven"), std::string::npos);
  EXPECT_NE(refusal({"-C", "alltoallv", "--uneven", "-1"}).find("--uneven"), std::string::npos);
  const std::string algorithm = refusal({"-a", "butterfly"});
  EXPECT_NE(algorithm.find("-a/--algorithm"), std::string::npos);
  EXPECT_NE(algorithm.find("recursive_doubling"), std::string::npos);  // lists the known ones
  EXPECT_NE(refusal({"--baseline", "nccl"}).find("--baseline"), std::string::npos);
  EXPECT_NE(refusal({"--format", "xml"}).find("--format"), std::string::npos);
  EXPECT_NE(refusal({"--min-busbw", "-1"}).find("--min-busbw"), std::string::npos);
  EXPECT_NE(refusal({"--min-busbw", "fast"}).find("--min-busbw"), std::string::npos);
  EXPECT_NE(refusal({"--progress", "maybe"}).find("--progress"), std::string::npos);
  EXPECT_NE(refusal({"--no-such-flag"}).find("no-such-flag"), std::string::npos);
  EXPECT_NE(refusal({"-b"}).find("minbytes"), std::string::npos);
  // No abbreviations: --min could be --minbytes or --min-busbw.
  EXPECT_NE(refusal({"--min", "8"}), "(accepted)");
}

TEST(BenchOptions, RefusesStrayArgumentsNamingThem) {
  // Found by bench_command_line_fuzzer: words that belong to no flag were
  // dropped, so "-b 8 foo" ran as "-b 8".
  EXPECT_NE(refusal({"-b", "8", "foo"}).find("'foo'"), std::string::npos);
  EXPECT_NE(refusal({"stray"}).find("unexpected argument 'stray'"), std::string::npos);
  // A value given twice: the second has no flag.
  EXPECT_NE(refusal({"-e", "1M", "2M"}).find("'2M'"), std::string::npos);
  // After "--" every word is positional, and refused the same way.
  EXPECT_NE(refusal({"--", "-b"}).find("'-b'"), std::string::npos);
  // A flag without a value (--inject-error) does not swallow the next word.
  EXPECT_NE(refusal({"--inject-error", "1"}).find("'1'"), std::string::npos);
  // Values that look like words are still values.
  EXPECT_EQ(options({"-a", "ring", "-o", "max"}).algorithms,
            std::vector<Algorithm>{Algorithm::kRing});
}

TEST(BenchOptions, DeviceMemoryIsServedByNcclAlone) {
  EXPECT_EQ(options({}).memory, BufferMemory::kHost);
  EXPECT_EQ(options({"--memory", "device"}).memory, BufferMemory::kDevice);
  EXPECT_EQ(options({"--memory", "DEVICE", "-a", "nccl,auto"}).algorithms,
            (std::vector<Algorithm>{Algorithm::kNccl, Algorithm::kAuto}));
  EXPECT_TRUE(options({"--memory", "device", "-a", "all"}).all_algorithms);
  EXPECT_NE(refusal({"--memory", "gpu"}).find("--memory: 'gpu'"), std::string::npos);
  // MPI here takes host buffers only; host algorithms refuse device ones.
  EXPECT_NE(refusal({"--memory", "device", "--baseline", "mpi"}).find("--baseline mpi"),
            std::string::npos);
  for (const char* host_only : {"ring", "recursive_doubling", "mpi", "shared_memory",
                                "hierarchical", "pairwise", "bruck"}) {
    const std::string why = refusal({"--memory", "device", "-a", host_only});
    EXPECT_NE(why.find(std::string("-a ") + host_only + " serves host buffers only"),
              std::string::npos)
        << why;
  }
  EXPECT_NE(refusal({"--memory", "device", "--fusion", "4"}).find("--fusion"), std::string::npos);
  EXPECT_NE(refusal({"--memory", "device", "--generate-rules", "r.txt", "-a", "nccl"})
                .find("--generate-rules"),
            std::string::npos);
}

TEST(BenchOptions, FusionIsAnAllReduceComparison) {
  const BenchOptions o = options({"--fusion", "16"});
  EXPECT_EQ(o.fusion_tensors, 16u);
  EXPECT_NE(refusal({"--fusion", "0"}).find("--fusion"), std::string::npos);
  EXPECT_NE(refusal({"--fusion", "4", "-C", "reduce"}).find("--fusion"), std::string::npos);
  EXPECT_NE(refusal({"--fusion", "4", "--baseline", "mpi"}).find("--fusion"), std::string::npos);
}

TEST(BenchOptions, NonblockingMeasuresTheOverlapOfEveryCollective) {
  EXPECT_FALSE(options({}).nonblocking);
  const BenchOptions o = options({"--nonblocking", "-b", "1M", "-e", "64M", "-n", "10"});
  EXPECT_TRUE(o.nonblocking);
  EXPECT_EQ(o.collectives, std::vector<CollectiveKind>{CollectiveKind::kAllReduce});
  EXPECT_EQ(o.min_bytes, 1u << 20);
  EXPECT_EQ(o.max_bytes, 64u << 20);
  EXPECT_EQ(o.iters, 10);
  // Every collective, barrier included, in the library's order.
  std::vector<CollectiveKind> every;
  for (int k = 0; k < kNumCollectiveKinds; ++k) every.push_back(static_cast<CollectiveKind>(k));
  EXPECT_EQ(options({"--nonblocking", "-C", "all"}).collectives, every);
  EXPECT_EQ(options({"--nonblocking", "-C", "broadcast,barrier,gatherv"}).collectives,
            (std::vector<CollectiveKind>{CollectiveKind::kBroadcast, CollectiveKind::kBarrier,
                                         CollectiveKind::kGatherV}));
  // The blocking sweep has no barrier (no buffers to size).
  EXPECT_NE(refusal({"-C", "barrier"}).find("-C/--collective: 'barrier' is not benchmarked"),
            std::string::npos);
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--nonblocking", "--fusion", "4"},
                                             {"--nonblocking", "--generate-rules", "r.txt"},
                                             {"--nonblocking", "--memory", "device"},
                                             {"--nonblocking", "-a", "ring"},
                                             {"--nonblocking", "-a", "all"},
                                             {"--nonblocking", "--format", "csv"},
                                             {"--nonblocking", "--format", "json"}}) {
    const std::string why = refusal(args);
    EXPECT_NE(why.find("--nonblocking"), std::string::npos) << args[1] << ": " << why;
  }
  EXPECT_NE(refusal({"--nonblocking", "-C", "bogus"}).find("with --nonblocking"),
            std::string::npos);
}

TEST(Overlap, IsOsusFormulaClampedToZeroToHundred) {
  // 100 * (1 - (total - compute) / call)
  EXPECT_DOUBLE_EQ(overlap_percent(100, 100, 100), 100.0);  // all hidden
  EXPECT_DOUBLE_EQ(overlap_percent(100, 100, 200), 0.0);    // none hidden
  EXPECT_DOUBLE_EQ(overlap_percent(100, 100, 120), 80.0);
  EXPECT_DOUBLE_EQ(overlap_percent(100, 100, 250), 0.0);   // slower than serial: clamped
  EXPECT_DOUBLE_EQ(overlap_percent(100, 100, 90), 100.0);  // noise below compute: clamped
  EXPECT_DOUBLE_EQ(overlap_percent(0, 5, 5), 0.0);         // a call of no time hides nothing
}

TEST(BenchOptions, FusionRequestsWhatCommunicationOptionsCan) {
  // The strategies layer's CommunicationImplementation reaches auto and ring.
  EXPECT_EQ(options({"--fusion", "4", "-a", "ring,auto"}).algorithms,
            (std::vector<Algorithm>{Algorithm::kRing, Algorithm::kAuto}));
  EXPECT_TRUE(options({"--fusion", "4", "-a", "all"}).all_algorithms);
  for (const char* unreachable :
       {"shared_memory", "recursive_doubling", "mpi", "hierarchical", "nccl"}) {
    const std::string why = refusal({"--fusion", "4", "-a", unreachable});
    EXPECT_NE(why.find("--fusion"), std::string::npos) << why;
    EXPECT_NE(why.find(std::string("-a ") + unreachable), std::string::npos) << why;
  }
}

TEST(BenchOptions, BytesPerPackBelongsToFusion) {
  EXPECT_EQ(options({"--fusion", "4"}).fusion_bytes_per_pack, 0u);
  EXPECT_EQ(options({"--fusion", "4", "--bytes-per-pack", "64K"}).fusion_bytes_per_pack, 65536u);
  EXPECT_NE(refusal({"--bytes-per-pack", "1K"}).find("--fusion"), std::string::npos);
  EXPECT_NE(refusal({"--fusion", "4", "--bytes-per-pack", "lots"}).find("--bytes-per-pack"),
            std::string::npos);
}

TEST(BenchOptions, GenerateRulesSweepsEveryCollectiveAndAlgorithm) {
  const BenchOptions o = options({"--generate-rules", "rules.json"});
  EXPECT_EQ(o.rules_file, "rules.json");
  EXPECT_EQ(o.collectives.size(), static_cast<std::size_t>(kNumCollectiveKinds) - 1);
  EXPECT_TRUE(o.all_algorithms);
  const BenchOptions narrowed =
      options({"--generate-rules", "r.json", "-C", "all_reduce", "-a", "ring,recursive_doubling"});
  EXPECT_EQ(narrowed.collectives, std::vector<CollectiveKind>{CollectiveKind::kAllReduce});
  EXPECT_EQ(narrowed.algorithms,
            (std::vector<Algorithm>{Algorithm::kRing, Algorithm::kRecursiveDoubling}));
  EXPECT_NE(refusal({"--generate-rules", "r.json", "-a", "auto"}).find("--generate-rules"),
            std::string::npos);
  EXPECT_NE(refusal({"--generate-rules", "r.json", "-d", "all"}).find("--generate-rules"),
            std::string::npos);
  EXPECT_NE(refusal({"--generate-rules", "r.json", "--fusion", "2"}), "(accepted)");
}

TEST(BenchOptions, InjectErrorIsHiddenFromHelp) {
  const ParsedCommandLine parsed = parse({"--inject-error", "--help"});
  EXPECT_TRUE(parsed.options.inject_error);
  EXPECT_TRUE(parsed.show_help);
  EXPECT_EQ(parsed.help_text.find("inject"), std::string::npos);
  for (const char* flag : {"--minbytes", "--maxbytes",       "--stepfactor",     "--stepbytes",
                           "--iters",    "--warmup_iters",   "--check",          "--datatype",
                           "--op",       "--root",           "--collective",     "--algorithm",
                           "--baseline", "--format",         "--output",         "--min-busbw",
                           "--fusion",   "--bytes-per-pack", "--generate-rules", "--deterministic",
                           "--memory"}) {
    EXPECT_NE(parsed.help_text.find(flag), std::string::npos) << flag;
  }
}

TEST(BenchOptions, RecordsTheCommandLine) {
  EXPECT_EQ(options({"-b", "8", "--baseline", "mpi"}).command_line,
            "collective_bench -b 8 --baseline mpi");
}

}  // namespace
}  // namespace collective::bench
