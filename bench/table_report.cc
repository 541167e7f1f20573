// The nccl-tests table: a '#' header describing the run, one line per size
// with out-of-place and in-place columns, and the footer that scripts grep
// ("Out of bounds values", "Avg bus bandwidth").
#include <cstdio>
#include <string>

#include "byte_size.h"
#include "report.h"
#include "speedup_summary.h"

namespace collective::bench {
namespace {

std::string format(const char* pattern, auto... values) {
  char text[512];
  std::snprintf(text, sizeof(text), pattern, values...);
  return text;
}

class TableReporter final : public Reporter {
 public:
  explicit TableReporter(std::ostream& out) : out_(out) {}

  void begin(const RunInfo& info, const BenchOptions& options) override {
    baseline_ = options.baseline_mpi;
    out_ << "# collective_bench: libcollective " << info.version << ", git " << info.git_revision
         << ", NCCL " << (info.with_nccl ? "built in" : "not built") << "\n";
    out_ << "# command: " << info.command_line << "\n";
    out_ << "# started " << info.started_utc << "; MPI: " << info.mpi_library << "\n";
    out_ << "# ranks " << info.ranks << ", nodes " << info.nodes << ", ranks per node ";
    if (info.min_ranks_per_node == info.max_ranks_per_node) {
      out_ << info.min_ranks_per_node;
    } else {
      out_ << info.min_ranks_per_node << " to " << info.max_ranks_per_node;
    }
    out_ << "\n# environment:";
    if (info.environment.empty()) out_ << " no COLLECTIVE_* variables set";
    for (const auto& [name, value] : info.environment) out_ << " " << name << "=" << value;
    out_ << "\n";
    int node = -1;
    for (const RankPlacement& p : info.placements) {
      if (p.node != node) {
        node = p.node;
        int ranks_here = 0;
        for (const RankPlacement& q : info.placements) ranks_here += q.node == node ? 1 : 0;
        out_ << "# node " << node << ": " << p.host << ", " << ranks_here << " ranks, "
             << p.online_cpus << " online CPUs\n";
      }
      out_ << "#   rank " << format("%3d", p.rank) << " pid " << format("%7ld", p.pid) << " on "
           << p.host << " (local rank " << p.local_rank << ") bound to CPUs " << p.cpus << "\n";
    }
    out_ << "# sizes " << format_byte_size(options.min_bytes) << " to "
         << format_byte_size(options.max_bytes);
    if (options.step_factor > 1) {
      out_ << " (x" << options.step_factor << ")";
    } else {
      out_ << " (+" << format_byte_size(options.step_bytes) << ")";
    }
    out_ << ", iters " << options.iters << ", warmup " << options.warmup_iters << ", check "
         << (options.check ? "on" : "off") << ", baseline " << (baseline_ ? "mpi" : "none")
         << (options.deterministic ? ", deterministic" : "") << "\n";
    out_ << "# time: per iteration the slowest rank's, in us; 'time' is the mean, p50 and p99 "
            "percentiles\n";
    out_ << "# algbw = size / time; busbw = algbw x the collective's factor (nccl-tests); "
            "GB = 1e9 bytes\n";
    out_ << "# algorithm: auto:X is AUTO, what a program gets, which ran X; a bare name was "
            "forced with -a\n";
    if (baseline_) {
      out_ << "# mpi: the matching MPI collective on the same buffers, alternating with ours; "
              "speedup = its p50 / our p50\n";
    }
    out_ << "#\n";
    out_.flush();
  }

  void row(const SizeRow& row) override {
    if (!in_collective_section_ || row.collective != collective_) {
      collective_ = row.collective;
      in_collective_section_ = true;
      print_collective_header();
    }
    std::string line = format("%12zu %12zu %9s %6s %5d %24s", row.bytes, row.count,
                              std::string(to_string(row.type)).c_str(), op_name(row.op).c_str(),
                              row.root, label(row).c_str());
    line += placement_columns(row.out_of_place);
    line += placement_columns(row.in_place);
    out_ << line << "\n";
    out_.flush();
  }

  void fusion_row(const FusionRow& row) override {
    if (!in_fusion_section_) {
      in_fusion_section_ = true;
      in_collective_section_ = false;
      print_fusion_header(row.tensors, row.bytes_per_pack);
    }
    std::string algorithm = row.requested == Algorithm::kAuto ? "auto:" : "";
    algorithm += algorithm_name(row.separate_algorithm);
    if (row.fused_algorithm != row.separate_algorithm) {
      algorithm += '/';
      algorithm += algorithm_name(row.fused_algorithm);
    }
    out_ << format(
                "%12zu %12zu %9s %6s %7zu %5zu %28s %11.2f %9.2f %11.2f %9.2f %9.2f %7.2f "
                "%7.2f %8.2f %6s",
                row.tensor_bytes, row.count, std::string(to_string(row.type)).c_str(),
                std::string(to_string(row.op)).c_str(), row.tensors, row.packs, algorithm.c_str(),
                row.separate.mean_us, row.separate.p50_us, row.fused.mean_us, row.fused.p50_us,
                row.fused.p99_us, row.algbw_gbs, row.busbw_gbs, row.speedup,
                wrong_text(row.checked, row.wrong).c_str())
         << "\n";
    out_.flush();
  }

  void note(const std::string& text) override { out_ << "# " << text << "\n"; }

