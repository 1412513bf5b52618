"""Export a shot laid out in Blender as a surge scene (JSON, plus PLY meshes beside it).

Tag objects with the custom property `surge` (Object Properties > Custom Properties):

    surge = "domain"    the simulation box: its world bounds. Optional `cell_size` (m, default
                        the longest side / 64). resolution = ceil(size / cell_size) per axis,
                        counting surge's one-cell wall layer (the liquid lives inside it).
                        Optional `friction` of its walls, 0 (free slip) to 1 (no slip) or
                        'slip' / 'no_slip', and `friction_x_min` ... `friction_z_max` for one
                        face (e.g. a rough floor: `friction_z_min` = 'no_slip').
    surge = "liquid"    liquid at frame 0: an axis-aligned box -> {"type": "box", min, max},
                        a sphere (all vertices at one distance from the centre, e.g. a UV or
                        ico sphere) -> {"type": "sphere", center, radius}. Optional `velocity`
                        [x, y, z] m/s. Other shapes are an error for now.
    surge = "obstacle"  a solid: box or sphere as above, else a mesh written as <name>.ply
                        (binary, world coordinates). Optional `liquid` = "outside" (default,
                        a solid) or "inside" (a container; always written as a mesh), and
                        `friction` as the domain's.
    surge = "emitter"   a shape that adds liquid: `velocity`, `start`/`end` (Blender frames).
                        Box and sphere as above; any other mesh is written as <name>.ply and
                        {"type": "mesh", "path": ...}, the keys obstacles use.
    surge = "sink"      a shape that removes liquid (the same shapes as emitters).
Emitters and sinks may be animated like obstacles (keyframes); an animated emitter's `velocity`
is taken in its own frame at the first frame and turns with it, on top of its own motion.

Blender and surge are both Z-up metres. Object transforms (parents, constraints, modifiers) are
applied: positions are world coordinates of the evaluated object. An object whose world matrix
changes between the scene's first and last frame is animated: it is written as a mesh in its
local frame (scale applied) with "keyframes": [{"frame", "translate", "rotate" (degrees, XYZ
Euler)}] sampled every frame. Surge frame 0 is Blender's start frame; `time.fps` and
`time.frames` come from the Blender scene, `gravity` from its scene gravity.

Obstacles, emitters and sinks are written under `obstacles`, `emitters` and `sinks` (surge
runs the whole scene); `--liquid-only` (formerly `--only-supported`) leaves them out, for a
quick look at the liquid alone.

    blender -b shot.blend -P scripts/blender_export.py -- scene.json [--liquid-only]
    python scripts/blender_export.py -- scene.json --blend shot.blend   (the `bpy` module)

A tagged object with a bad property is an error naming the object and the property.
"""

import argparse
import json
import math
import os
import shutil
import re
import struct
import sys

import bpy

KINDS = ("domain", "liquid", "obstacle", "emitter", "sink")
# Which optional properties each kind reads.
FACES = ("x_min", "x_max", "y_min", "y_max", "z_min", "z_max")
PROPS = {"domain": {"cell_size", "friction"} | {f"friction_{f}" for f in FACES},
         "liquid": {"velocity"}, "obstacle": {"liquid", "friction"},
         "emitter": {"velocity", "start", "end"}, "sink": set()}
ALL_PROPS = set().union(*PROPS.values())
EPS = 1e-6  # relative tolerance of the box and sphere tests


class ExportError(Exception):
    pass


def bad(obj, prop, msg):
    return ExportError(f"object '{obj.name}': property '{prop}': {msg}")


# --- properties ----------------------------------------------------------------------------------

def number(obj, prop, positive=False):
    v = obj[prop]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise bad(obj, prop, f"must be a number, got {v!r}")
    if positive and v <= 0:
        raise bad(obj, prop, f"must be > 0, got {v!r}")
    return float(v)


