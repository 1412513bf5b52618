"""Run by tests/blender_export.rs with the venv's python (bpy 4.5).

    blender_scene.py build DIR
        Lays out a shot in Blender as an artist would (objects moved and scaled, transforms not
        applied) and saves DIR/shot.blend, plus DIR/bad_*.blend with one bad property each.
    blender_scene.py obstacles RUN BLEND FRAMES
        Compares RUN/obstacles/frame_N.ply (N = 0..FRAMES, the obstacles as surge simulated
        them) with the obstacle objects' world vertices at Blender frame start + N.
    blender_scene.py verify SCENE.json BLEND
        Compares the exported obstacles, emitters and sinks with the objects in Blender: mesh
        files (moved by their keyframes when animated) against the evaluated world vertices,
        boxes and spheres against the world bounds. Prints the errors as JSON.
"""

import json
import math
import os
import shutil
import sys

import bpy  # first: bmesh and mathutils come with it
import bmesh
import numpy as np
from mathutils import Euler, Matrix, Vector


def purge_blender_tempdir():
    """Deletes the bpy session's temp folder ($TMPDIR/blender_XXXXXX), which Blender's exit
    handlers delete and `os._exit` skips: without this every run left one behind."""
    d = os.path.normpath(bpy.app.tempdir or "")
    if os.path.basename(d).startswith("blender_") and os.path.isdir(d):
        shutil.rmtree(d, ignore_errors=True)


def done(doc):
    print(json.dumps(doc))
    sys.stdout.flush()
    sys.stderr.flush()
    purge_blender_tempdir()
    os._exit(0)


def mesh_object(name, shape, location, scale=(1, 1, 1), rotation=(0, 0, 0)):
    bm = bmesh.new()
    if shape == "cube":
        bmesh.ops.create_cube(bm, size=2.0)
    elif shape == "sphere":
        bmesh.ops.create_uvsphere(bm, u_segments=32, v_segments=16, radius=1.0)
    elif shape == "ico":  # Blender's default ico sphere (its box is not a cube)
        bmesh.ops.create_icosphere(bm, subdivisions=2, radius=1.0)
    elif shape == "cylinder":
        bmesh.ops.create_cone(bm, cap_ends=True, segments=16, radius1=1.0, radius2=1.0,
                              depth=2.0)
    elif shape == "cone":
        bmesh.ops.create_cone(bm, cap_ends=True, segments=12, radius1=1.0, radius2=0.0,
                              depth=2.0)
    me = bpy.data.meshes.new(name)
    bm.to_mesh(me)
    bm.free()
    obj = bpy.data.objects.new(name, me)
    bpy.context.scene.collection.objects.link(obj)
    obj.location, obj.scale = location, scale
    obj.rotation_euler = [math.radians(a) for a in rotation]
    return obj


def build(d):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 11
    scene.render.fps, scene.render.fps_base = 24, 1.0
    dom = mesh_object("Domain", "cube", (0.5, 0.3, 0.4), (0.5, 0.3, 0.4))
    dom["surge"], dom["cell_size"] = "domain", 0.05
    dom.display_type = "WIRE"
    water = mesh_object("Water", "cube", (0.25, 0.3, 0.25), (0.15, 0.2, 0.2))
    water["surge"], water["velocity"] = "liquid", [0.2, 0.0, 0.0]
    ball = mesh_object("Ball", "sphere", (0.75, 0.3, 0.3), (0.12, 0.12, 0.12))
    ball["surge"] = "liquid"
    rock = mesh_object("Rock", "cone", (0.6, 0.3, 0.1), (0.08, 0.1, 0.06), (0, 0, 30))
    rock["surge"], rock["liquid"], rock["friction"] = "obstacle", "outside", 0.5
    dom["friction_z_min"] = "no_slip"  # a rough floor, free-slip sides
    paddle = mesh_object("Paddle", "cube", (0.2, 0.3, 0.6), (0.05, 0.1, 0.02))
    paddle["surge"] = "obstacle"
    for f, x, rz in ((1, 0.2, 0.0), (11, 0.6, 90.0)):
        paddle.location.x = x
        paddle.rotation_euler.z = math.radians(rz)
        paddle.keyframe_insert("location", frame=f)
        paddle.keyframe_insert("rotation_euler", frame=f)
    for fc in paddle.animation_data.action.fcurves if hasattr(
            paddle.animation_data.action, "fcurves") else []:
        for k in fc.keyframe_points:
            k.interpolation = "LINEAR"
    tap = mesh_object("Tap", "sphere", (0.5, 0.3, 0.7), (0.05, 0.05, 0.05))
    tap["surge"], tap["velocity"], tap["start"], tap["end"] = "emitter", [0, 0, -1.0], 3, 8
    inlet = mesh_object("Inlet", "cube", (0.9, 0.45, 0.6), (0.04, 0.04, 0.04))
    inlet["surge"], inlet["velocity"] = "emitter", [-0.5, 0.0, 0.0]
    drain = mesh_object("Drain", "cube", (0.9, 0.3, 0.1), (0.05, 0.05, 0.05))
    drain["surge"] = "sink"
    bpy.ops.wm.save_as_mainfile(filepath=os.path.join(d, "shot.blend"))
    # One bad property per file.
    bads = {
        "cell_size": lambda: dom.__setitem__("cell_size", "abc"),
        "velocity": lambda: water.__setitem__("velocity", [1.0, 2.0]),
        "liquid": lambda: rock.__setitem__("liquid", "sideways"),
        "surge": lambda: drain.__setitem__("surge", "snik"),
        "rotated": lambda: setattr(water, "rotation_euler", (0.0, 0.0, 0.3)),
        "start": lambda: tap.__setitem__("start", "soon"),
        "friction": lambda: dom.__setitem__("friction_z_min", "sticky"),
        "obstacle_friction": lambda: rock.__setitem__("friction", 1.5),
    }
    # A mesh-shaped emitter: the Tap as a cone (written as a mesh file, like obstacles).
    tap_loc = tuple(tap.location)
    bpy.data.objects.remove(tap, do_unlink=True)
    cone = mesh_object("Tap", "cone", tap_loc, (0.05, 0.05, 0.05))
    cone["surge"], cone["velocity"], cone["start"], cone["end"] = "emitter", [0, 0, -1.0], 3, 8
    # ... and a moving sink (keyframed, like the paddle).
    drain.keyframe_insert("location", frame=1)
    drain.location.x = 0.8
    drain.keyframe_insert("location", frame=11)
    bpy.ops.wm.save_as_mainfile(filepath=os.path.join(d, "mesh_emitter.blend"))
    drain.animation_data_clear()
    drain.location.x = 0.9
    # Zero gravity, the Ball as an ico sphere and a cylinder as tall as it is wide beside it (all
    # its vertices at one distance from its centre too, but no sphere).
    bpy.ops.wm.open_mainfile(filepath=os.path.join(d, "shot.blend"), load_ui=False)
    bpy.context.scene.use_gravity = False
    ball = bpy.data.objects["Ball"]
    loc, scale = tuple(ball.location), tuple(ball.scale)
    bpy.data.objects.remove(ball, do_unlink=True)
    mesh_object("Ball", "ico", loc, scale)["surge"] = "liquid"
    mesh_object("Can", "cylinder", (0.3, 0.3, 0.6), (0.05, 0.05, 0.05))["surge"] = "obstacle"
    bpy.ops.wm.save_as_mainfile(filepath=os.path.join(d, "ico_no_gravity.blend"))
    for name, spoil in bads.items():
        bpy.ops.wm.open_mainfile(filepath=os.path.join(d, "shot.blend"), load_ui=False)
        dom, water, rock, drain, tap = (bpy.data.objects[n] for n in (
            "Domain", "Water", "Rock", "Drain", "Tap"))
        spoil()
        bpy.ops.wm.save_as_mainfile(filepath=os.path.join(d, f"bad_{name}.blend"))
    done({"ok": True})


