#include "bench_options.h"

#include <boost/program_options.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <span>
#include <sstream>

#include "byte_size.h"
#include "shared_cases.h"

namespace collective::bench {
namespace po = boost::program_options;

namespace {

constexpr std::size_t kDefaultStepBytes = std::size_t{1} << 20;  // nccl-tests' -i default

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::string item;
  std::istringstream stream(text);
  while (std::getline(stream, item, ',')) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

template <typename Integer>
Integer parse_integer(const std::string& flag, const std::string& text, Integer minimum) {
  Integer value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    throw UsageError(flag + ": '" + text + "' is not an integer");
  }
  if (value < minimum) {
    throw UsageError(flag + ": " + text + " is below the minimum " + std::to_string(minimum));
  }
  return value;
}

std::size_t parse_size_flag(const std::string& flag, const std::string& text) {
  const auto bytes = parse_byte_size(text);
  if (!bytes) {
    throw UsageError(flag + ": '" + text +
                     "' is not a byte size (an integer with an optional K, M or G suffix)");
  }
  return *bytes;
}

std::vector<DataType> parse_datatypes(const std::string& text) {
  std::vector<DataType> types;
  if (lower(text) == "all") {
    for (int i = 0; i < kNumDataTypes; ++i) types.push_back(static_cast<DataType>(i));
    return types;
  }
  for (const std::string& name : split_list(text)) {
    const auto type = parse_data_type(name);
    if (!type) {
      throw UsageError("-d/--datatype: unknown type '" + name +
                       "' (float16, bfloat16, float32, float64, int8, uint8, int32, int64 or all)");
    }
    types.push_back(*type);
  }
  if (types.empty()) throw UsageError("-d/--datatype: no type given");
  return types;
}

std::vector<ReduceOp> parse_ops(const std::string& text) {
  std::vector<ReduceOp> ops;
  if (lower(text) == "all") {
    for (int i = 0; i < kNumReduceOps; ++i) ops.push_back(static_cast<ReduceOp>(i));
    return ops;
  }
  for (const std::string& name : split_list(text)) {
    const auto op = parse_reduce_op(name);
    if (!op) {
      throw UsageError("-o/--op: unknown reduction '" + name +
                       "' (sum, mean, min, max, prod, band, bor, bxor or all)");
    }
    ops.push_back(*op);
  }
  if (ops.empty()) throw UsageError("-o/--op: no reduction given");
  return ops;
}

// -C's collectives: those with a case, and with --nonblocking (`with_barrier`)
// barrier too, which has no buffers to sweep but has a started form to
// overlap; `all` lists them in the library's order.
std::vector<CollectiveKind> parse_collectives(const std::string& text, bool with_barrier) {
  std::vector<CollectiveKind> served(kinds_with_cases().begin(), kinds_with_cases().end());
  if (with_barrier) {
    served.push_back(CollectiveKind::kBarrier);
    std::sort(served.begin(), served.end());
  }
  if (lower(text) == "all") return served;
  std::vector<CollectiveKind> kinds;
  for (const std::string& name : split_list(lower(text))) {
    auto kind = parse_case_name(name);
    if (!kind && with_barrier && name == to_string(CollectiveKind::kBarrier)) {
      kind = CollectiveKind::kBarrier;
    }
    if (!kind) {
      std::string known;
      for (const CollectiveKind k : served) {
        const std::string_view command_name =
            k == CollectiveKind::kBarrier ? to_string(k) : command_line_name(k);
        known += std::string(command_name);
        if (command_name != to_string(k)) known += " (" + std::string(to_string(k)) + ")";
        known += ", ";
      }
      throw UsageError("-C/--collective: '" + name + "' is not benchmarked" +
                       (with_barrier ? " with --nonblocking" : "") + " (" + known + "or all)");
    }
    kinds.push_back(*kind);
  }
  if (kinds.empty()) throw UsageError("-C/--collective: no collective given");
  return kinds;
}

void parse_algorithms(const std::string& text, BenchOptions& options) {
  options.algorithms.clear();
  options.all_algorithms = false;
  for (const std::string& name : split_list(text)) {
    if (lower(name) == "all") {
      options.all_algorithms = true;
      continue;
    }
    const auto algorithm = parse_algorithm(name);
    if (!algorithm) {
      std::string known;
      for (int i = 0; i < kNumAlgorithms; ++i) {
        known += std::string(to_string(static_cast<Algorithm>(i))) + ", ";
      }
      throw UsageError("-a/--algorithm: unknown algorithm '" + name + "' (" + known + "or all)");
    }
    if (std::find(options.algorithms.begin(), options.algorithms.end(), *algorithm) ==
        options.algorithms.end()) {
      options.algorithms.push_back(*algorithm);
    }
  }
  if (options.algorithms.empty() && !options.all_algorithms) {
    throw UsageError("-a/--algorithm: no algorithm given");
  }
}

double parse_min_busbw(const std::string& text) {
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !(value >= 0)) {
    throw UsageError("--min-busbw: '" + text + "' is not a non-negative number of GB/s");
  }
  return value;
}

