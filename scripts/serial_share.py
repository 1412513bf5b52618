#!/usr/bin/env python3
"""Serial share of the stepper, counted in instructions (noise-free), and Amdahl's bound.

Reads a callgrind profile of `cargo bench --bench bench_stepper` (any thread count; with
`--separate-threads=yes`, give the output's prefix: every `PREFIX-NN` file is read) and counts
the instructions the frame loop (`surge::sim::Simulation::advance_frame_in_pool`, or the closure of
`advance_frame` it is inlined into) runs outside
any rayon parallel region: everything below a function whose name mentions rayon (the
iterator plumbing, `join`, `in_worker`; `rayon_core::scope`, which only runs the frame on a
worker, excepted) is parallel, everything else serial. A function called from several places
has its cost split in proportion to each call's inclusive cost (callgrind keeps no full
stacks). With `s` the serial share of the work, Amdahl's law bounds the speed-up on `n`
threads by `1 / (s + (1 - s) / n)`: the bound a serial tail allows, before memory bandwidth,
load imbalance and synchronisation, which it does not see.

The work `W` is the frame loop's instructions; in a profile with several threads give it with
`--work` (the frame loop's instructions of a 1-thread profile of the same frames, in millions),
since the other workers' counts include the spinning of `src/sim/awake.rs`. The serial share
depends on the thread count where a stage's plan does (the multigrid smoother's wavefront,
`src/sim/pressure/multigrid/slabs.rs`, runs serially on 1 thread): profile with the thread count
the bound is for.

Example (1M-particle dam break, 3 frames, about a minute per thread count):

    cargo bench --bench bench_stepper --no-run   # prints the binary, target/release/deps/bench_stepper-HASH
    RAYON_NUM_THREADS=2 BENCH_SKIP_TUTORIAL=1 BENCH_DAM_PEER=0 BENCH_COMPARE_PRECONDITIONERS=0 \\
      BENCH_DAM_FRAMES=3 valgrind --tool=callgrind --separate-threads=yes \\
      --callgrind-out-file=/tmp/cg2.out target/release/deps/bench_stepper-HASH
    python3 scripts/serial_share.py /tmp/cg2.out --work 10086
"""

import argparse
import collections
import glob
import os
import re
import sys

# The frame loop: its own function, or (where the compiler inlines it into the pool's job) the
# closure `advance_frame` runs on the pool.
ROOTS = (
    "surge::sim::Simulation::advance_frame_in_pool",
    "surge::sim::Simulation::advance_frame::{{closure}}::{{closure}}",
)
SUBSTEP = "surge::sim::substep::substep"


class Profile:
    """Exclusive costs and call edges (inclusive cost per caller and callee) of one file."""

    def __init__(self, path):
        names = {}
        self.excl = collections.Counter()
        self.edges = collections.defaultdict(collections.Counter)
        fn = callee = None
        pending = False

        def name(spec):
            m = re.match(r"\((\d+)\)(?: (.*))?", spec)
            if m.group(2) is not None:
                names[m.group(1)] = m.group(2)
            return names[m.group(1)]

        with open(path) as f:
            for line in f:
                line = line.rstrip("\n")
                if line.startswith("fn="):
                    fn = name(line[3:])
                elif line.startswith("cfn="):
                    callee = name(line[4:])
                elif line.startswith("calls="):
                    pending = True
                elif line[:1].isdigit() or line[:1] in "+-*":
                    parts = line.split()
                    if len(parts) < 2:
                        continue
                    cost = int(parts[1])
                    if pending:
                        self.edges[fn][callee] += cost
                        pending = False
                    else:
                        self.excl[fn] += cost
        fns = set(self.excl) | set(self.edges)
        self.incl = {
            f: self.excl[f] + sum(v for g, v in self.edges[f].items() if g != f) for f in fns
        }

    def serial_below(self, root, skip=lambda f: False):
        """Serial exclusive cost per function reached from `root` without entering a
        parallel region (nor a function `skip` names)."""
        blocked = lambda g: parallel(g) or skip(g)
        order, seen = [], set()
        stack = [(root, iter(self.edges[root]))]
        seen.add(root)
        while stack:  # post-order DFS without recursion
            f, it = stack[-1]
            for g in it:
                if g not in seen and g != f and not blocked(g):
                    seen.add(g)
                    stack.append((g, iter(self.edges[g])))
                    break
            else:
                order.append(f)
                stack.pop()
        frac = collections.Counter({root: 1.0})
        ser = collections.Counter()
        for f in reversed(order):
            fr = frac[f]
            ser[f] += fr * self.excl[f]
            for g, v in self.edges[f].items():
                if g != f and not blocked(g) and self.incl.get(g):
                    frac[g] += fr * v / self.incl[g]
        return ser


def parallel(f):
    return "rayon" in f and "rayon_core::scope" not in f


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("profile", help="callgrind output file, or the prefix of per-thread files")
    ap.add_argument("--work", type=float, help="the work W, millions of instructions")
    ap.add_argument("--top", type=int, default=8, help="serial functions to list")
    a = ap.parse_args()
    # callgrind leaves an empty PREFIX beside the per-thread PREFIX-NN files.
    paths = sorted(glob.glob(glob.escape(a.profile) + "-[0-9]*")) or [a.profile]
    paths = [p for p in paths if os.path.isfile(p)]
    if not paths:
        sys.exit(f"no callgrind output at {a.profile}")
    serial = collections.Counter()
    stage = collections.Counter()
    loop = 0.0
    for p in paths:
        prof = Profile(p)
        root = next((r for r in ROOTS if r in prof.incl), None)
        if root is None:
            continue
        loop += prof.incl[root]
        serial.update(prof.serial_below(root))
        # The serial instructions under each call of the frame loop and of the substep.
        for parent in (root, SUBSTEP):
            for g, v in prof.edges[parent].items():
                if g in (root, SUBSTEP) or parallel(g) or not prof.incl.get(g):
                    continue
                s = sum(prof.serial_below(g).values()) * v / prof.incl[g]
                stage[g] += s
    if loop == 0:
        sys.exit(f"no frame loop ({' or '.join(ROOTS)}) in {a.profile}")
    if len(paths) > 1 and a.work is None:
        sys.exit("several threads: give the work with --work (a 1-thread profile's frame loop)")
    work = a.work * 1e6 if a.work else loop
    total = sum(serial.values())
    s = total / work
    print(f"frame loop {loop / 1e6:.1f} M instructions on the thread(s) running it; work {work / 1e6:.1f} M")
    print(f"serial (outside parallel regions): {total / 1e6:.1f} M = {100 * s:.3f}% of the work")
    for n in (2, 16):
        print(f"  Amdahl bound on {n} threads: {1 / (s + (1 - s) / n):.2f}x")
    press = sum(v for g, v in stage.items() if "sim::pressure::" in g)
    rest = total - press
    r = rest / work
    print(
        f"  of which under src/sim/pressure {press / 1e6:.1f} M; elsewhere {rest / 1e6:.2f} M = "
        f"{100 * r:.3f}% (alone: bound {1 / (r + (1 - r) / 2):.3f}x on 2, "
        f"{1 / (r + (1 - r) / 16):.2f}x on 16 threads)"
    )
    print("serial instructions per call of the frame loop and the substep, M:")
    for g, v in stage.most_common():
        if v >= 0.01e6:
            print(f"  {v / 1e6:10.2f}  {g[:110]}")
    print("top serial functions (exclusive), M:")
    for g, v in serial.most_common(a.top):
        print(f"  {v / 1e6:10.2f}  {g[:110]}")


if __name__ == "__main__":
    main()