def friction(obj, prop):
    """A friction property: a number in [0, 1] or the word 'slip' (0) / 'no_slip' (1)."""
    v = obj[prop]
    if isinstance(v, str):
        if v not in ("slip", "no_slip"):
            raise bad(obj, prop, f"must be 0 (free slip) to 1 (no slip), 'slip' or 'no_slip', "
                      f"got {_show(v)}")
        return 0.0 if v == "slip" else 1.0
    f = number(obj, prop)
    if not 0.0 <= f <= 1.0:
        raise bad(obj, prop, f"must be 0 (free slip) to 1 (no slip), got {v!r}")
    return f


def wall_friction(dom):
    """The domain's `friction` (all walls) with its `friction_<face>` overrides, as surge's
    `domain.friction`: one number when the faces agree, else per face; None for free slip."""
    keys = dom.keys()
    base = friction(dom, "friction") if "friction" in keys else 0.0
    faces = {f: friction(dom, f"friction_{f}") if f"friction_{f}" in keys else base
             for f in FACES}
    if len(set(faces.values())) == 1:
        return base if base > 0.0 else None
    return faces


def vector(obj, prop):
    v = obj[prop]
    try:
        vals = [float(x) for x in v] if not isinstance(v, str) else None
    except (TypeError, ValueError):
        vals = None
    if vals is None or len(vals) != 3 or not all(math.isfinite(x) for x in vals):
        raise bad(obj, prop, f"must be 3 numbers [x, y, z] (m/s), got {_show(v)}")
    return vals


def _show(v):
    try:
        return repr(list(v)) if hasattr(v, "__len__") and not isinstance(v, str) else repr(v)
    except TypeError:
        return repr(v)


def check_props(obj, kind):
    for p in obj.keys():
        if p in ALL_PROPS and p not in PROPS[kind]:
            users = [k for k in KINDS if p in PROPS[k]]
            raise bad(obj, p, f"applies to surge = {' or '.join(map(repr, users))} objects, "
                      f"not {kind!r}; remove it or change the tag")


# --- geometry ------------------------------------------------------------------------------------

def world_mesh(obj, depsgraph, matrix=None):
    """(vertices [(x, y, z)], triangles [(i, j, k)]) of the evaluated object, transformed by
    `matrix` (default: its world matrix)."""
    ev = obj.evaluated_get(depsgraph)
    try:
        me = ev.to_mesh()
    except RuntimeError:
        me = None
    if me is None or len(me.vertices) == 0:
        raise ExportError(f"object '{obj.name}': surge = {obj['surge']!r} needs geometry "
                          "(a mesh with vertices)")
    m = ev.matrix_world if matrix is None else matrix
    verts = [tuple(m @ v.co) for v in me.vertices]
    me.calc_loop_triangles()
    tris = [tuple(t.vertices) for t in me.loop_triangles]
    ev.to_mesh_clear()
    return verts, tris


def bounds(verts):
    return ([min(v[i] for v in verts) for i in range(3)],
            [max(v[i] for v in verts) for i in range(3)])


def as_box(verts):
    """(min, max) when every vertex sits on a corner of the bounding box, else None."""
    lo, hi = bounds(verts)
    # Single-float noise: relative to the extent or to the distance from the origin.
    tol = 1e-5 * max(1e-9, max(h - l for l, h in zip(lo, hi)), max(map(abs, lo + hi)))
    if any(h - l <= tol for l, h in zip(lo, hi)):
        return None
    for v in verts:
        if any(abs(v[i] - lo[i]) > tol and abs(v[i] - hi[i]) > tol for i in range(3)):
            return None
    return lo, hi


def as_sphere(verts, tris):
    """(centre, radius) when every vertex is at one distance from the bounding box centre
    (within 1%, a UV sphere's poles and equator; an ico sphere's box is not a cube) and every
    triangle's centroid lies at least 0.78 of it out (an icosahedron's faces 0.79; a cylinder
    as tall as it is wide, whose vertices are also at one distance, 0.75 or less), else None."""
    lo, hi = bounds(verts)
    c = [(a + b) / 2 for a, b in zip(lo, hi)]
    if len(verts) < 12 or not tris:
        return None
    d = [math.dist(v, c) for v in verts]
    r = max(d)
    if r <= 0 or min(d) < 0.99 * r:
        return None
    for t in tris:
        g = [sum(verts[i][a] for i in t) / 3 for a in range(3)]
        if math.dist(g, c) < 0.78 * r:
            return None
    return c, r


