#!/usr/bin/python3
"""Charts from collective_bench JSON reports (--format json --output FILE).

One PNG with bus bandwidth against size (one line per algorithm, and Open
MPI's collective dashed when the run had --baseline mpi; at the median time
unless --statistic mean) and, with a baseline, our speed-up over it (ratio
of median times) against size. Several reports (say, 2 and 4
ranks) go on the same axes, labelled by rank count. A --fusion report gives
the packed-over-one-by-one ratio against tensor size instead.

  scripts/plot_bench.py run_np2.json run_np4.json --output docs/images/allreduce.png

Needs matplotlib: Debian's python3 with python3-matplotlib
(scripts/install_deps.sh --with-plot), hence /usr/bin/python3 above.
"""
import argparse
import collections
import json
import os
import statistics
import sys

try:
    import matplotlib
except ImportError:
    # Say what to install rather than print a traceback; exit 2, as for a
    # command line that cannot run.
    print(f"plot_bench: needs matplotlib, which {sys.executable} cannot import.\n"
          "On Debian: apt-get install python3-matplotlib (or bash scripts/install_deps.sh "
          "--with-plot),\nthen run this script as scripts/plot_bench.py (/usr/bin/python3).",
          file=sys.stderr)
    sys.exit(2)

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402


def load(path):
    with open(path) as f:
        report = json.load(f)
    if "header" not in report or "rows" not in report:
        sys.exit(f"plot_bench: {path} is not a collective_bench JSON report")
    return report


def size_label(size):
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale}{unit}"
    return str(size)


def series_name(row):
    return "auto" if row["requested"] == "auto" else row["algorithm"]


def at_statistic(row, prefix, statistic):
    """busbw at the mean time (as reported) or at the median time."""
    busbw = row[prefix + "busbw_gbs"]
    if statistic == "mean" or row[prefix + "p50_us"] <= 0:
        return busbw
    return busbw * row[prefix + "time_us"] / row[prefix + "p50_us"]


def collect(reports, collective, dtype, inplace, statistic):
    """{(prefix, name): {bytes: value}} for busbw, baseline busbw and speed-up."""
    busbw = collections.defaultdict(dict)
    baseline = collections.defaultdict(lambda: collections.defaultdict(list))
    speedup = collections.defaultdict(dict)
    several = len({r["header"]["ranks"] for _, r in reports}) > 1 or len(reports) > 1
    for path, report in reports:
        ranks = report["header"]["ranks"]
        prefix = f"{ranks} ranks: " if several else ""
        for row in report["rows"]:
            if row.get("mode", "collective") != "collective":
                continue
            if row["collective"] != collective or row["dtype"] != dtype:
                continue
            if row["inplace"] != inplace and row["collective"] != "broadcast":
                continue
            key = (prefix, series_name(row))
            busbw[key][row["bytes"]] = at_statistic(row, "", statistic)
            if "baseline_busbw_gbs" in row:
                baseline[prefix][row["bytes"]].append(at_statistic(row, "baseline_", statistic))
                speedup[key][row["bytes"]] = row["speedup"]
    baseline_median = {p: {b: statistics.median(v) for b, v in s.items()}
                       for p, s in baseline.items()}
    return busbw, baseline_median, speedup


# One color per algorithm, one line style per report (rank count).
COLORS = {"auto": "C0", "ring": "C1", "recursive_doubling": "C2", "mpi": "C3",
          "shared_memory": "C4", "hierarchical": "C5", "nccl": "C6"}
STYLES = [("-", "o"), ("-.", "s"), (":", "^"), ((0, (5, 1)), "v")]


def style_of(prefixes, prefix):
    return STYLES[sorted(prefixes).index(prefix) % len(STYLES)]


def plot_lines(axis, series):
    prefixes = {prefix for prefix, _ in series}
    for (prefix, name), points in sorted(series.items()):
        sizes = [s for s in sorted(points) if points[s] > 0]
        linestyle, marker = style_of(prefixes, prefix)
        axis.plot(sizes, [points[s] for s in sizes], color=COLORS.get(name.split()[-1]),
                  linestyle=linestyle, marker=marker, markersize=3, label=f"{prefix}{name}")