std::string join_argv(int argc, const char* const* argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) line += ' ';
    line += argv[i];
  }
  return line;
}

}  // namespace

const char* to_string(OutputFormat format) {
  switch (format) {
    case OutputFormat::kTable: return "table";
    case OutputFormat::kCsv: return "csv";
    case OutputFormat::kJson: return "json";
  }
  return "unknown";
}

std::vector<std::size_t> BenchOptions::sizes() const {
  std::vector<std::size_t> result;
  std::size_t size = min_bytes;
  while (size <= max_bytes) {
    result.push_back(size);
    std::size_t next = 0;
    if (step_factor > 1) {
      if (size > std::numeric_limits<std::size_t>::max() / step_factor) break;
      next = std::max(size * step_factor, size + 1);  // 0 grows to 1, not to 0 forever
    } else {
      if (size > std::numeric_limits<std::size_t>::max() - step_bytes) break;
      next = size + step_bytes;
    }
    size = next;
  }
  return result;
}

std::size_t BenchOptions::size_count() const {
  if (min_bytes > max_bytes) return 0;
  if (step_factor > 1) {
    // At most 64 steps: sizes() multiplies until past max_bytes (or size_t).
    std::size_t count = 0;
    std::size_t size = min_bytes;
    while (size <= max_bytes) {
      ++count;
      if (size > std::numeric_limits<std::size_t>::max() / step_factor) break;
      size = std::max(size * step_factor, size + 1);
    }
    return count;
  }
  const std::size_t step = std::max<std::size_t>(step_bytes, 1);
  const std::size_t steps = (max_bytes - min_bytes) / step;
  return steps == std::numeric_limits<std::size_t>::max() ? steps : steps + 1;  // saturates
}

std::size_t BenchOptions::largest_size() const {
  const std::size_t count = size_count();
  if (count == 0) return 0;
  if (step_factor > 1) {
    std::size_t size = min_bytes;
    for (std::size_t i = 1; i < count; ++i) size = std::max(size * step_factor, size + 1);
    return size;
  }
  return min_bytes + (count - 1) * std::max<std::size_t>(step_bytes, 1);
}

