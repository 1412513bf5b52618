#!/usr/bin/env python3
"""Scene-file fuzzing: `python3 scripts/fuzz_scene.py [--cases N] [--fields K] [--seed S]`.

Writes a small "kitchen sink" scene that uses every part of the scene format (mesh, box and
sphere obstacles, one keyframed; a keyframed cylinder emitter; a moving sink; an open face;
wall friction; APIC and the ghost-fluid surface; the particle cap; surface and render
settings), then runs `surge run SCENE --frames 1` on copies in which K of its fields (default
1, every field in turn with every hostile value; K > 1: N random picks of K fields) are
replaced by hostile values (0, -1, 1e30, -1e30, 1e-30, 2^40, wrong types, empty and oversized
arrays, null). Each run must end within 60 s (address space capped at 6 GB) with exit status
0, 1 (a clear `error:` message) or 2, and no panic. Prints each failing case and a summary;
exits 1 if any failed. Uses `target/release/surge` (build it first; `--surge BIN` another) and
`inputs/glass.obj`.

Session 28 found two bugs with it (README, "Limits on input"): an emitter far larger than
the domain (capacity overflow / a 36 GB allocation), an emitter keyframed 1e30 m away (an
overflow, then a hung run), both fixed; the runs after the fixes pass (README).
"""
import argparse
import copy
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SURGE = os.path.join(ROOT, "target", "release", "surge")
HOSTILE = [0, -1, 1e30, -1e30, 1e-30, 3.5, 2**40, -(2**40), "", "x", [], [1], [1, 2, 3, 4],
           {}, None, True, [1e30, 1e30, 1e30], [-1e30, 0, 0], [0, 0, 0]]

SCENE = {
    "name": "sink",
    "domain": {"lower": [-0.2, -0.2, 0.0], "cell_size": 0.025, "resolution": [18, 18, 16],
               "friction": {"z_min": "no_slip", "x_max": 0.3}, "boundaries": {"x_max": "open"}},
    "gravity": [0.0, 0.0, -9.8],
    "density": 1000,
    "obstacles": [
        {"type": "box", "min": [-0.05, -0.05, 0.0], "max": [0.05, 0.05, 0.1], "friction": 0.5,
         "keyframes": [{"time": 0.0, "translate": [0.0, 0.0, 0.0]},
                       {"time": 0.1, "translate": [0.05, 0.0, 0.0]}]},
        {"type": "sphere", "center": [0.1, 0.1, 0.2], "radius": 0.04},
        {"type": "mesh", "path": "glass.obj", "liquid": "outside"},
    ],
    "sources": [
        {"type": "box", "min": [-0.2, -0.2, 0.0], "max": [0.0, 0.0, 0.15], "velocity": [0.1, 0, 0]},
        {"type": "sphere", "center": [0.0, 0.1, 0.25], "radius": 0.04},
    ],
    "emitters": [
        {"type": "cylinder", "from": [0.0, 0.0, 0.3], "to": [0.0, 0.0, 0.32], "radius": 0.02,
         "velocity": [0.0, 0.0, -0.6], "start": 0.0, "end": 0.1,
         "keyframes": [{"time": 0, "translate": [0, 0, 0], "rotate": [0, 0, 0]},
                       {"time": 0.05, "translate": [0.05, 0, 0], "rotate": [0, 30, 90]}]},
    ],
    "sinks": [{"type": "box", "min": [0.15, 0.15, 0.0], "max": [0.2, 0.2, 0.05],
               "keyframes": [{"time": 0, "translate": [0, 0, 0]},
                             {"time": 0.1, "translate": [-0.1, 0, 0]}]}],
    "limits": {"max_particles": 200000},
    "seed": 3,
    "solver": {"flip_ratio": 0.95, "cfl": 3, "free_surface": "ghost_fluid", "transfer": "apic",
               "max_particles_per_cell": 24, "volume_correction": 1.0},
    "surface": {"method": "anisotropic", "kernel_radius_factor": 3.2, "cell_size_factor": 0.5,
                "level_set_blur": 1, "smoothing_iterations": 4, "calm_flattening": 50,
                "calm_speed": 0.05},
    "render": {"width": 160, "height": 90, "eye": [1, 1, 1], "target": [0, 0, 0.1],
               "fov_degrees": 35, "sphere_radius": 0.005, "speed_range": [0, 2],
               "show_domain": True, "legend": True},
    "time": {"fps": 30, "frames": 2},
    "output": {"checkpoint_every": 1, "keep_checkpoints": 2, "part_pattern": "fluid.%03d.part"},
}


def leaves(o, path=()):
    yield path
    if isinstance(o, dict):
        for k, v in o.items():
            yield from leaves(v, path + (k,))
    elif isinstance(o, list):
        for i, v in enumerate(o):
            yield from leaves(v, path + (i,))


def replaced(o, path, value):
    o = copy.deepcopy(o)
    cur = o
    for p in path[:-1]:
        cur = cur[p]
    cur[path[-1]] = value
    return o


def cap_memory():
    resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=0, help="0: every field x every value (K = 1)")
    ap.add_argument("--fields", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--surge", default=SURGE, help="the binary to run")
    args = ap.parse_args()
    surge = os.path.abspath(args.surge)
    if not os.path.exists(surge):
        sys.exit(f"{surge} is missing: run `cargo build --release` first")
    work = tempfile.mkdtemp(prefix="surge-fuzz-")
    shutil.copy(os.path.join(ROOT, "inputs", "glass.obj"), work)
    paths = [p for p in leaves(SCENE) if p]
    rng = random.Random(args.seed)
    if args.fields == 1:
        cases = [((p, v),) for p in paths for v in HOSTILE]
        rng.shuffle(cases)
    else:
        cases = [tuple((rng.choice(paths), rng.choice(HOSTILE)) for _ in range(args.fields))
                 for _ in range(args.cases or 1000)]
    if args.cases:
        cases = cases[:args.cases]
    bad = 0
    for case in cases:
        scene = SCENE
        for path, value in case:
            try:
                scene = replaced(scene, path, value)
            except (KeyError, IndexError, TypeError):
                pass  # an earlier replacement removed this field's parent
        with open(os.path.join(work, "case.json"), "w") as f:
            json.dump(scene, f)
        t0 = time.time()
        try:
            r = subprocess.run([surge, "-q", "run", "case.json", "-o", "out", "--overwrite",
                                "--frames", "1"], cwd=work, capture_output=True, text=True,
                               timeout=60, preexec_fn=cap_memory)
            code, err = r.returncode, r.stderr
        except subprocess.TimeoutExpired:
            code, err = "timeout", ""
        if code not in (0, 1, 2) or "panicked" in err or (code == 1 and "error" not in err):
            bad += 1
            print(f"FAILED {case}: exit {code} after {time.time() - t0:.1f} s: {err[:300]!r}",
                  flush=True)
    shutil.rmtree(work, ignore_errors=True)
    print(f"{len(cases)} cases, {bad} failed")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