def write_ply(path, verts, tris):
    """Binary little-endian PLY: float x y z, uchar/uint triangle lists."""
    head = ("ply\nformat binary_little_endian 1.0\ncomment surge scene mesh (from Blender)\n"
            f"element vertex {len(verts)}\nproperty float x\nproperty float y\n"
            f"property float z\nelement face {len(tris)}\n"
            "property list uchar uint vertex_indices\nend_header\n")
    with open(path, "wb") as f:
        f.write(head.encode("ascii"))
        f.write(b"".join(struct.pack("<3f", *v) for v in verts))
        f.write(b"".join(struct.pack("<B3I", 3, *t) for t in tris))


def safe_name(name):
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def r6(x):
    """Rounded to 1e-6 (m, degrees, s): Blender stores single floats, so 0.6 reads back as
    0.6000000238; a micrometre is far below any cell size."""
    return [round(v, 6) + 0.0 for v in x] if isinstance(x, (list, tuple)) else round(x, 6) + 0.0


# --- objects -------------------------------------------------------------------------------------

class Exporter:
    def __init__(self, scene, out_dir):
        self.scene = scene
        self.out_dir = out_dir
        self.fps = scene.render.fps / scene.render.fps_base
        self.first, self.last = scene.frame_start, scene.frame_end
        self.written = set()

    def depsgraph(self, frame):
        self.scene.frame_set(frame)
        return bpy.context.evaluated_depsgraph_get()

    def matrices(self, obj):
        """World matrix at each Blender frame first..last."""
        out = []
        for f in range(self.first, self.last + 1):
            self.scene.frame_set(f)
            out.append(obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
                       .matrix_world.copy())
        self.scene.frame_set(self.first)
        return out

    def mesh_file(self, obj, verts, tris):
        name = safe_name(obj.name) + ".ply"
        if name in self.written:
            raise ExportError(f"object '{obj.name}': its mesh file {name} clashes with "
                              "another tagged object's; rename one of them")
        self.written.add(name)
        write_ply(os.path.join(self.out_dir, name), verts, tris)
        return name

    def shape(self, obj, allow_mesh=True, liquid=None):
        """Shape keys of a tagged object (box, sphere or mesh; keyframes when animated)."""
        mats = self.matrices(obj)
        animated = any(not _close(m, mats[0]) for m in mats[1:])
        dg = self.depsgraph(self.first)
        if animated:
            loc, rot, scale = mats[0].decompose()
            for f, m in enumerate(mats):
                s = m.decompose()[2]
                if any(abs(a - b) > EPS * max(abs(b), 1e-9) for a, b in zip(s, scale)):
                    raise ExportError(f"object '{obj.name}': its scale is animated (frame "
                                      f"{self.first + f}); surge keyframes hold translation "
                                      "and rotation only: apply the scale animation to the "
                                      "mesh or keep the scale fixed")
            from mathutils import Matrix
            verts, tris = world_mesh(obj, dg, Matrix.Diagonal((*scale, 1.0)))
            keys = []
            for f, m in enumerate(mats):
                t, q, _ = m.decompose()
                e = q.to_euler("XYZ")
                keys.append({"frame": f, "translate": r6(list(t)),
                             "rotate": r6([math.degrees(a) for a in e])})
            out = {"type": "mesh", "path": self.mesh_file(obj, verts, tris)}
            if liquid is not None:
                out["liquid"] = liquid
            out["keyframes"] = keys
            return out
        verts, tris = world_mesh(obj, dg)
        if liquid in (None, "outside"):
            box = as_box(verts)
            if box:
                return {"type": "box", "min": r6(box[0]), "max": r6(box[1])}
            sph = as_sphere(verts, tris)
            if sph:
                return {"type": "sphere", "center": r6(sph[0]), "radius": r6(sph[1])}
        if not allow_mesh:
            raise ExportError(f"object '{obj.name}': surge = 'liquid' must be an axis-aligned "
                              "box or a sphere for now (mesh liquids are not supported); "
                              "use a box or a UV sphere, with rotation 0")
        out = {"type": "mesh", "path": self.mesh_file(obj, verts, tris)}
        if liquid is not None:
            out["liquid"] = liquid
        return out

    def seconds(self, obj, prop, default):
        if prop not in obj.keys():
            return default
        f = number(obj, prop)
        if not self.first <= f <= self.last:
            raise bad(obj, prop, f"frame {f:g} is outside the scene's frames "
                      f"{self.first}..{self.last}")
        return r6((f - self.first) / self.fps)


