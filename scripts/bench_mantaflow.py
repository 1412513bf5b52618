"""Benchmark: surge against Blender's Mantaflow FLIP on the same dam break, in one run.

Run from the repository root with a Python that has the `bpy` module (Blender 4.5 as a Python
module, Python 3.11; `bash scripts/setup_python.sh` makes `.venv` and prints its python):

    cargo build --release
    .venv/bin/python scripts/bench_mantaflow.py                 # the whole shot (90 frames, 3 s)
    .venv/bin/python scripts/bench_mantaflow.py --frames 10     # a quick look
    .venv/bin/python scripts/bench_mantaflow.py --frames 5 --keep

What it does, in this order (each timed by wall clock, one after the other, never at once):
1. Mantaflow: builds the scene's dam break in bpy (a liquid domain and a geometry flow box),
   bakes the simulation (`fluid.bake_data`) and then, separately, the meshes
   (`fluid.bake_mesh`), with the cache in a temporary folder.
2. surge: `surge run SCENE -o TMP --overwrite -q` (particles, meshes, previews, checkpoints),
   then the same with meshes and previews off (simulate + particle files + checkpoints).
3. Prints a table: seconds per frame and in total (with the slowest and fastest frame, from
   Mantaflow's cache file times and surge's `stats.jsonl`), the ratios surge / Mantaflow, the
   time steps each took (Mantaflow's counted through its pressure solves), particle counts, and
   a volume check: the volume enclosed by the first and last frames' meshes of both, and
   Mantaflow's own fluid-cell volume (does either lose or gain liquid?), plus the front
   position (largest x of the mesh) at 0.2 s.

The `bpy` 4.5 wheel cannot bake liquids as shipped (its `manta` module's types lack their
inherited methods); `fix_manta_module` below explains and works around it.

The two solvers are set up as alike as their settings allow. Every difference that remains
(and why the chosen setting is the nearest equivalent) is listed in `DIFFERENCES` below and
printed with the table: read it before quoting a ratio.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from bench_io import enclosed_volume, front_x, read_ply_mesh, uni_fluid_cells, uni_particle_count

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DIFFERENCES = """\
Settings, surge -> Mantaflow (nearest equivalent, and why):
- Grid: same cell size and cells per axis; Mantaflow `resolution_max` = the largest axis of
  surge's `resolution` over the same box, so both grids are identical. Both keep one solid
  boundary layer inside the box (surge's wall layer; Mantaflow's closed borders,
  `use_collision_border_*` all on, including the top, which Blender leaves open by default),
  so the liquid region is the same.
- Liquid: the scene's box clipped to the liquid region (what surge seeds) is the flow object
  (`flow_type` LIQUID, `flow_behavior` GEOMETRY: emitted once, `use_initial_velocity` off).
  Both seed 2x2x2 jittered particles per cell (Mantaflow `particle_number` 2, randomness 0.1).
- Particles: Mantaflow is a *narrow-band* FLIP (Ferstl et al. 2016): particles live only within
  `particle_band_width` (default 3) cells of the surface, the deep liquid is a grid level set,
  and particle counts per cell are re-sampled to [`particle_minimum`, `particle_maximum`] =
  [8, 16]. surge keeps every seeded particle for the whole shot. This is Mantaflow's design
  (what users run), so it is kept; `--band N` changes the band. Particle counts are therefore
  not equal; the table prints both.
- Time steps: surge CFL 3, 1..64 substeps per frame, the largest dt with
  (u_max + |g| dt) dt <= 3 h, at most 0.32 sqrt(h / |g|) (`solver.surface_wave_step`).
  Mantaflow: `use_adaptive_timesteps` on, `cfl_condition` 3, `timesteps_min` 1,
  `timesteps_max` 64. Its defaults are CFL 2 but at most 4 steps per frame, a cap that lets a
  fast frame break the CFL bound; with surge's CFL number and cap both solvers are limited by
  the same rule. Mantaflow measures the CFL on the grid's largest velocity, surge on the
  particles' plus a gravity term, so the step counts (printed) still differ.