def world_verts(obj):
    dg = bpy.context.evaluated_depsgraph_get()
    ev = obj.evaluated_get(dg)
    return np.array([tuple(ev.matrix_world @ v.co) for v in ev.data.vertices])


def read_ply(path):
    import plyfile
    v = plyfile.PlyData.read(path)["vertex"].data
    return np.stack([v["x"], v["y"], v["z"]], axis=1).astype(np.float64)


def set_error(a, b):
    """Largest distance from a point of `a` to its nearest in `b` and back."""
    d = np.linalg.norm(a[:, None, :] - b[None, :, :], axis=2)
    return float(max(d.min(axis=1).max(), d.min(axis=0).max()))


def verify(scene_path, blend):
    bpy.ops.wm.open_mainfile(filepath=blend, load_ui=False)
    scene = bpy.context.scene
    with open(scene_path) as f:
        doc = json.load(f)
    folder = os.path.dirname(scene_path)
    by_kind = {"obstacles": "obstacle", "emitters": "emitter", "sinks": "sink"}
    report = {}
    for key, kind in by_kind.items():
        objs = sorted((o for o in scene.objects if o.get("surge") == kind), key=lambda o: o.name)
        for obj, entry in zip(objs, doc.get(key, [])):
            errs = []
            if entry["type"] == "mesh":
                local = read_ply(os.path.join(folder, entry["path"]))
                for k in entry.get("keyframes", [{"frame": 0}]):
                    scene.frame_set(scene.frame_start + k["frame"])
                    pts = local
                    if "translate" in k:
                        m = Matrix.Translation(Vector(k["translate"])) @ Euler(
                            [math.radians(a) for a in k["rotate"]], "XYZ").to_matrix().to_4x4()
                        pts = np.array([tuple(m @ Vector(p)) for p in local])
                    errs.append(set_error(pts, world_verts(obj)))
            else:
                scene.frame_set(scene.frame_start)
                w = world_verts(obj)
                if entry["type"] == "box":
                    errs.append(float(max(np.abs(w.min(axis=0) - entry["min"]).max(),
                                          np.abs(w.max(axis=0) - entry["max"]).max())))
                else:
                    r = np.linalg.norm(w - entry["center"], axis=1)
                    errs.append(float(np.abs(r - entry["radius"]).max()))
            report[obj.name] = {"type": entry["type"], "frames": len(errs),
                                "max_error": max(errs)}
    done(report)


def obstacles(run, blend, frames):
    """OUT/obstacles/frame_N.ply (what surge simulated against) against the evaluated world
    vertices of every `surge = "obstacle"` object at Blender frame start + N."""
    bpy.ops.wm.open_mainfile(filepath=blend, load_ui=False)
    scene = bpy.context.scene
    objs = [o for o in scene.objects if o.get("surge") == "obstacle"]
    report = {}
    for n in range(frames + 1):
        scene.frame_set(scene.frame_start + n)
        blender = np.concatenate([world_verts(o) for o in objs])
        ran = read_ply(os.path.join(run, "obstacles", f"frame_{n:04d}.ply"))
        report[str(n)] = {"vertices": len(ran), "blender_vertices": len(blender),
                          "max_error": set_error(ran, blender)}
    done(report)


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(sys.argv[2])
    elif sys.argv[1] == "verify":
        verify(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "obstacles":
        obstacles(sys.argv[2], sys.argv[3], int(sys.argv[4]))