def _close(a, b):
    return all(abs(a[i][j] - b[i][j]) <= 1e-7 * (1 + abs(b[i][j]))
               for i in range(4) for j in range(4))


def tagged(scene):
    out = {k: [] for k in KINDS}
    for obj in sorted(scene.objects, key=lambda o: o.name):
        if "surge" not in obj.keys():
            continue
        kind = obj["surge"]
        if kind not in KINDS:
            raise bad(obj, "surge", f"must be one of {', '.join(map(repr, KINDS))}, "
                      f"got {kind!r}")
        check_props(obj, kind)
        out[kind].append(obj)
    return out


def export_scene(path, only_supported=False, scene=None):
    """Writes the surge scene for Blender's `scene` (default: the current one) to `path`;
    returns the scene dict."""
    scene = scene or bpy.context.scene
    out_dir = os.path.dirname(os.path.abspath(path))
    os.makedirs(out_dir, exist_ok=True)
    ex = Exporter(scene, out_dir)
    objs = tagged(scene)
    if len(objs["domain"]) != 1:
        names = ", ".join(f"'{o.name}'" for o in objs["domain"]) or "none"
        raise ExportError(f"need exactly one object with surge = 'domain', found {names}")
    dom = objs["domain"][0]
    verts, _ = world_mesh(dom, ex.depsgraph(ex.first))
    lo, hi = r6(bounds(verts)[0]), r6(bounds(verts)[1])
    size = [b - a for a, b in zip(lo, hi)]
    cell = number(dom, "cell_size", positive=True) if "cell_size" in dom.keys() \
        else max(size) / 64
    # Cells to cover the box (the outer layer is surge's wall); 1e-6 absorbs float noise.
    res = [max(3, math.ceil(s / cell - 1e-6)) for s in size]
    doc = {"name": safe_name(os.path.splitext(os.path.basename(path))[0]),
           "domain": {"lower": r6(lo), "cell_size": r6(cell), "resolution": res}}
    walls = wall_friction(dom)
    if walls is not None:
        doc["domain"]["friction"] = walls
    # Blender's gravity switched off is zero gravity (surge's default is -9.80665 along z).
    doc["gravity"] = r6(list(scene.gravity)) if scene.use_gravity else [0.0, 0.0, 0.0]
    sources = []
    for obj in objs["liquid"]:
        s = ex.shape(obj, allow_mesh=False)
        if "keyframes" in s:
            raise ExportError(f"object '{obj.name}': surge = 'liquid' is animated; the liquid "
                              "is where it is at the start frame: remove its animation")
        s["velocity"] = vector(obj, "velocity") if "velocity" in obj.keys() else [0.0] * 3
        sources.append(s)
    if only_supported and not sources:
        raise ExportError("no object with surge = 'liquid': a surge scene needs liquid at "
                          "frame 0")
    doc["sources"] = sources
    doc["time"] = {"fps": r6(ex.fps), "frames": ex.last - ex.first}
    extra = {}
    obstacles = []
    for obj in objs["obstacle"]:
        liquid = obj["liquid"] if "liquid" in obj.keys() else "outside"
        if liquid not in ("inside", "outside"):
            raise bad(obj, "liquid", f"must be 'inside' (a container) or 'outside' (a solid), "
                      f"got {_show(liquid)}")
        obstacles.append(ex.shape(obj, liquid=liquid))
        if obstacles[-1]["type"] != "mesh":
            obstacles[-1].pop("liquid", None)
        if "friction" in obj.keys():
            obstacles[-1]["friction"] = friction(obj, "friction")
    emitters = []
    for obj in objs["emitter"]:
        e = ex.shape(obj)
        e["velocity"] = vector(obj, "velocity") if "velocity" in obj.keys() else [0.0] * 3
        e["start"] = ex.seconds(obj, "start", 0.0)
        e["end"] = ex.seconds(obj, "end", r6((ex.last - ex.first) / ex.fps))
        if e["end"] < e["start"]:
            raise bad(obj, "end", f"frame {obj['end']} is before start {obj['start']}")
        emitters.append(e)
    sinks = [ex.shape(obj) for obj in objs["sink"]]
    extra = {"obstacles": obstacles, "emitters": emitters, "sinks": sinks}
    if only_supported:
        left = [f"{k} ({len(v)})" for k, v in extra.items() if v]
        if left:
            print(f"surge: --liquid-only: left out {', '.join(left)}", file=sys.stderr)
        # Their mesh files too (liquids are boxes or spheres: every file written is theirs).
        for name in ex.written:
            os.remove(os.path.join(ex.out_dir, name))
    else:
        doc.update({k: v for k, v in extra.items() if v})
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    return doc