- FLIP ratio: both 0.95 (Mantaflow's default is 0.97).
- Pressure: surge multigrid-preconditioned CG (MIC(0) until session 8) to relative residual 1e-6 (cap 1000); Mantaflow PCG with MIC
  preconditioner at its built-in accuracy 1e-3 (not exposed in Blender). surge also does a
  second Poisson solve per substep (the density correction).
- Advection: surge RK2 particles; Mantaflow RK4 particles plus semi-Lagrangian grid advection.
- Mesh: surge anisotropic-kernel level set (Yu and Turk 2013; its default `surface.method`) on a
  grid of half the cell size, marching cubes, Taubin smoothing, binary PLY with normals and per-vertex velocities. Mantaflow: its default
  particle level set (`mesh_generator` IMPROVED, default smoothing) at `mesh_scale` 2 (also
  half the cell size), `use_speed_vectors` on (per-vertex velocities), `.bobj.gz` cache.
- Outputs: surge writes particle frames, meshes, previews (PNG) and checkpoints. Mantaflow's
  data bake writes its grids and particles to its cache (`cache_type` MODULAR, format UNI:
  gzip'd raw arrays, readable here without OpenVDB; Blender's default is OpenVDB) with
  `cache_resumable` on: its mesh bake rebuilds the surface from the saved level set, and without
  it the mesh bake sees only the narrow-band particles and makes a hollow shell (measured: 20%
  of the liquid's volume). Resumable caches are also what lets Mantaflow continue a bake, like
  surge's checkpoints. Mantaflow renders no previews. The `simulate only` surge run turns
  meshes and previews off (it still writes particle frames and checkpoints).
- Gravity and frames: the scene's gravity vector (Blender scene gravity); fps and frame count the
  same; surge frame 0 is the initial state and frames 1..N are simulated, Mantaflow bakes its
  cache frames 1..N (its first frame already includes one frame of motion).
- Threads: both use every core (surge rayon, Mantaflow TBB)."""


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scene", default=os.path.join(REPO, "scenes", "dam_break.json"),
                   help="native surge scene with one box source (default: scenes/dam_break.json)")
    p.add_argument("--frames", type=int, default=None,
                   help="frames to simulate in both (default: the scene's `time.frames`, 90 for "
                        "the dam break: about 8 minutes in all on 2 cores shared with other "
                        "jobs, about half that on an idle machine)")
    p.add_argument("--surge", default=os.path.join(REPO, "target", "release", "surge"),
                   help="surge binary (default: target/release/surge; `cargo build --release`)")
    p.add_argument("--band", type=float, default=3.0,
                   help="Mantaflow particle_band_width in cells (default 3, Mantaflow's)")
    p.add_argument("--blender-defaults", action="store_true",
                   help="keep Blender's own CFL (2), steps per frame (1..4) and FLIP ratio "
                        "(0.97) instead of the scene's (what an untuned Blender user gets)")
    p.add_argument("--no-mesh", action="store_true", help="skip Mantaflow's mesh bake")
    p.add_argument("--skip-surge", action="store_true", help="only bake Mantaflow")
    p.add_argument("--keep", action="store_true",
                   help="keep the temporary folder (Mantaflow cache, surge outputs) and print it")
    a = p.parse_args()
    if a.frames is not None and a.frames < 1:
        p.error("--frames must be >= 1")
    return a


# ----------------------------------------------------------------------------------------------
# The scene
# ----------------------------------------------------------------------------------------------

def read_scene(path):
    with open(path) as f:
        text = "\n".join(l for l in f.read().splitlines() if not l.lstrip().startswith("//"))
    s = json.loads(text)
    d = s["domain"]
    lower = np.array(d["lower"], float)
    h = float(d["cell_size"])
    res = np.array(d["resolution"], int)
    upper = lower + h * res
    # Liquid region: inside the one-cell wall layer (surge's convention).
    lo_liq, hi_liq = lower + h, upper - h
    boxes = [src for src in s["sources"] if src.get("type") == "box"]
    if len(boxes) != 1 or len(s["sources"]) != 1:
        sys.exit(f"{path}: this benchmark needs exactly one `box` source")
    b = boxes[0]
    if any(v != 0 for v in b.get("velocity", [0, 0, 0])):
        sys.exit(f"{path}: the box source must start at rest (use_initial_velocity is off)")
    bmin = np.maximum(np.array(b["min"], float), lo_liq)
    bmax = np.minimum(np.array(b["max"], float), hi_liq)
    g = s.get("gravity", [0.0, 0.0, -9.80665])
    t = s.get("time", {})
    return {
        "name": s.get("name", os.path.splitext(os.path.basename(path))[0]),
        "raw": s, "lower": lower, "upper": upper, "h": h, "res": res,
        "box_min": bmin, "box_max": bmax, "gravity": [float(x) for x in g],
        "fps": float(t.get("fps", 30)),
    }


# ----------------------------------------------------------------------------------------------
# Mantaflow
# ----------------------------------------------------------------------------------------------

def box_object(bpy, name, lo, hi):
    """A closed box mesh with world coordinates in its vertices (identity transform)."""
    x0, y0, z0 = (float(v) for v in lo)
    x1, y1, z1 = (float(v) for v in hi)
    verts = [(x0, y0, z0), (x1, y0, z0), (x1, y1, z0), (x0, y1, z0),
             (x0, y0, z1), (x1, y0, z1), (x1, y1, z1), (x0, y1, z1)]
    faces = [(0, 3, 2, 1), (4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6), (3, 0, 4, 7)]
    me = bpy.data.meshes.new(name)
    me.from_pydata(verts, [], faces)
    me.update()
    ob = bpy.data.objects.new(name, me)
    bpy.context.scene.collection.objects.link(ob)
    return ob


class redirect_fd_stdout:
    """Sends C-level stdout (Mantaflow's and Blender's bake messages) to a log file."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        sys.stdout.flush()
        self.saved = os.dup(1)
        self.log = open(self.path, "ab")
        os.dup2(self.log.fileno(), 1)

    def __exit__(self, *exc):
        sys.stdout.flush()
        os.dup2(self.saved, 1)
        os.close(self.saved)
        self.log.close()


# Calls to Mantaflow's pressure solve (one per time step), counted through the stand-in module.
MANTA_CALLS = {"solvePressure": 0}


def fix_manta_module():
    """Works around Mantaflow's Python types missing their inherited methods in the bpy module.

    In the `bpy` Python-module build (not in the Blender program) the `manta` extension module
    is created when `bpy` is imported, before Mantaflow's registry links its classes to their
    base classes (`Pb::WrapperRegistry::construct`, run when the first fluid solver starts). Every
    type then lacks its base class's methods, and the first bake fails with
    `AttributeError: 'LevelsetGrid' object has no attribute 'setConst'` and then aborts the
    process (`terminate ... can't clean grid cache, some grids are still in use`); see
    princeton-vl/infinigen issue 318 for the same failure. The fix: put a stand-in `manta` module
    in `sys.modules` that, on its first use (inside the first solver's start-up, after the
    registry is complete), calls the exported `PyInit_manta_main` again. That rebuilds every
    type in place (the type objects live in the registry) with the inherited methods. The types
    get extra references so that no reference count can ever free these static objects. The
    stand-in also counts the solver's `solvePressure` calls, i.e. its time steps.
    """
    import ctypes
    import types

    real = sys.modules.get("manta")
    if real is None or hasattr(real.LevelsetGrid, "setConst"):
        return  # a build without the problem
    state = {"done": False, "keep": []}

    def rebuild():
        if state["done"]:
            return
        state["done"] = True
        with open("/proc/self/maps") as maps:
            so = next(l.split()[-1] for l in maps if "/bpy/__init__" in l and ".so" in l)
        init = ctypes.PyDLL(so).PyInit_manta_main
        init.restype = ctypes.py_object
        fresh = init()
        state["keep"].append(fresh)
        for name, obj in fresh.__dict__.items():
            if isinstance(obj, type):
                for _ in range(8):
                    ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))
            if not name.startswith("__"):
                setattr(real, name, obj)

    proxy = types.ModuleType("manta")

    def counted_solve_pressure(*args, **kwargs):
        MANTA_CALLS["solvePressure"] += 1
        return real.solvePressure(*args, **kwargs)

    def __getattr__(name):
        rebuild()
        if name == "__all__":
            return [n for n in real.__dict__ if not n.startswith("_")]
        if name == "solvePressure":
            return counted_solve_pressure  # one call per liquid time step: counts the steps
        return getattr(real, name)

    proxy.__getattr__ = __getattr__
    proxy._real = real
    sys.modules["manta"] = proxy