  void end(const RunSummary& summary) override {
    out_ << "# Out of bounds values : " << summary.wrong << " "
         << (summary.wrong == 0 ? "OK" : "FAILED") << "\n";
    out_ << "# Avg bus bandwidth    : " << format("%g", summary.avg_busbw_gbs) << "\n";
    if (summary.avg_baseline_busbw_gbs) {
      out_ << "# Avg MPI bus bandwidth: " << format("%g", *summary.avg_baseline_busbw_gbs) << "\n";
    }
    // AUTO's first: it is what a program gets. The forced rows apart, so
    // that a slow forced algorithm does not read as the library's speed.
    if (summary.auto_speedup) {
      out_ << "# AUTO speed-up over MPI: " << describe(*summary.auto_speedup) << "\n";
    }
    if (summary.forced_speedup) {
      out_ << "# Forced algorithms (-a) speed-up over MPI: " << describe(*summary.forced_speedup)
           << "\n";
    }
    if (summary.min_busbw_gbs) {
      out_ << "# Minimum bus bandwidth: " << format("%g", *summary.min_busbw_gbs) << " "
           << (summary.busbw_ok ? "OK" : "FAILED") << "\n";
    }
    if (summary.rules_file) {
      out_ << "# Wrote " << summary.rules_written << " rules to " << *summary.rules_file << "\n";
    }
    out_ << "#\n";
    out_.flush();
  }

 private:
  static std::string wrong_text(bool checked, std::uint64_t wrong) {
    return checked ? std::to_string(wrong) : std::string("N/A");
  }

  static std::string label(const SizeRow& row) {
    const PlacementResult& first = row.out_of_place.measured ? row.out_of_place : row.in_place;
    std::string text = algorithm_label(row.requested, first.algorithm);
    if (row.out_of_place.measured && row.in_place.measured &&
        row.out_of_place.algorithm != row.in_place.algorithm) {
      text += '/';
      text += to_string(row.in_place.algorithm);
    }
    return text;
  }

  std::string placement_columns(const PlacementResult& p) const {
    if (!p.measured) {
      std::string blank = format("  %9s %9s %9s %7s %7s %6s", "-", "-", "-", "-", "-", "-");
      if (baseline_) blank += format(" %9s %7s", "-", "-");
      return blank;
    }
    std::string text =
        format("  %9.2f %9.2f %9.2f %7.2f %7.2f %6s", p.time.mean_us, p.time.p50_us, p.time.p99_us,
               p.algbw_gbs, p.busbw_gbs, wrong_text(p.checked, p.wrong).c_str());
    if (baseline_) {
      if (p.baseline) {
        text += format(" %9.2f %7.2f", p.baseline->time.mean_us, p.baseline->speedup);
      } else {
        text += format(" %9s %7s", "-", "-");
      }
    }
    return text;
  }

  void print_collective_header() {
    const std::string extra_head = baseline_ ? format(" %9s %7s", "mpi", "speedup") : "";
    const std::string extra_unit = baseline_ ? format(" %9s %7s", "(us)", "") : "";
    const std::string prefix_head = format("#%11s %12s %9s %6s %5s %24s", "size", "count", "type",
                                           "redop", "root", "algorithm");
    const std::string prefix_unit =
        format("#%11s %12s %9s %6s %5s %24s", "(B)", "(elements)", "", "", "", "");
    const std::string placement_head =
        format("  %9s %9s %9s %7s %7s %6s", "time", "p50", "p99", "algbw", "busbw", "#wrong") +
        extra_head;
    const std::string placement_unit =
        format("  %9s %9s %9s %7s %7s %6s", "(us)", "(us)", "(us)", "(GB/s)", "(GB/s)", "") +
        extra_unit;
    // Group labels over their columns.
    std::string groups(prefix_head.size() + 2, ' ');
    groups[0] = '#';
    groups += "out-of-place";
    groups.resize(prefix_head.size() + placement_head.size() + 2, ' ');
    groups += "in-place";
    out_ << "# " << to_string(collective_) << "\n" << groups << "\n";
    out_ << prefix_head << placement_head << placement_head << "\n";
    out_ << prefix_unit << placement_unit << placement_unit << "\n";
  }

  void print_fusion_header(std::size_t tensors, std::size_t bytes_per_pack) {
    out_ << "# fusion: " << tensors
         << " tensors per size through the strategies layer (CollectiveAllReduce, one replica "
            "per rank): reduce() one by one vs one batch_reduce() packing them, bytes_per_pack "
         << bytes_per_pack << (bytes_per_pack == 0 ? " (one pack)" : "") << "\n";
    out_ << "# packs = all-reduces per batch_reduce; algorithm = what the library ran one by one"
            "/packed (none: one rank, no cross-worker call)\n";
    out_ << "# speedup = one-by-one p50 / batch_reduce p50; algbw and busbw of the batch_reduce "
            "over all tensors' bytes\n";
    out_ << format("#%11s %12s %9s %6s %7s %5s %28s %11s %9s %11s %9s %9s %7s %7s %8s %6s",
                   "tensor size", "count", "type", "redop", "tensors", "packs", "algorithm",
                   "one-by-one", "p50", "batched", "p50", "p99", "algbw", "busbw", "speedup",
                   "#wrong")
         << "\n";
    out_ << format("#%11s %12s %9s %6s %7s %5s %28s %11s %9s %11s %9s %9s %7s %7s %8s %6s", "(B)",
                   "(elements)", "", "", "", "", "", "(us)", "(us)", "(us)", "(us)", "(us)",
                   "(GB/s)", "(GB/s)", "", "")
         << "\n";
  }

  std::ostream& out_;
  bool baseline_ = false;
  bool in_collective_section_ = false;
  bool in_fusion_section_ = false;
  CollectiveKind collective_ = CollectiveKind::kAllReduce;
};

}  // namespace

std::unique_ptr<Reporter> make_table_reporter(std::ostream& out) {
  return std::make_unique<TableReporter>(out);
}

}  // namespace collective::bench