def main(args):
    ap = argparse.ArgumentParser(prog="blender -b FILE.blend -P scripts/blender_export.py --",
                                 description="Export tagged Blender objects as a surge scene.")
    ap.add_argument("scene", help="the surge scene file to write (JSON); meshes go beside it")
    ap.add_argument("--blend", help="open this .blend first (needed with the bpy module)")
    ap.add_argument("--liquid-only", "--only-supported", dest="only_supported",
                    action="store_true",
                    help="leave out obstacles, emitters and sinks (the liquid alone)")
    a = ap.parse_args(args)
    if a.blend:
        if not os.path.isfile(a.blend):
            ap.error(f"--blend {a.blend}: no such file")
        bpy.ops.wm.open_mainfile(filepath=os.path.abspath(a.blend), load_ui=False)
    try:
        doc = export_scene(a.scene, a.only_supported)
    except ExportError as e:
        print(f"surge: {bpy.data.filepath or 'the open scene'}: {e}", file=sys.stderr)
        return 1
    n = {k: len(doc.get(k, ())) for k in ("sources", "obstacles", "emitters", "sinks")}
    counts = ", ".join(f"{v} {k if v != 1 else k[:-1]}" for k, v in n.items())
    print(f"surge: wrote {os.path.abspath(a.scene)} ({counts}); "
          f"run it: surge run {os.path.abspath(a.scene)}")
    return 0


def purge_blender_tempdir():
    """Deletes the bpy session's temp folder ($TMPDIR/blender_XXXXXX), which Blender's exit
    handlers delete and `os._exit` skips: without this every run left one behind."""
    d = os.path.normpath(bpy.app.tempdir or "")
    if os.path.basename(d).startswith("blender_") and os.path.isdir(d):
        shutil.rmtree(d, ignore_errors=True)


def started_as_script(argv=None):
    """True when this very file was started from the command line (`python THIS -- ...` or
    `blender -P THIS -- ...`), not run from the Text Editor: other `--` arguments are ignored."""
    argv = sys.argv if argv is None else argv
    here = os.path.realpath(globals().get("__file__") or "")
    if not os.path.isfile(here):
        return False
    cands = argv[:1] + [argv[i + 1] for i in range(len(argv) - 1)
                        if argv[i] in ("-P", "--python")]
    return any(os.path.isfile(c) and os.path.realpath(c) == here for c in cands)


if __name__ == "__main__" and started_as_script():
    # The arguments after `--`; without it, Python's own (`python THIS scene.json --blend F`)
    # or, under Blender, none: a usage error rather than silence.
    if "--" in sys.argv:
        args = sys.argv[sys.argv.index("--") + 1:]
    else:
        args = [] if bpy.app.binary_path else sys.argv[1:]
    try:
        code = main(args)
    except SystemExit as e:  # argparse's usage errors (already printed)
        code = e.code if isinstance(e.code, int) else 1
    sys.stdout.flush()
    sys.stderr.flush()
    if not bpy.app.binary_path:
        purge_blender_tempdir()
        os._exit(code)  # the bpy module's shutdown can hang when stdout is a pipe
    elif code:
        sys.exit(code)