def run_mantaflow(sc, frames, front_frame, band, tmp, with_mesh, blender_defaults=False):
    import bpy

    fix_manta_module()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps = int(round(sc["fps"]))
    scene.render.fps_base = scene.render.fps / sc["fps"]
    scene.frame_start, scene.frame_end = 1, frames
    scene.use_gravity = True
    scene.gravity = sc["gravity"]
    scene.unit_settings.scale_length = 1.0

    dom = box_object(bpy, "domain", sc["lower"], sc["upper"])
    flow = box_object(bpy, "liquid", sc["box_min"], sc["box_max"])

    m = flow.modifiers.new("Fluid", "FLUID")
    m.fluid_type = "FLOW"
    fs = m.flow_settings
    fs.flow_type = "LIQUID"
    fs.flow_behavior = "GEOMETRY"
    fs.flow_source = "MESH"
    fs.use_initial_velocity = False
    fs.use_plane_init = False  # a closed box: fill its volume

    m = dom.modifiers.new("Fluid", "FLUID")
    m.fluid_type = "DOMAIN"
    ds = m.domain_settings
    ds.domain_type = "LIQUID"
    ds.simulation_method = "FLIP"
    ds.resolution_max = int(sc["res"].max())
    for side in ("front", "back", "left", "right", "top", "bottom"):
        setattr(ds, "use_collision_border_" + side, True)
    ds.use_adaptive_timesteps = True
    if not blender_defaults:
        solver = sc["raw"].get("solver", {})
        ds.cfl_condition = float(solver.get("cfl", 3.0))
        ds.timesteps_min = int(solver.get("min_substeps", 1))
        ds.timesteps_max = int(solver.get("max_substeps", 64))
        ds.flip_ratio = float(solver.get("flip_ratio", 0.95))
    out = {"cfl": ds.cfl_condition, "timesteps": (ds.timesteps_min, ds.timesteps_max),
           "flip_ratio": ds.flip_ratio}
    ds.particle_number = 2
    ds.particle_band_width = band
    ds.use_mesh = with_mesh
    ds.mesh_scale = 2
    ds.use_speed_vectors = True  # per-vertex velocities, as surge's PLY has (motion blur)
    ds.cache_type = "MODULAR"
    ds.cache_directory = os.path.join(tmp, "mantaflow")
    ds.cache_frame_start, ds.cache_frame_end = 1, frames
    ds.cache_data_format = "UNI"  # gzip'd raw arrays: particle counts readable without OpenVDB
    ds.cache_mesh_format = "BOBJECT"
    ds.cache_resumable = True

    for ob in bpy.context.scene.objects:
        ob.select_set(ob is dom)
    bpy.context.view_layer.objects.active = dom
    bpy.context.view_layer.update()

    log = os.path.join(tmp, "mantaflow.log")
    out.update({"log": log, "band": band})
    with bpy.context.temp_override(active_object=dom, object=dom, scene=scene):
        with redirect_fd_stdout(log):
            MANTA_CALLS["solvePressure"] = 0
            t = time.perf_counter()
            r = bpy.ops.fluid.bake_data()
            out["data_s"] = time.perf_counter() - t
            out["steps"] = MANTA_CALLS["solvePressure"]
        if r != {"FINISHED"}:
            raise RuntimeError(f"fluid.bake_data returned {r}; see {log}")
        if with_mesh:
            with redirect_fd_stdout(log):
                t = time.perf_counter()
                r = bpy.ops.fluid.bake_mesh()
                out["mesh_s"] = time.perf_counter() - t
            if r != {"FINISHED"}:
                raise RuntimeError(f"fluid.bake_mesh returned {r}; see {log}")

    data_dir = os.path.join(ds.cache_directory, "data")
    names = sorted(os.listdir(data_dir)) if os.path.isdir(data_dir) else []
    pp = [n for n in names if n.startswith("pp_")]
    out["frames_baked"] = len(pp)
    if not pp:
        raise RuntimeError(f"no particle files in {data_dir}: the bake wrote {names[:8]}; see {log}")
    # Per-frame times from the completion times of each frame's particle file.
    stamps = sorted(os.stat(os.path.join(data_dir, n)).st_mtime_ns for n in pp)
    steps = np.diff(np.array(stamps, np.float64)) / 1e9
    out["frame_s_minmax"] = (float(steps.min()), float(steps.max())) if len(steps) else None
    mesh_dir = os.path.join(ds.cache_directory, "mesh")
    if with_mesh and os.path.isdir(mesh_dir):
        ms = sorted(os.stat(os.path.join(mesh_dir, n)).st_mtime_ns for n in os.listdir(mesh_dir)
                    if n.startswith("fluid_mesh_"))
        dm = np.diff(np.array(ms, np.float64)) / 1e9
        out["mesh_frame_s_minmax"] = (float(dm.min()), float(dm.max())) if len(dm) else None
    counts = [uni_particle_count(os.path.join(data_dir, n)) for n in (pp[0], pp[-1])]
    out["particles_first"], out["particles_last"] = counts
    # Mantaflow's own liquid volume: its fluid cells (level set < 0), independent of any mesher.
    flags = [n for n in names if n.startswith("flags_")]
    if flags:
        cells = [uni_fluid_cells(os.path.join(data_dir, n)) for n in (flags[0], flags[-1])]
        out["fluid_cells"] = cells
    out["grid"] = tuple(int(x) for x in ds.domain_resolution) if hasattr(ds, "domain_resolution") else None

    if with_mesh:
        # The last frame's mesh, as Blender places it (object space = world: identity transform).
        volumes = {}
        for fr in sorted({1, front_frame, frames}):
            scene.frame_set(fr)
            dg = bpy.context.evaluated_depsgraph_get()
            ev = dom.evaluated_get(dg)
            me = ev.to_mesh()
            me.calc_loop_triangles()
            nv, nt = len(me.vertices), len(me.loop_triangles)
            co = np.empty(nv * 3, np.float32)
            me.vertices.foreach_get("co", co)
            tri = np.empty(nt * 3, np.int64)
            me.loop_triangles.foreach_get("vertices", tri)
            v, tr = co.reshape(-1, 3), tri.reshape(-1, 3)
            volumes[fr] = (enclosed_volume(v, tr), front_x(v), nv, nt)
            ev.to_mesh_clear()
        out["mesh_first"], out["mesh_last"] = volumes[1], volumes[frames]
        out["mesh_front"] = volumes[front_frame]
    return out


