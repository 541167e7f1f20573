#!/usr/bin/env python3
"""Runs one of the tf.distribute guide's examples (the command after --) and
checks what it prints.

--losses: the custom training loop must print the guide's 30 losses (seed
004, "Using tf.distribute.Strategy with custom training loops": 20 over the
distributed dataset, then 10 from a fresh iterator), the first bit for bit
and each within MAX_ULPS float32 units in the last place. One ulp is the
precision of the guide's own numbers: they come from TensorFlow's float32
GPU kernels, whose exp and log1p are themselves accurate to about one ulp,
so no host computation reproduces every last bit (correctly rounded losses
on the guide's trajectory differ from 11 of its 30 values by one ulp); a
wrong gradient, learning rate, batch split or loss scaling moves the
sequence by hundreds of ulps within a few steps.

--expect TEXT (repeatable): a line of the output must contain TEXT."""

import argparse
import re
import struct
import subprocess
import sys

GUIDE_LOSSES = [
    "0.18279998", "0.18224256", "0.18168819", "0.1811369", "0.18058868",
    "0.18004347", "0.17950125", "0.178962", "0.17842571", "0.17789237",
    "0.17736195", "0.17683437", "0.17630969", "0.17578785", "0.17526883",
    "0.17475258", "0.17423911", "0.17372845", "0.17322046", "0.1727152",
    # iterator = iter(dist_dataset); for _ in range(10): ...
    "0.17221266", "0.17171277", "0.17121558", "0.17072096", "0.17022902",
    "0.16973962", "0.16925281", "0.1687686", "0.1682869", "0.16780771",
]
MAX_ULPS = 1
LOSS_LINE = re.compile(r"^Tensor\(([-+0-9.eE]+), shape=\(\), dtype=float32\)$")


def float32_bits(text):
    return struct.unpack("<i", struct.pack("<f", float(text)))[0]


def check_losses(lines):
    printed = [m.group(1) for m in (LOSS_LINE.match(line) for line in lines) if m]
    if len(printed) != len(GUIDE_LOSSES):
        return "printed %d losses, the guide has %d" % (len(printed), len(GUIDE_LOSSES))
    worst = 0
    exact = 0
    for step, (got, want) in enumerate(zip(printed, GUIDE_LOSSES)):
        ulps = abs(float32_bits(got) - float32_bits(want))
        if (step == 0 and ulps != 0) or ulps > MAX_ULPS:
            return "step %d: loss %s, the guide's %s (%d float32 ulps apart; allowed %d)" % (
                step, got, want, ulps, 0 if step == 0 else MAX_ULPS)
        worst = max(worst, ulps)
        exact += ulps == 0
    return "OK: %d losses, %d bit for bit, the rest within %d ulp" % (len(printed), exact, worst)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--losses", action="store_true")
    parser.add_argument("--expect", action="append", default=[])
    split = sys.argv.index("--")
    args = parser.parse_args(sys.argv[1:split])
    command = sys.argv[split + 1:]
    print("$ " + " ".join(command), flush=True)
    done = subprocess.run(command, capture_output=True, text=True, timeout=240)
    print(done.stdout + done.stderr, flush=True)
    if done.returncode != 0:
        print("FAIL guide example: exit code %d" % done.returncode)
        return 1
    lines = done.stdout.splitlines()
    for text in args.expect:
        if not any(text in line for line in lines):
            print("FAIL guide example: no line contains %r" % text)
            return 1
    if args.losses:
        verdict = check_losses(lines)
        if not verdict.startswith("OK"):
            print("FAIL guide example: " + verdict)
            return 1
        print(verdict)
    print("PASS guide example")
    return 0


if __name__ == "__main__":
    sys.exit(main())