def size_axis(axis, sizes):
    axis.set_xscale("log", base=2)
    ticks = sorted(sizes)
    step = max(1, len(ticks) // 10)
    axis.set_xticks(ticks[::step])
    axis.set_xticklabels([size_label(s) for s in ticks[::step]], rotation=45)
    axis.grid(True, which="both", alpha=0.3)


def chart_collective(reports, args):
    header = reports[0][1]["header"]
    rows = [row for _, r in reports for row in r["rows"] if row.get("mode", "collective") == "collective"]
    if not rows:
        return False
    collective = args.collective or rows[0]["collective"]
    dtype = args.dtype or rows[0]["dtype"]
    busbw, baseline, speedup = collect(reports, collective, dtype, args.inplace, args.statistic)
    if not busbw:
        sys.exit(f"plot_bench: no {collective} {dtype} rows to plot")
    with_baseline = bool(baseline)
    figure, axes = plt.subplots(2 if with_baseline else 1, 1, figsize=(9, 8 if with_baseline else 5),
                                squeeze=False)
    top = axes[0][0]
    plot_lines(top, busbw)
    shades = ["black", "dimgray", "darkgray", "silver"]
    for index, (prefix, points) in enumerate(sorted(baseline.items())):
        sizes = [s for s in sorted(points) if points[s] > 0]
        top.plot(sizes, [points[s] for s in sizes], color=shades[index % len(shades)],
                 linestyle="--", marker="x", markersize=4,
                 label=f"{prefix}Open MPI {mpi_call(collective)}")
    all_sizes = {s for points in busbw.values() for s in points}
    size_axis(top, all_sizes)
    top.set_ylabel("bus bandwidth (GB/s)" + (", at the median time" if args.statistic == "p50" else ""))
    if not args.linear:
        top.set_yscale("log")
    placement = "in-place" if args.inplace else "out-of-place"
    title = args.title or (f"{collective} {dtype}, {placement}, {ranks_text(reports)}, "
                           f"libcollective {header['version']} ({header['git_revision']})")
    top.set_title(title, fontsize=10)
    top.legend(fontsize=8)
    if with_baseline:
        bottom = axes[1][0]
        plot_lines(bottom, speedup)
        bottom.axhline(1.0, color="black", linestyle="--", linewidth=1)
        bottom.set_yscale("log", base=2)
        bottom.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(ratio_label))
        size_axis(bottom, all_sizes)
        bottom.set_ylabel(f"speed-up over {mpi_call(collective)} (median time ratio)")
        bottom.set_xlabel("size (bytes)")
        bottom.legend(fontsize=8)
    else:
        top.set_xlabel("size (bytes)")
    figure.tight_layout()
    figure.savefig(args.output, dpi=args.dpi)
    return True


def chart_fusion(reports, args):
    series = collections.defaultdict(dict)
    tensors = set()
    for _, report in reports:
        ranks = report["header"]["ranks"]
        for row in report["rows"]:
            if row.get("mode") != "fusion":
                continue
            tensors.add(row["tensors"])
            series[(f"{ranks} ranks: ", f"{row['dtype']} {series_name(row)}")][row["bytes"]] = row["speedup"]
    if not series:
        return False
    figure, axis = plt.subplots(figsize=(9, 5))
    plot_lines(axis, series)
    axis.axhline(1.0, color="black", linestyle="--", linewidth=1)
    size_axis(axis, {s for points in series.values() for s in points})
    axis.set_xlabel("tensor size (bytes)")
    axis.set_ylabel("one-by-one time / packed time")
    axis.set_title(args.title or f"all_reduce of {sorted(tensors)} tensors: packed vs one by one",
                   fontsize=10)
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(args.output, dpi=args.dpi)
    return True


def ratio_label(value, _position):
    return f"{value:g}x" if value >= 1 else f"1/{1 / value:g}x"


def mpi_call(collective):
    return {"all_reduce": "MPI_Allreduce", "reduce_scatter": "MPI_Reduce_scatter_block",
            "all_gather": "MPI_Allgather", "broadcast": "MPI_Bcast",
            "reduce": "MPI_Reduce"}[collective]


def ranks_text(reports):
    texts = []
    for _, report in reports:
        h = report["header"]
        texts.append(f"{h['ranks']} ranks on {h['nodes']} node{'s' if h['nodes'] != 1 else ''}")
    return ", ".join(dict.fromkeys(texts))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", nargs="+", help="collective_bench --format json files")
    parser.add_argument("--output", "-o", default="bench.png", help="PNG to write")
    parser.add_argument("--collective", help="which collective (default: the first in the report)")
    parser.add_argument("--dtype", help="which type (default: the first in the report)")
    parser.add_argument("--inplace", action="store_true", help="plot in-place rows")
    parser.add_argument("--title", help="chart title")
    parser.add_argument("--linear", action="store_true", help="linear bandwidth axis (default log)")
    parser.add_argument("--statistic", choices=("p50", "mean"), default="p50",
                        help="bus bandwidth at the median time (default, robust to outliers on a "
                             "busy machine) or at the mean time (the table's busbw)")
    parser.add_argument("--dpi", type=int, default=110)
    parser.add_argument("--check", action="store_true",
                        help="fail unless a non-empty PNG was written (for tests)")
    args = parser.parse_args()
    reports = [(path, load(path)) for path in args.reports]
    if not (chart_collective(reports, args) or chart_fusion(reports, args)):
        sys.exit("plot_bench: no rows to plot")
    if args.check:
        with open(args.output, "rb") as f:
            if f.read(8) != b"\x89PNG\r\n\x1a\n" or os.path.getsize(args.output) < 1000:
                sys.exit(f"plot_bench: {args.output} is not a PNG chart")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