# ----------------------------------------------------------------------------------------------
# surge
# ----------------------------------------------------------------------------------------------

def run_surge(binary, scene_path, frames, front_frame, out_dir, output_overrides=None):
    scene_file = scene_path
    if output_overrides:
        with open(scene_path) as f:
            text = "\n".join(l for l in f.read().splitlines() if not l.lstrip().startswith("//"))
        s = json.loads(text)
        s.setdefault("output", {}).update(output_overrides)
        scene_file = out_dir + ".scene.json"
        with open(scene_file, "w") as f:
            json.dump(s, f, indent=1)
    cmd = [binary, "run", scene_file, "-o", out_dir, "--overwrite", "-q", "--frames", str(frames)]
    t = time.perf_counter()
    subprocess.run(cmd, check=True)
    wall = time.perf_counter() - t
    stats = [json.loads(l) for l in open(os.path.join(out_dir, "stats.jsonl")) if l.strip()]
    sim = [st for st in stats if st["frame"] > 0]
    res = {
        "wall_s": wall,
        "simulate_s": sum(st["seconds"].get("simulate", 0.0) for st in sim),
        "mesh_s": sum(st["seconds"].get("mesh", 0.0) for st in sim),
        "preview_s": sum(st["seconds"].get("preview", 0.0) for st in sim),
        "substeps": sum(st.get("substeps", 0) for st in sim),
        "particles": stats[-1]["particles"],
        "cmd": " ".join(cmd),
    }
    sims = [st["seconds"].get("simulate", 0.0) for st in sim]
    res["frame_s_minmax"] = (min(sims), max(sims)) if sims else None
    mesh_dir = os.path.join(out_dir, "meshes")
    if os.path.isdir(mesh_dir):
        for key, fr in (("mesh_first", 0), ("mesh_front", front_frame), ("mesh_last", frames)):
            p = os.path.join(mesh_dir, f"frame_{fr:04d}.ply")
            if os.path.exists(p):
                v, tr = read_ply_mesh(p)
                res[key] = (enclosed_volume(v, tr), front_x(v), len(v), len(tr))
    return res


