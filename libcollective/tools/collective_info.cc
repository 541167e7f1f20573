// collective_info: the topology the library sees and the algorithm AUTO
// picks for each message size from 8 B to 1 GiB, and why.
//
//   mpirun -np 4 collective_info                 the live job's topology
//   collective_info --topology tests/fixtures/eight_gpu_node.xml --nodes 4 --ranks-per-node 8
//                                                a machine we do not have
//   collective_info --topology cluster.json      a dump (COLLECTIVE_TOPOLOGY_DUMP)
//
// Options: --collective all_reduce  --type float32  --op sum  --memory host|device
//          --min-bytes 8  --max-bytes 1G  --dump FILE (write the topology as JSON)
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "collective/collective.h"
#include "api/communicator_access.h"
#include "core/communicator_state.h"
#include "core/env_params.h"
#include "core/request.h"
#include "cost/cost_model.h"
#include "selection/rules_file.h"
#include "selection/selector.h"

namespace {

using namespace collective;

struct Options {
  std::string topology_file;
  int nodes = 0;
  int ranks_per_node = 0;
  CollectiveKind kind = CollectiveKind::kAllReduce;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  MemoryKind memory = MemoryKind::kHost;
  std::size_t min_bytes = 8;
  std::size_t max_bytes = std::size_t{1} << 30;
  std::string dump;
};

[[noreturn]] void usage(const char* complaint) {
  if (complaint != nullptr) std::fprintf(stderr, "collective_info: %s\n\n", complaint);
  std::fprintf(stderr,
               "usage: [mpirun -np N] collective_info [--topology FILE [--nodes N "
               "--ranks-per-node R]]\n"
               "         [--collective all_reduce] [--type float32] [--op sum] [--memory "
               "host|device]\n"
               "         [--min-bytes 8] [--max-bytes 1G] [--dump FILE]\n"
               "FILE: a topology dump (JSON), hwloc XML, or an hwloc synthetic description.\n");
  std::exit(complaint == nullptr ? 0 : 2);
}

// Exit statuses: 0 done, 1 the library refused (an Error), 2 bad
// arguments, 3 an output could not be written in full.
constexpr int kExitOutputFailed = 3;

// A byte count: digits with an optional K, M or G (powers of 1024); one
// that does not fit in size_t is refused rather than wrapped.
std::size_t parse_bytes(const std::string& option, const std::string& text) {
  const std::string label = option + " " + text;
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  std::size_t multiplier = 1;
  const std::string suffix = text.substr(digits);
  if (suffix == "K" || suffix == "k") multiplier = std::size_t{1} << 10;
  else if (suffix == "M" || suffix == "m") multiplier = std::size_t{1} << 20;
  else if (suffix == "G" || suffix == "g") multiplier = std::size_t{1} << 30;
  else if (!suffix.empty()) digits = 0;
  if (digits == 0) usage((label + ": not a byte count (digits, then K, M or G)").c_str());
  const std::string too_large =
      label + ": more than " + std::to_string(std::numeric_limits<std::size_t>::max()) + " bytes";
  errno = 0;
  const unsigned long long value = std::strtoull(text.substr(0, digits).c_str(), nullptr, 10);
  if (errno == ERANGE || value > std::numeric_limits<std::size_t>::max() / multiplier) {
    usage(too_large.c_str());
  }
  return static_cast<std::size_t>(value) * multiplier;
}

// A whole number for a count option; anything else is refused.
int parse_count(const std::string& option, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || errno == ERANGE || value < 0 ||
      value > std::numeric_limits<int>::max()) {
    usage((option + " " + text + ": not a count").c_str());
  }
  return static_cast<int>(value);
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage((arg + " needs a value").c_str());
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      usage(nullptr);
    } else if (arg == "--topology") {
      options.topology_file = value();
    } else if (arg == "--nodes") {
      options.nodes = parse_count(arg, value());
    } else if (arg == "--ranks-per-node") {
      options.ranks_per_node = parse_count(arg, value());
    } else if (arg == "--collective") {
      const auto kind = parse_collective_kind(value());
      if (!kind) usage("unknown collective");
      options.kind = *kind;
    } else if (arg == "--type") {
      const auto type = parse_data_type(value());
      if (!type) usage("unknown type");
      options.type = *type;
    } else if (arg == "--op") {
      const auto op = parse_reduce_op(value());
      if (!op) usage("unknown op");
      options.op = *op;
    } else if (arg == "--memory") {
      const std::string memory = value();
      if (memory == "host") options.memory = MemoryKind::kHost;
      else if (memory == "device") options.memory = MemoryKind::kDevice;
      else usage("--memory is host or device");
    } else if (arg == "--min-bytes") {
      options.min_bytes = parse_bytes(arg, value());
    } else if (arg == "--max-bytes") {
      options.max_bytes = parse_bytes(arg, value());
    } else if (arg == "--dump") {
      options.dump = value();
    } else {
      usage(("unknown option " + arg).c_str());
    }
  }
  if (options.topology_file.empty() && (options.nodes != 0 || options.ranks_per_node != 0)) {
    usage("--nodes and --ranks-per-node need --topology");
  }
  if (options.min_bytes == 0) options.min_bytes = 1;
  if (options.min_bytes > options.max_bytes) {
    usage(("--min-bytes " + std::to_string(options.min_bytes) + " is more than --max-bytes " +
           std::to_string(options.max_bytes))
              .c_str());
  }
  return options;
}

