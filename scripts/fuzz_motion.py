#!/usr/bin/env python3
"""Violent obstacle motion: `python3 scripts/fuzz_motion.py [--seeds A:B] [--frames F] [--surge BIN]`.

For each seed in A..B (default 0:60) writes a scene of one to three solids (boxes, spheres,
cylinders, the glass of `inputs/glass.obj`; some scaled uniformly or per axis, some spheres
containers, some with friction), most of them keyframed to tumble through a 0.6 x 0.4 x
0.5 m tank at several metres a second (turns of up to 360 degrees in 0.05-0.3 s), with a box
of water under them, and runs `surge run SCENE --frames F -q` (default 10; no meshes or
previews). A run fails when it exits non-zero (the stepper refuses a frame with NaN or
infinite particles), when a pressure solve ran to its iteration cap, or when a scene with
no emitter, sink or open face (and with the volume correction on and adaptive substeps) lost
more than a tenth of its particles; a scene refused
with an error naming the field (`--mix` can draw an emitter inside an obstacle) is counted
apart. Prints each failure, then the count and the fastest particle of the last
frame of each passing run; exits 1 if any failed. Uses `target/release/surge` unless
`--surge` names another binary (to compare two builds on the same scenes). `--mix` also
draws the solver's choices (APIC, ghost fluid, MIC(0), volume correction, CFL, fixed step,
FLIP ratio, frame rate, wall friction), an emitter (sometimes turning), a sink and an open
face; `--brim` fills the tank to the brim (the liquid sealed by the tank's walls, with or
without `--mix`'s open face); `--inside` shrinks each solid to fit the tank and moves its keys
clear of the walls, so no solid crosses them whatever it turns (with `--brim` the room left to
the liquid never changes, and a closed run must keep 97% of its particles); `--keep DIR`
copies each failing scene there.

Session 29 (README, "Obstacles", "Violent moves"): 12 of seeds 0:60 blew up to NaN before
its fixes (slivers of faces nearly covered by a moving solid, sealed pockets with a net
inflow), none after. Session 30: seeds 74, 96, 151 (a cell a moving solid shuts on all six
sides: the multigrid gave it no inverse, every solve ran to its cap) and 17 (a pocket sealed
by the solids: the density correction chased its mean over-density and threw 93% of the
particles into the corners) of seeds 0:160 failed before its fixes, none after.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

# `solver.pressure_max_iterations`' default: a solve that reaches it did not converge.
CAP = 1000
# Share of the particles a closed scene (no emitter, sink or open face) must keep: the
# crowding thins a few per cent where the solids squeeze the liquid; session 30's seed 17 kept
# 7% before its fix (98.7% after).
KEPT = 0.9
# The same with `--brim --inside`: the solids stay clear of the walls, so the room they leave
# the liquid never changes and only the thinning takes particles (session 36: at least 98.3%
# kept over seeds 0:100; with the solids crossing the walls 64-90% in 9 of 40).
KEPT_SEALED = 0.97
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# The tank: its domain, and its interior inside the one-cell wall layer, m.
DOMAIN = {"lower": [0, 0, 0], "cell_size": 0.02, "resolution": [30, 20, 25]}
INTERIOR = ([lo + DOMAIN["cell_size"] for lo in DOMAIN["lower"]],
            [lo + (n - 1) * DOMAIN["cell_size"] for lo, n in zip(DOMAIN["lower"],
                                                                 DOMAIN["resolution"])])
# Distance every `--inside` solid keeps from the tank's walls, m (a cell).
CLEAR = 0.02


def reach(o):
    """Radius about a solid's own origin that holds all of it, m (its transform's scale in)."""
    if o["type"] == "box":
        r = sum(x * x for x in o["max"]) ** 0.5
    elif o["type"] == "sphere":
        r = sum(x * x for x in o["center"]) ** 0.5 + o["radius"]
    elif o["type"] == "cylinder":
        r = max(sum(x * x for x in o[e]) ** 0.5 for e in ("start", "end")) + o["radius"]
    else:
        # inputs/glass.obj: a rim of radius 0.08 m at 0.15 m above its origin.
        r = (0.08 ** 2 + 0.15 ** 2) ** 0.5
    sc = o.get("transform", {}).get("scale", 1.0)
    return r * (max(sc) if isinstance(sc, list) else sc)


def keep_inside(o):
    """`--inside`: shrink a solid to fit the tank and move its keys off the walls, so that it
    stays wholly inside whatever it turns: the room it leaves the liquid never changes."""
    o.pop("liquid", None)
    half = min(h - l for l, h in zip(*INTERIOR)) / 2 - CLEAR
    r = reach(o)
    if r > 0.8 * half:
        t = o.setdefault("transform", {})
        f = 0.8 * half / r
        sc = t.get("scale", 1.0)
        t["scale"] = [x * f for x in sc] if isinstance(sc, list) else sc * f
        r = reach(o)
    # A key's translation puts the solid's origin there (the keys' own or the transform's:
    # the keys replace the transform's translation).
    def clamp(v):
        return [min(max(x, l + r + CLEAR), h - r - CLEAR) for x, l, h in zip(v, *INTERIOR)]
    for k in o.get("keyframes", []):
        if "translate" in k:
            k["translate"] = clamp(k["translate"])
    if "keyframes" not in o or not all("translate" in k for k in o["keyframes"]):
        t = o.setdefault("transform", {})
        t["translate"] = clamp(t.get("translate", [0.3, 0.2, 0.25]))


def scene(seed, mix=False, brim=False, inside=False):
    r = random.Random(seed)
    obs = []
    for _ in range(r.randint(1, 3)):
        t = r.choice(["box", "sphere", "cylinder", "box", "mesh"])
        o = {"type": t}
        if t == "box":
            h = [r.uniform(0.02, 0.15) for _ in range(3)]
            o["min"] = [-x for x in h]
            o["max"] = h
        elif t == "sphere":
            o["center"] = [r.uniform(-0.03, 0.03) for _ in range(3)]
            o["radius"] = r.uniform(0.03, 0.12)
        elif t == "cylinder":
            o["start"] = [0, 0, -r.uniform(0.03, 0.15)]
            o["end"] = [r.uniform(-0.05, 0.05), 0, r.uniform(0.03, 0.15)]
            o["radius"] = r.uniform(0.02, 0.08)
        else:
            o["path"] = os.path.join(ROOT, "inputs", "glass.obj")
        if r.random() < 0.4:
            o["transform"] = {"scale": r.uniform(0.6, 1.6) if r.random() < 0.5
                              else [r.uniform(0.6, 1.6) for _ in range(3)]}
        if t == "mesh":
            o["transform"] = {"scale": r.uniform(1.5, 3.0)}
        if r.random() < 0.8:
            keys, tt = [], 0.0
            for _ in range(r.randint(2, 4)):
                keys.append({"time": tt,
                             "translate": [r.uniform(0.1, 0.5), r.uniform(0.1, 0.3),
                                           r.uniform(0.05, 0.4)],
                             "rotate": [r.uniform(-180, 180) for _ in range(3)]})
                tt += r.uniform(0.05, 0.3)
            o["keyframes"] = keys
        else:
            o.setdefault("transform", {})["translate"] = [
                r.uniform(0.1, 0.5), r.uniform(0.1, 0.3), r.uniform(0.05, 0.4)]
        if r.random() < 0.15 and t == "sphere":
            o["liquid"] = "inside"
            o["radius"] = r.uniform(0.25, 0.4)
            o["keyframes"] = [{"time": 0, "translate": [0.3, 0.2, 0.25]},
                              {"time": 0.3, "translate": [0.33, 0.22, 0.26],
                               "rotate": [0, 0, 90]}]
        if r.random() < 0.3:
            o["friction"] = r.uniform(0, 1)
        obs.append(o)
    if inside:
        for o in obs:
            keep_inside(o)
    top = [r.uniform(0.2, 0.58), 0.38, r.uniform(0.1, 0.3)]
    s = {"name": f"motion{seed}",
         "domain": dict(DOMAIN),
         "obstacles": obs,
         "sources": [{"type": "box", "min": [0.02, 0.02, 0.02], "max": top}],
         "seed": seed, "time": {"fps": 30, "frames": 6},
         "output": {"meshes": False, "previews": False}}
    if mix:
        mix_in(s, r)
    if brim:
        # The closed tank filled to the brim: every piece of the liquid sealed.
        s["sources"] = [{"type": "box", "min": [0, 0, 0], "max": [0.6, 0.4, 0.5]}]
    return s


def mix_in(s, r):
    """`--mix`: the solver's choices, an emitter, a sink and an open face, drawn per seed."""
    solver = {}
    if r.random() < 0.4:
        solver["transfer"] = "apic"
    if r.random() < 0.4:
        solver["free_surface"] = "ghost_fluid"
    if r.random() < 0.3:
        solver["pressure_preconditioner"] = "mic0"
    if r.random() < 0.3:
        solver["volume_correction"] = r.choice([0.0, 0.5])
    if r.random() < 0.3:
        solver["cfl"] = r.uniform(1.0, 8.0)
    if r.random() < 0.2:
        solver["fixed_dt"] = r.choice([1 / 60, 1 / 240])
    if r.random() < 0.2:
        solver["flip_ratio"] = r.uniform(0.0, 1.0)
    s["solver"] = solver
    s["time"]["fps"] = r.choice([24, 30, 60, 120])
    if r.random() < 0.3:
        s["domain"]["friction"] = r.choice(["no_slip", 0.3, {"z_min": "no_slip"}])
    if r.random() < 0.5:
        v = [r.uniform(-3, 3) for _ in range(3)]
        e = {"type": r.choice(["box", "sphere"]), "velocity": v,
             "start": r.uniform(0, 0.1), "end": r.uniform(0.15, 0.4)}
        c = [r.uniform(0.15, 0.45), r.uniform(0.1, 0.3), r.uniform(0.3, 0.4)]
        if e["type"] == "box":
            e["min"] = [x - 0.04 for x in c]
            e["max"] = [x + 0.04 for x in c]
        else:
            e["center"], e["radius"] = c, 0.04
        if r.random() < 0.4:
            e["keyframes"] = [{"time": 0, "rotate": [0, 0, 0]},
                              {"time": 0.3, "rotate": [0, r.uniform(-90, 90), 0]}]
        s["emitters"] = [e]
    if r.random() < 0.3:
        c = [r.uniform(0.1, 0.5), r.uniform(0.1, 0.3), r.uniform(0.03, 0.15)]
        s["sinks"] = [{"type": "sphere", "center": c, "radius": r.uniform(0.03, 0.08)}]
    if r.random() < 0.3:
        s["domain"]["boundaries"] = {r.choice(["x_min", "x_max", "y_max", "z_max"]): "open"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="0:60")
    ap.add_argument("--frames", type=int, default=10)
    ap.add_argument("--mix", action="store_true",
                    help="also draw solver choices, an emitter, a sink and an open face")
    ap.add_argument("--brim", action="store_true",
                    help="fill the tank to the brim (the liquid sealed by its walls)")
    ap.add_argument("--inside", action="store_true",
                    help="keep every solid wholly inside the tank (shrunk to fit, keys off "
                         "the walls): with --brim the liquid's room never changes")
    ap.add_argument("--keep", help="copy each failing scene into this folder")
    ap.add_argument("--each", action="store_true",
                    help="print each run's fastest particle over its frames and in its last")
    ap.add_argument("--surge", default=os.path.join(ROOT, "target", "release", "surge"))
    a = ap.parse_args()
    lo, hi = (int(x) for x in a.seeds.split(":"))
    failed, refused, fastest = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(lo, hi):
            path = os.path.join(tmp, f"s{seed}.json")
            sc = scene(seed, a.mix, a.brim, a.inside)
            with open(path, "w") as f:
                json.dump(sc, f)
            out = os.path.join(tmp, "out")
            p = subprocess.run([a.surge, "run", path, "-o", out, "--overwrite", "-q",
                                "--frames", str(a.frames)], capture_output=True, text=True)
            first = (p.stderr.strip().splitlines() or [""])[0]
            if p.returncode == 1 and "field `" in first:
                # A drawn scene surge refuses with a clear error (say, an emitter wholly
                # inside an obstacle at its start): what it should do, not a failure.
                refused.append(seed)
                print(f"seed {seed}: refused: {first[:160]}")
                continue
            def fail(why):
                failed.append(seed)
                print(f"seed {seed}: {why}")
                if a.keep:
                    os.makedirs(a.keep, exist_ok=True)
                    shutil.copy(path, a.keep)

            if p.returncode != 0:
                fail(f"exit {p.returncode}: {first[:160]}")
                continue
            with open(os.path.join(out, "stats.jsonl")) as f:
                frames = [json.loads(line) for line in f]
            kept = frames[-1]["particles"] / max(frames[0]["particles"], 1)
            if a.each:
                most = max(s["max_speed"] for s in frames)
                print(f"seed {seed}: fastest {most:.1f} m/s, last frame "
                      f"{frames[-1]['max_speed']:.1f} m/s, {100 * kept:.1f}% of the "
                      f"particles kept")
            capped = [s["frame"] for s in frames if s["pressure_iterations_max"] >= CAP]
            if capped:
                fail(f"a pressure solve ran to its cap of {CAP} iterations in frames {capped}")
                continue
            # A closed scene, with the volume correction on and CFL-adaptive substeps: with
            # the correction off or a fixed step (far over the CFL limit beside solids moving
            # at metres a second) particles crowd, and the thinning of crowded cells takes
            # them, as it should.
            solver = sc.get("solver", {})
            closed = not (sc.get("emitters") or sc.get("sinks") or sc["domain"].get("boundaries")
                          or solver.get("volume_correction", 1) == 0 or "fixed_dt" in solver)
            if closed and kept < (KEPT_SEALED if a.brim and a.inside else KEPT):
                fail(f"{100 * (1 - kept):.1f}% of the particles lost with nothing to take them out")
                continue
            fastest.append(frames[-1]["max_speed"])
    n = hi - lo
    print(f"{len(failed)} of {n} runs failed, {len(refused)} scenes refused with an error naming "
          f"the field; fastest particle of the last frame, passing runs: "
          f"max {max(fastest, default=0):.1f} m/s, median "
          f"{sorted(fastest)[len(fastest) // 2] if fastest else 0:.1f} m/s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