# ----------------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------------

def load_note():
    try:
        la = os.getloadavg()
        return f"load average {la[0]:.2f} {la[1]:.2f} {la[2]:.2f} on {os.cpu_count()} cores"
    except OSError:
        return "load average unknown"


def main():
    a = parse_args()
    sc = read_scene(a.scene)
    frames = a.frames if a.frames is not None else int(sc["raw"].get("time", {}).get("frames", 90))
    # Front position compared at 0.2 s (before the wave reaches the far wall), or the last frame.
    front_frame = min(frames, max(1, round(0.2 * sc["fps"])))
    box_vol = float(np.prod(sc["box_max"] - sc["box_min"]))
    tmp = tempfile.mkdtemp(prefix="bench_mantaflow_")
    print(f"scene {a.scene}: grid {tuple(int(r) for r in sc['res'])} cells of {sc['h']} m, "
          f"liquid box {np.round(sc['box_min'], 6).tolist()} .. "
          f"{np.round(sc['box_max'], 6).tolist()} ({box_vol:.5f} m^3), {frames} frames at "
          f"{sc['fps']:g} fps; temp {tmp}")
    print(f"before: {load_note()}", flush=True)
    try:
        if not a.skip_surge and not os.access(a.surge, os.X_OK):
            sys.exit(f"{a.surge}: no surge binary; run `cargo build --release` first")
        print("baking Mantaflow ...", flush=True)
        t = time.perf_counter()
        mf = run_mantaflow(sc, frames, front_frame, a.band, tmp, not a.no_mesh,
                           a.blender_defaults)
        mf_wall = time.perf_counter() - t
        print(f"  done in {mf_wall:.1f} s (set-up and mesh readback included); {load_note()}",
              flush=True)
        runs = []
        if not a.skip_surge:
            print("running surge (all outputs) ...", flush=True)
            runs.append(("surge, all outputs", run_surge(
                a.surge, a.scene, frames, front_frame, os.path.join(tmp, "surge_all"))))
            print(f"  done in {runs[-1][1]['wall_s']:.1f} s; {load_note()}", flush=True)
            print("running surge (meshes and previews off) ...", flush=True)
            runs.append(("surge, simulate only", run_surge(
                a.surge, a.scene, frames, front_frame, os.path.join(tmp, "surge_sim"),
                {"meshes": False, "previews": False})))
            print(f"  done in {runs[-1][1]['wall_s']:.1f} s; {load_note()}", flush=True)
        report(sc, frames, front_frame, box_vol, mf, runs)
    finally:
        if a.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def report(sc, frames, front_frame, box_vol, mf, runs):
    mf_data = mf["data_s"]
    mf_total = mf_data + mf.get("mesh_s", 0.0)
    print()
    print(f"Dam break, {frames} frames ({frames / sc['fps']:.2f} s), grid "
          f"{'x'.join(str(int(r)) for r in sc['res'])}, cell {sc['h']} m; "
          f"Mantaflow baked {mf['frames_baked']} frames with CFL {mf['cfl']:g}, "
          f"{mf['timesteps'][0]}..{mf['timesteps'][1]} steps per frame, FLIP ratio "
          f"{mf['flip_ratio']:.2f}")
    rows = [("Mantaflow data bake (simulate + cache)", mf_data, mf.get("frame_s_minmax"))]
    if "mesh_s" in mf:
        rows.append(("Mantaflow mesh bake", mf["mesh_s"], mf.get("mesh_frame_s_minmax")))
        rows.append(("Mantaflow data + mesh", mf_total, None))
    for name, r in runs:
        rows.append((f"{name} (wall)", r["wall_s"], None))
        rows.append((f"{name}: simulate stage", r["simulate_s"], r["frame_s_minmax"]))
        if r["mesh_s"] > 0:
            rows.append((f"{name}: mesh stage", r["mesh_s"], None))
    print(f"{'what':46} {'total s':>9} {'s/frame':>9} {'min..max s/frame':>18}")
    for name, total, mm in rows:
        mm_s = f"{mm[0]:.3f}..{mm[1]:.3f}" if mm else ""
        print(f"{name:46} {total:9.2f} {total / frames:9.3f} {mm_s:>18}")
    if runs:
        all_, sim = runs[0][1], runs[1][1]
        print()
        print("Ratios surge / Mantaflow (below 1: surge is faster):")
        if "mesh_s" in mf:
            print(f"  everything, wall:        {all_['wall_s'] / mf_total:6.3f}   (surge all "
                  f"outputs {all_['wall_s']:.1f} s / Mantaflow data + mesh {mf_total:.1f} s)")
        print(f"  simulation, wall:        {sim['wall_s'] / mf_data:6.3f}   (surge simulate "
              f"only {sim['wall_s']:.1f} s / Mantaflow data bake {mf_data:.1f} s)")
        print(f"  simulation, solver only: {sim['simulate_s'] / mf_data:6.3f}   (surge's "
              f"simulate stage {sim['simulate_s']:.1f} s / Mantaflow data bake)")
        if "mesh_s" in mf:
            print(f"  meshing:                 {all_['mesh_s'] / mf['mesh_s']:6.3f}   (surge's "
                  f"mesh stage {all_['mesh_s']:.1f} s / Mantaflow mesh bake {mf['mesh_s']:.1f} s)")
        steps = mf.get("steps") or 0
        print(f"  time steps: surge {sim['substeps']} ({sim['substeps'] / frames:.1f} per frame),"
              f" Mantaflow {steps} ({steps / frames:.1f} per frame)"
              + ("" if steps else " (not counted: this bpy needed no module fix)"))
        if steps:
            print(f"  per time step:           {sim['simulate_s'] / sim['substeps'] / (mf_data / steps):6.3f}"
                  f"   (surge {1e3 * sim['simulate_s'] / sim['substeps']:.1f} ms / Mantaflow "
                  f"{1e3 * mf_data / steps:.1f} ms, Mantaflow's including its cache writes)")
    print()
    print("Particles:")
    print(f"  Mantaflow: {mf['particles_first']} in baked frame 1, {mf['particles_last']} in "
          f"frame {frames} (narrow band of {mf['band']:g} cells, re-sampled)")
    if runs:
        print(f"  surge:     {runs[0][1]['particles']} in every frame")
    print()
    print(f"Mesh volume (enclosed; the liquid box is {box_vol:.5f} m^3) and front (largest x of "
          "the mesh):")
    ents = []
    if "mesh_last" in mf:
        ents.append(("Mantaflow", 1, mf))
    if runs and "mesh_last" in runs[0][1]:
        ents.append(("surge", 0, runs[0][1]))
    for name, f0, r in ents:
        first, front, last = r["mesh_first"], r["mesh_front"], r["mesh_last"]
        print(f"  {name:9} frame {f0}: {first[0]:.5f} m^3 ({first[0] / box_vol:6.1%} of the box)"
              f"; frame {frames}: {last[0]:.5f} m^3 ({last[0] / box_vol:6.1%} of the box, "
              f"{last[0] / first[0] - 1:+.2%} since frame {f0}), {last[2]} vertices, "
              f"{last[3]} triangles; front at frame {front_frame} "
              f"(t = {front_frame / sc['fps']:.3f} s): x = {front[1]:.3f} m")
    if mf.get("fluid_cells") and None not in mf["fluid_cells"]:
        c0, c1 = mf["fluid_cells"]
        v0, v1 = c0 * sc["h"] ** 3, c1 * sc["h"] ** 3
        print(f"  Mantaflow's own fluid cells (level set < 0; no mesher involved): frame 1 {c0} "
              f"({v0:.5f} m^3), frame {frames} {c1} ({v1:.5f} m^3, {v1 / v0 - 1:+.2%})")
    print("  (Mantaflow's frame 1 already has one frame of motion, surge's frame 0 none; both")
    print("  frames N are at t = N / fps. Each mesh sits slightly outside its particles, so the")
    print("  first frame's volume exceeds the box by each method's surface offset: compare")
    print("  each solver's change, not the two absolute volumes.)")
    print()
    print(DIFFERENCES)
    print()
    print(f"after: {load_note()}")


if __name__ == "__main__":
    code = 0
    try:
        main()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if not isinstance(e.code, (int, type(None))):
            print(e.code, file=sys.stderr)
    except BaseException:
        import traceback
        traceback.print_exc()
        code = 1
    # Leave without Blender's teardown: freeing the baked Mantaflow solver at interpreter exit
    # aborts in the bpy module (`can't clean grid cache, some grids are still in use`), which
    # would turn a finished benchmark into exit status 134.
    sys.stdout.flush()
    sys.stderr.flush()
    # ... and delete the bpy session's temp folder, which that teardown would have deleted.
    bpy = sys.modules.get("bpy")
    tmp = os.path.normpath(getattr(bpy, "app", None) and bpy.app.tempdir or "")
    if os.path.basename(tmp).startswith("blender_") and os.path.isdir(tmp):
        shutil.rmtree(tmp, ignore_errors=True)
    os._exit(code)
