#!/usr/bin/env python3
"""Checks that collective_train ends with the same weights under every
strategy (within a float32 bound) and that its loss falls.

usage: check_training_runs.py --reference default.json run.json...

Why the runs may differ at all: every strategy trains on the same global
batches from the same initial weights; only the grouping of the float32 sums
differs (per replica, then across replicas and workers). The bound below
covers exactly that, and is checked in the L2 norm of the weight difference.

Let u = 2^-24, B the global batch, d the features (d+1 weights with the
bias), S the steps, eta the learning rate, F = max(1, max |feature|), W the
largest |weight| either run saw. Per step, the computed gradient of one run
differs from the exact gradient of its weights by at most, per coordinate,

    e = F * (g(B) + g(d+1)/4 * (d+1) * W * F + 8u),     g(n) = n u / (1 - n u)

(summation of B terms each bounded by F/B in any order; the dot product z of
d+1 terms, through the sigmoid's Lipschitz constant 1/4; a few roundings in
sigmoid, subtraction, scaling and product). The logistic loss is convex and
L-smooth with L <= max ||(x, 1)||^2 / 4, so for eta <= 2/L a gradient step is
non-expansive in L2: differences do not grow, they only accumulate. Each
step therefore adds at most 2 eta sqrt(d+1) e (both runs' gradient errors)
plus 2 u sqrt(d+1) (W + eta F) (both runs' rounding of the update), and

    tolerance = S * sqrt(d+1) * (2 eta e + 2 u (W + eta F)).
"""
import argparse
import json
import math
import sys

U = 2.0 ** -24


def gamma(n):
    return n * U / (1 - n * U)


def tolerance(a, b):
    d1 = a["features"] + 1
    f = max(1.0, a["max_abs_feature"], b["max_abs_feature"])
    w = max(a["max_abs_weight"], b["max_abs_weight"])
    eta = a["learning_rate"]
    e = f * (gamma(a["global_batch"]) + gamma(d1) / 4 * d1 * w * f + 8 * U)
    return a["steps"] * math.sqrt(d1) * (2 * eta * e + 2 * U * (w + eta * f))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reference", required=True)
    parser.add_argument("runs", nargs="+")
    args = parser.parse_args()

    reports = {}
    for path in [args.reference] + [p for p in args.runs if p != args.reference]:
        try:
            with open(path) as f:
                reports[path] = json.load(f)
        except (OSError, ValueError) as error:
            print(f"FAILED: cannot read the report {path}: {error}")
            return 1
    ref = reports[args.reference]
    failures = []

    # The non-expansiveness the bound rests on needs eta <= 2/L.
    curvature = ref["max_sq_norm"] / 4
    if ref["learning_rate"] > 2 / curvature:
        failures.append(f"learning rate {ref['learning_rate']} exceeds 2/L = {2 / curvature:.3f}; "
                        "the tolerance would not hold")

    print(f"{'run':<28} {'replicas':>8} {'initial_loss':>14} {'final_loss':>14} "
          f"{'|dw|_2':>10} {'tolerance':>10}")
    for path, run in reports.items():
        name = path.rsplit("/", 1)[-1].removesuffix(".json")
        for key in ("steps", "global_batch", "seed", "learning_rate", "features", "examples"):
            if run[key] != ref[key]:
                failures.append(f"{name}: {key} is {run[key]}, the reference's {ref[key]}")
        if run["num_replicas_in_sync"] != run["num_workers"] * run["local_replicas"]:
            failures.append(f"{name}: num_replicas_in_sync {run['num_replicas_in_sync']} != "
                            f"{run['num_workers']} workers x {run['local_replicas']} local replicas")
        if not run["replicas_identical"]:
            failures.append(f"{name}: the copies of the mirrored variables differ between replicas")
        if not run["final_loss"] < run["initial_loss"] - 0.05:
            failures.append(f"{name}: the loss did not fall ({run['initial_loss']} -> {run['final_loss']})")
        if len(run["weights"]) != len(ref["weights"]):
            failures.append(f"{name}: {len(run['weights'])} weights, the reference has {len(ref['weights'])}")
            continue
        diff = math.sqrt(sum((x - y) ** 2 for x, y in zip(run["weights"], ref["weights"])))
        tol = tolerance(ref, run)
        if not diff <= tol:
            worst = max(range(len(ref["weights"])),
                        key=lambda i: abs(run["weights"][i] - ref["weights"][i]))
            failures.append(f"{name}: weights differ from the reference by {diff:.3g} (L2) > {tol:.3g}; "
                            f"worst index {worst}: expected {ref['weights'][worst]!r}, "
                            f"actual {run['weights'][worst]!r}")
        print(f"{name:<28} {run['num_replicas_in_sync']:>8} {run['initial_loss']:>14.9f} "
              f"{run['final_loss']:>14.9f} {diff:>10.3g} {tol:>10.3g}")

    if failures:
        for failure in failures:
            print("FAILED:", failure)
        return 1
    print(f"{len(reports)} runs agree with the reference")
    return 0


if __name__ == "__main__":
    sys.exit(main())