void print_table(const Options& options, const internal::CommunicatorState& state) {
  const std::size_t element = element_size(options.type);
  std::printf(
      "\nAUTO for %s of %s (%s), %s memory:\n", std::string(to_string(options.kind)).c_str(),
      std::string(to_string(options.type)).c_str(), std::string(to_string(options.op)).c_str(),
      options.memory == MemoryKind::kDevice ? "device" : "host");
  if (internal::env_params().forced_algorithm) {
    std::printf(
        "(COLLECTIVE_ALGORITHM=%s forces every call that asks for AUTO; shown is what "
        "AUTO itself would pick)\n",
        std::string(to_string(*internal::env_params().forced_algorithm)).c_str());
  }
  std::printf("%12s  %-20s %s\n", "bytes", "algorithm", "why");
  for (std::size_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= 2) {
    internal::Request request;
    request.kind = options.kind;
    request.type = options.type;
    request.op = options.op;
    request.memory = options.memory;
    request.count = std::max<std::size_t>(1, bytes / element);
    try {
      const internal::Selection selection = internal::select_algorithm(request, state, true);
      std::printf("%12zu  %-20s %s\n", request.bytes(), selection.algorithm->name(),
                  selection.reason.c_str());
    } catch (const Error& error) {
      std::printf("%12zu  %-20s %s\n", request.bytes(), "(none)", error.cause().c_str());
    }
    if (bytes > options.max_bytes / 2) break;
  }
}

void print_header(const Topology& topology, const std::string& source) {
  std::printf("collective_info: libcollective %s (%s), NCCL %s\n", version_string(), git_revision(),
              built_with_nccl() ? "built in" : "not built");
  std::printf("topology (%s):\n%s", source.c_str(), topology.describe().c_str());
  if (topology.node_count() > 1) {
    std::printf("between nodes: %s\n", internal::describe_network(topology).c_str());
  }
  const internal::RuleSet* rules = internal::process_rules();
  if (rules == nullptr) {
    std::printf("rules: none (COLLECTIVE_RULES_FILE unset)\n");
  } else {
    std::printf("rules: %s, %zu rules\n", rules->origin.c_str(), rules->rules.size());
    for (std::size_t i = 0; i < rules->rules.size(); ++i) {
      std::printf("  rule %zu: %s\n", i, internal::describe_rule(rules->rules[i]).c_str());
    }
  }
}

// Writes the topology to `path`; on any failure (open, write, flush,
// close: a full disk shows at the flush or close) prints what failed with
// errno's text and returns false.
bool dump(const Topology& topology, const std::string& path) {
  if (path.empty()) return true;
  std::FILE* out = std::fopen(path.c_str(), "w");
  if (out == nullptr) {
    std::fprintf(stderr, "collective_info: --dump: cannot open %s (%s)\n", path.c_str(),
                 std::strerror(errno));
    return false;
  }
  const std::string json = topology.to_json();
  int error = 0;
  if (std::fwrite(json.data(), 1, json.size(), out) != json.size()) error = errno;
  if (std::fflush(out) != 0 && error == 0) error = errno;
  if (std::fclose(out) != 0 && error == 0) error = errno;
  if (error != 0) {
    std::fprintf(stderr, "collective_info: --dump: writing %s failed (%s)\n", path.c_str(),
                 std::strerror(error));
    return false;
  }
  std::printf("topology written to %s\n", path.c_str());
  return true;
}

// Whether everything printed reached standard output (a full disk or a
// closed pipe shows at the flush); says so on stderr when not.
bool stdout_complete() {
  const bool failed = std::fflush(stdout) != 0 || std::ferror(stdout) != 0;
  if (failed) {
    std::fprintf(stderr, "collective_info: writing standard output failed (%s)\n",
                 std::strerror(errno != 0 ? errno : EIO));
  }
  return !failed;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  try {
    if (!options.topology_file.empty()) {
      // A machine described by a file: no MPI job needed.
      auto topology = std::make_shared<const Topology>(
          Topology::load(options.topology_file, options.nodes, options.ranks_per_node));
      print_header(*topology, "file " + options.topology_file);
      bool written = dump(*topology, options.dump);
      internal::CommunicatorState state(topology, 0);
      print_table(options, state);
      written = stdout_complete() && written;
      return written ? 0 : kExitOutputFailed;
    }
    Environment environment(argc, argv);
    Communicator world = Communicator::world();
    bool written = true;
    if (world.rank() == 0) {
      print_header(world.topology(), "live, " + std::to_string(world.size()) + " ranks under MPI");
      written = dump(world.topology(), options.dump);
      print_table(options, internal::CommunicatorAccess::state(world));
      written = stdout_complete() && written;
    }
    // Every rank waits for rank 0 here, so a failed write ends the job
    // (rank 0's exit status) without leaving a rank behind.
    world.barrier();
    return written ? 0 : kExitOutputFailed;
  } catch (const Error& error) {
    std::fprintf(stderr, "collective_info: %s\n", error.what());
    return 1;
  }
}