ParsedCommandLine parse_command_line(int argc, const char* const* argv) {
  // Boost's option chains read as one option per line; clang-format would
  // pack them.
  // clang-format off
  po::options_description sizes("Sizes (nccl-tests flags; K, M, G are powers of 1024)");
  sizes.add_options()
      ("minbytes,b", po::value<std::string>()->default_value("8"), "smallest size in bytes")
      ("maxbytes,e", po::value<std::string>()->default_value("32M"), "largest size in bytes")
      ("stepfactor,f", po::value<std::string>()->default_value("2"),
       "multiply the size by this factor each step (1: add --stepbytes instead)")
      ("stepbytes,i", po::value<std::string>(),
       "add this many bytes each step instead of multiplying (default 1M when -f 1)");

  po::options_description run("What to run");
  run.add_options()
      ("collective,C", po::value<std::string>()->default_value("all_reduce"),
       "nccl-tests' name (allreduce, reducescatter, allgather, broadcast, reduce) or the "
       "library's (all_reduce, ...), a comma list, or all; with --nonblocking also barrier "
       "(all includes it)")
      ("algorithm,a", po::value<std::string>()->default_value("auto"),
       "an algorithm name (ring, recursive_doubling, mpi, shared_memory, hierarchical, nccl), "
       "auto, a comma list, or all (one row per algorithm that supports the call; all,auto "
       "adds AUTO's row)")
      ("datatype,d", po::value<std::string>()->default_value("float32"),
       "float16, bfloat16, float32, float64, int8, uint8, int32, int64 (or half, float, double, "
       "...), a comma list, or all")
      ("op,o", po::value<std::string>()->default_value("sum"),
       "sum, mean, min, max, prod, band, bor, bxor (integer types only), a comma list, or all "
       "(reducing collectives only)")
      ("root,r", po::value<std::string>()->default_value("0"),
       "root rank of the rooted collectives (broadcast, reduce, gather, scatter, ...)")
      ("uneven", po::value<std::string>()->default_value("1"),
       "N: in the collectives with per-rank counts (alltoallv, all_gather_v, reduce_scatter_v, "
       "gather_v, scatter_v) rank 0's count is N times the others' (0: rank 0 has none)")
      ("iters,n", po::value<std::string>()->default_value("20"), "timed iterations per size")
      ("warmup_iters,w", po::value<std::string>()->default_value("5"),
       "untimed iterations before timing")
      ("check,c", po::value<std::string>()->default_value("1")->implicit_value("1"),
       "1: check every element of every result (in calls apart from the timed ones); 0: do not")
      ("deterministic", po::value<std::string>()->default_value("0")->implicit_value("1"),
       "1: all_reduce, reduce_scatter and reduce run deterministic (bitwise the same "
       "whatever the algorithm; AllReduceOptions::deterministic)")
      ("baseline", po::value<std::string>()->default_value("none"),
       "mpi: also time the matching MPI collective on the same buffers, alternating with ours "
       "iteration by iteration, and print its time and our speed-up")
      ("memory", po::value<std::string>()->default_value("host"),
       "host, or device: the buffers in CUDA device memory (one GPU per rank, local rank "
       "modulo the GPUs, as nccl-tests), served by nccl; needs the NCCL path")
      ("fusion", po::value<std::string>(),
       "N: all-reduce N tensors of each size through the strategies layer (CollectiveAllReduce): "
       "reduce one by one against one batch_reduce that packs them; report the ratio. -a auto "
       "or ring (CommunicationOptions::implementation; all means ring)")
      ("bytes-per-pack", po::value<std::string>(),
       "B: with --fusion, CommunicationOptions::bytes_per_pack of the batch_reduce (K, M, G "
       "suffixes; default 0: all tensors in one pack)")
      ("nonblocking",
       "OSU's overlap measure of each -C collective (barrier too): per size the call alone "
       "(start+wait), a busy loop calibrated to last as long, and start+loop+wait, with the "
       "overlap %; the library's _async call beside MPI's nonblocking one (all_reduce_async "
       "beside MPI_Iallreduce, ...), alternating (table output)")
      ("generate-rules", po::value<std::string>(),
       "FILE: time every candidate algorithm at every size and write the rules file that AUTO "
       "loads (COLLECTIVE_RULES_FILE)");

  po::options_description output("Output");
  output.add_options()
      ("format", po::value<std::string>()->default_value("table"), "table, csv or json")
      ("output", po::value<std::string>(),
       "FILE: write the --format report to FILE (the table still goes to stdout)")
      ("min-busbw", po::value<std::string>(),
       "GB/s: exit non-zero when the average bus bandwidth is below this")
      ("progress", po::value<std::string>()->default_value("auto"),
       "auto (on a terminal only), on or off")
      ("help,h", "print this help")
      ("version", "print the version");
  // clang-format on

  po::options_description hidden;
  hidden.add_options()("inject-error", "test only: corrupt one result element before checking");

  po::options_description visible(
      "collective_bench: collective bandwidth benchmark (nccl-tests "
      "style) for libcollective, run under mpirun");
  visible.add(sizes).add(run).add(output);
  po::options_description all;
  all.add(visible).add(hidden);

  ParsedCommandLine parsed;
  std::ostringstream help;
  help << visible;
  parsed.help_text = help.str();

  po::variables_map values;
  try {
    const int style =
        po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    const po::parsed_options tokens =
        po::command_line_parser(argc, argv).options(all).style(style).run();
    // No flag takes positional arguments: a stray word (a value after a
    // flag that takes none, a mistyped flag without its dash) would
    // otherwise be dropped without a word.
    const std::vector<std::string> stray =
        po::collect_unrecognized(tokens.options, po::include_positional);
    if (!stray.empty()) {
      throw UsageError("unexpected argument '" + stray.front() +
                       "': collective_bench takes flags only (a value belongs after its flag)");
    }
    po::store(tokens, values);
    po::notify(values);
  } catch (const po::error& error) {
    throw UsageError(error.what());
  }
  if (values.count("help")) parsed.show_help = true;
  if (values.count("version")) parsed.show_version = true;

  BenchOptions& options = parsed.options;
  options.command_line = join_argv(argc, argv);
  auto text = [&](const char* name) { return values[name].as<std::string>(); };
  auto given = [&](const char* name) { return values.count(name) && !values[name].defaulted(); };

  options.min_bytes = parse_size_flag("-b/--minbytes", text("minbytes"));
  options.max_bytes = parse_size_flag("-e/--maxbytes", text("maxbytes"));
  if (options.min_bytes > options.max_bytes) {
    throw UsageError("-b/--minbytes (" + std::to_string(options.min_bytes) +
                     ") is above -e/--maxbytes (" + std::to_string(options.max_bytes) + ")");
  }
  options.step_factor = parse_integer<std::size_t>("-f/--stepfactor", text("stepfactor"), 1);
  if (given("stepbytes")) {
    if (given("stepfactor") && options.step_factor != 1) {
      throw UsageError("give -f/--stepfactor or -i/--stepbytes, not both");
    }
    options.step_factor = 1;
    options.step_bytes = parse_size_flag("-i/--stepbytes", text("stepbytes"));
    if (options.step_bytes == 0) throw UsageError("-i/--stepbytes: must be above 0");
  } else if (options.step_factor == 1) {
    options.step_bytes = kDefaultStepBytes;
  }
  options.iters = parse_integer<int>("-n/--iters", text("iters"), 1);
  options.warmup_iters = parse_integer<int>("-w/--warmup_iters", text("warmup_iters"), 0);
  const std::string check = text("check");
  if (check != "0" && check != "1") throw UsageError("-c/--check: '" + check + "' is not 0 or 1");
  options.check = check == "1";
  const std::string deterministic = text("deterministic");
  if (deterministic != "0" && deterministic != "1") {
    throw UsageError("--deterministic: '" + deterministic + "' is not 0 or 1");
  }
  options.deterministic = deterministic == "1";
  options.collectives = parse_collectives(text("collective"), values.count("nonblocking") > 0);
  options.datatypes = parse_datatypes(text("datatype"));
  options.ops = parse_ops(text("op"));
  // A bitwise op named outright needs an integer type to run on (-o all
  // runs them on the integer types of -d, if any).
  if (lower(text("op")) != "all" && std::none_of(options.datatypes.begin(), options.datatypes.end(),
                                                 [](DataType type) { return is_integer(type); })) {
    for (const ReduceOp op : options.ops) {
      if (is_bitwise(op)) {
        throw UsageError("-o/--op " + std::string(to_string(op)) +
                         " combines bits, of integer types only: -d names none (int8, uint8, "
                         "int32, int64)");
      }
    }
  }
  options.root = parse_integer<int>("-r/--root", text("root"), 0);
  options.uneven = parse_integer<std::size_t>("--uneven", text("uneven"), 0);
  if (given("uneven") &&
      std::none_of(options.collectives.begin(), options.collectives.end(),
                   [](CollectiveKind kind) { return has_per_rank_counts(kind); })) {
    throw UsageError(
        "--uneven applies to the collectives with per-rank counts only; -C names none");
  }
  parse_algorithms(text("algorithm"), options);

  const std::string baseline = lower(text("baseline"));
  if (baseline == "mpi") {
    options.baseline_mpi = true;
  } else if (baseline != "none") {
    throw UsageError("--baseline: '" + baseline + "' is not known (mpi or none)");
  }
  const std::string memory = lower(text("memory"));
  if (memory == "device") {
    options.memory = BufferMemory::kDevice;
    // The MPI here is not CUDA-aware: MPI cannot be handed device buffers.
    if (options.baseline_mpi) {
      throw UsageError("--memory device: --baseline mpi times MPI, which takes host buffers only");
    }
    for (Algorithm algorithm : options.algorithms) {
      if (algorithm != Algorithm::kAuto && algorithm != Algorithm::kNccl) {
        throw UsageError("--memory device: -a " + std::string(to_string(algorithm)) +
                         " serves host buffers only; device buffers are served by nccl (-a "
                         "auto or nccl)");
      }
    }
  } else if (memory != "host") {
    throw UsageError("--memory: '" + memory + "' is not host or device");
  }

  const std::string format = lower(text("format"));
  if (format == "table") {
    options.format = OutputFormat::kTable;
  } else if (format == "csv") {
    options.format = OutputFormat::kCsv;
  } else if (format == "json") {
    options.format = OutputFormat::kJson;
  } else {
    throw UsageError("--format: '" + format + "' is not table, csv or json");
  }
  if (given("output")) {
    options.output_file = text("output");
    if (options.output_file->empty()) throw UsageError("--output: empty file name");
  }
  if (given("min-busbw")) options.min_busbw_gbs = parse_min_busbw(text("min-busbw"));

  const std::string progress = lower(text("progress"));
  if (progress == "auto") {
    options.progress = ProgressMode::kAuto;
  } else if (progress == "on") {
    options.progress = ProgressMode::kOn;
  } else if (progress == "off") {
    options.progress = ProgressMode::kOff;
  } else {
    throw UsageError("--progress: '" + progress + "' is not auto, on or off");
  }
  options.inject_error = values.count("inject-error") > 0;

  if (given("fusion")) {
    options.fusion_tensors = parse_integer<std::size_t>("--fusion", text("fusion"), 1);
    if (options.collectives != std::vector<CollectiveKind>{CollectiveKind::kAllReduce}) {
      throw UsageError("--fusion packs tensors for all_reduce; -C/--collective must be all_reduce");
    }
    if (options.baseline_mpi) {
      throw UsageError(
          "--fusion compares our one-by-one and packed all-reduces; it takes no "
          "--baseline");
    }
    if (options.memory == BufferMemory::kDevice) {
      throw UsageError(
          "--fusion measures the strategies layer, whose tensors are host memory; "
          "it takes no --memory device");
    }
    // What a strategies user can ask for: CommunicationImplementation AUTO
    // and RING (NCCL on host memory runs the ring too).
    for (Algorithm algorithm : options.algorithms) {
      if (algorithm != Algorithm::kAuto && algorithm != Algorithm::kRing) {
        throw UsageError(
            "--fusion measures the strategies layer, whose CommunicationOptions "
            "request auto or ring only: -a " +
            std::string(to_string(algorithm)) +
            " cannot be asked for there (give -a auto, ring, or all for ring)");
      }
    }
    if (given("bytes-per-pack")) {
      options.fusion_bytes_per_pack = parse_size_flag("--bytes-per-pack", text("bytes-per-pack"));
    }
  } else if (given("bytes-per-pack")) {
    throw UsageError(
        "--bytes-per-pack sets how --fusion's batch_reduce packs; give --fusion N too");
  }
  if (values.count("nonblocking") > 0) {
    options.nonblocking = true;
    if (options.fusion_tensors > 0)
      throw UsageError("--nonblocking and --fusion are separate runs");
    if (given("generate-rules"))
      throw UsageError("--nonblocking and --generate-rules are separate runs");
    if (options.memory == BufferMemory::kDevice) {
      throw UsageError(
          "--nonblocking compares with MPI's nonblocking collectives on host memory; give no "
          "--memory device");
    }
    if (options.all_algorithms || options.algorithms != std::vector<Algorithm>{Algorithm::kAuto}) {
      throw UsageError(
          "--nonblocking measures the _async calls as a program makes them (-a auto); give "
          "no other -a/--algorithm");
    }
    if (options.format != OutputFormat::kTable) {
      throw UsageError("--nonblocking reports a table only; give no csv or json format");
    }
  }
  if (given("generate-rules")) {
    options.rules_file = text("generate-rules");
    if (options.rules_file->empty()) throw UsageError("--generate-rules: empty file name");
    if (options.fusion_tensors > 0)
      throw UsageError("--generate-rules and --fusion are separate runs");
    if (options.memory == BufferMemory::kDevice) {
      throw UsageError(
          "--generate-rules: AUTO's rules choose among host algorithms; device "
          "buffers have one (nccl); give no --memory device");
    }
    if (options.datatypes.size() != 1 || options.ops.size() != 1) {
      throw UsageError(
          "--generate-rules: rules are per byte size; give one -d/--datatype and one "
          "-o/--op");
    }
    // Every collective, every algorithm, unless the command line narrows it.
    if (!given("collective")) options.collectives = parse_collectives("all", false);
    if (!given("algorithm")) {
      options.algorithms.clear();
      options.all_algorithms = true;
    }
    for (Algorithm algorithm : options.algorithms) {
      if (algorithm == Algorithm::kAuto) {
        throw UsageError(
            "--generate-rules: auto is what the rules decide; name concrete "
            "algorithms with -a/--algorithm, or leave it out for all");
      }
    }
  }
  return parsed;
}

}  // namespace collective::bench
