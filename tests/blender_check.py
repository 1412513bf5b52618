"""Run by tests/blender_import.rs with the venv's python (bpy 4.5). Prints one JSON document on
the last line of stdout; the Rust test compares it with the PLY files surge wrote.

    blender_check.py reopen SHOT.blend WORKDIR
        Opens the .blend with scripts disabled (as a render farm would), swaps the modifier's
        material, steps frames 0..5 and reports each frame's evaluated meshes; exports the liquid
        to Alembic and reads it back per frame; renders one frame with and without the liquid.
    blender_check.py objects SHOT.blend
        The .blend's objects, camera and render engine.
    blender_check.py lined_up SHOT.blend RUN FRAMES
        Opens the .blend with scripts disabled and compares, at every frame 0..FRAMES, the
        liquid's and the obstacles' world-space vertices with RUN's PLYs of that frame.
    blender_check.py unrelated IMPORT_SCRIPT RUN -- ARGS...
        Runs the import script as Blender's Text Editor does (as __main__) while sys.argv holds
        unrelated `--` arguments, then imports RUN through its function.
"""

import json
import os
import shutil
import sys

import bpy
import numpy as np
import plyfile


def purge_blender_tempdir():
    """Deletes the bpy session's temp folder ($TMPDIR/blender_XXXXXX), which Blender's exit
    handlers delete and `os._exit` skips: without this every run left one behind."""
    d = os.path.normpath(bpy.app.tempdir or "")
    if os.path.basename(d).startswith("blender_") and os.path.isdir(d):
        shutil.rmtree(d, ignore_errors=True)


def done(doc):
    print(json.dumps(doc))
    # bpy-as-a-module's interpreter shutdown can hang when stdout is a pipe: leave at once.
    sys.stdout.flush()
    sys.stderr.flush()
    purge_blender_tempdir()
    os._exit(0)


def modifier_inputs(obj):
    mod = obj.modifiers["surge"]
    out = {}
    for item in mod.node_group.interface.items_tree:
        if item.item_type == "SOCKET" and item.in_out == "INPUT":
            v = mod[item.identifier]
            out[item.name] = v.name if hasattr(v, "name") else v
    return out


def evaluated(obj):
    return obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data


def ply_arrays(path):
    v = plyfile.PlyData.read(path)["vertex"].data
    cols = lambda ks: np.stack([v[k] for k in ks], axis=1).astype(np.float32)  # noqa: E731
    return cols("xyz"), cols(("nx", "ny", "nz")), cols(("vx", "vy", "vz"))


def liquid_record(me, folder, frame):
    nv, nf = len(me.vertices), len(me.polygons)
    rec = {"vertices": nv, "faces": nf, "materials": [m.name if m else None for m in me.materials]}
    if nv == 0:
        return rec
    co = np.empty(3 * nv, np.float32)
    me.vertices.foreach_get("co", co)
    co = co.reshape(-1, 3)
    rec["co_sum"] = float(co.astype(np.float64).sum())
    vel = me.attributes.get("velocity")
    rec["velocity"] = None if vel is None else [vel.data_type, vel.domain]
    rec["leftover_attributes"] = [n for n in ("vx", "vy", "vz") if n in me.attributes]
    sharp = [a for a in ("sharp_face", "sharp_edge") if a in me.attributes]
    rec["any_sharp"] = any(bool(np.any([d.value for d in me.attributes[a].data])) for a in sharp)
    path = os.path.join(folder, f"frame_{frame:04d}.ply")
    pos, nrm, pvel = ply_arrays(path)
    rec["position_max_error"] = float(np.abs(co - pos).max())
    if vel is not None:
        v = np.empty(3 * nv, np.float32)
        vel.data.foreach_get("vector", v)
        rec["velocity_max_error"] = float(np.abs(v.reshape(-1, 3) - pvel).max())
    cn = np.empty(3 * len(me.loops), np.float32)
    me.corner_normals.foreach_get("vector", cn)
    lv = np.empty(len(me.loops), np.int32)
    me.loops.foreach_get("vertex_index", lv)
    rec["normal_min_dot"] = float((cn.reshape(-1, 3) * nrm[lv]).sum(axis=1).min())
    return rec


def render_pair(scene, liquid, workdir, frame):
    """Renders `frame` with and without the liquid; compares pixels inside and outside the
    liquid's projected bounding box."""
    from bpy_extras.object_utils import world_to_camera_view
    from mathutils import Vector

    scene.frame_set(frame)
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = 4
    scene.cycles.use_denoising = False
    scene.render.resolution_x, scene.render.resolution_y = 96, 54
    scene.render.resolution_percentage = 100
    scene.render.image_settings.file_format = "PNG"
    pix = {}
    for name, hide in (("with", False), ("without", True)):
        liquid.hide_render = hide
        scene.render.filepath = os.path.join(workdir, f"render_{name}.png")
        bpy.ops.render.render(write_still=True)
        img = bpy.data.images.load(scene.render.filepath)
        a = np.empty(len(img.pixels), np.float32)
        img.pixels.foreach_get(a)
        pix[name] = a.reshape(img.size[1], img.size[0], -1)[:, :, :3]
    liquid.hide_render = False
    ev = liquid.evaluated_get(bpy.context.evaluated_depsgraph_get())
    corners = [world_to_camera_view(scene, scene.camera, liquid.matrix_world @ Vector(c))
               for c in ev.bound_box]
    x0, x1 = min(c.x for c in corners), max(c.x for c in corners)
    y0, y1 = min(c.y for c in corners), max(c.y for c in corners)
    h, w = pix["with"].shape[:2]
    diff = np.abs(pix["with"] - pix["without"]).max(axis=2)
    inside = np.zeros((h, w), bool)  # image rows run bottom-up, as camera-view y
    inside[max(0, int(y0 * h)):min(h, int(np.ceil(y1 * h))),
           max(0, int(x0 * w)):min(w, int(np.ceil(x1 * w)))] = True
    return {"bbox_view": [x0, y0, x1, y1],
            "inside_pixels": int(inside.sum()),
            "inside_changed": float((diff[inside] > 0.05).mean()) if inside.any() else 0.0,
            "background_std": float(pix["without"][inside].std()) if inside.any() else 0.0}


def reopen(blend, workdir):
    bpy.context.preferences.filepaths.use_scripts_auto_execute = False
    bpy.ops.wm.open_mainfile(filepath=blend, load_ui=False, use_scripts=False)
    scene = bpy.context.scene
    liquid = bpy.data.objects["surge_liquid"]
    obstacles = bpy.data.objects.get("surge_obstacles")
    doc = {
        "objects": sorted(o.name for o in bpy.data.objects),
        "handlers": len(bpy.app.handlers.frame_change_pre) + len(bpy.app.handlers.frame_change_post),
        "texts": len(bpy.data.texts),
        "inputs": modifier_inputs(liquid),
        "fps": scene.render.fps / scene.render.fps_base,
        "range": [scene.frame_start, scene.frame_end],
        "camera": scene.camera.name if scene.camera else None,
        "motion_blur": scene.render.use_motion_blur,
        "modifier_types": [m.type for m in liquid.modifiers],
    }
    if obstacles is not None:
        doc["obstacle_inputs"] = modifier_inputs(obstacles)
    # The artist swaps the material: it must hold on every frame.
    glass = bpy.data.materials.new("artist glass")
    mod = liquid.modifiers["surge"]
    for item in mod.node_group.interface.items_tree:
        if item.item_type == "SOCKET" and item.name == "Material":
            mod[item.identifier] = glass
    liquid.update_tag()
    folder = bpy.path.abspath(doc["inputs"]["Folder"])
    frames = []
    for f in range(0, 6):
        scene.frame_set(f)
        rec = liquid_record(evaluated(liquid), folder, f)
        if obstacles is not None:
            me = evaluated(obstacles)
            co = np.empty(3 * len(me.vertices), np.float32)
            me.vertices.foreach_get("co", co)
            rec["obstacle_vertices"] = len(me.vertices)
            rec["obstacle_min"] = co.reshape(-1, 3).min(axis=0).tolist() if len(co) else None
        frames.append(rec)
    doc["frames"] = frames

    # Alembic and USD: what studios hand on. Export the liquid alone, read it back per frame.
    scene.frame_set(0)
    for kind in ("abc", "usd"):
        path = os.path.join(workdir, f"liquid.{kind}")
        for o in bpy.data.objects:
            o.select_set(o is liquid)
        bpy.context.view_layer.objects.active = liquid
        names = set(bpy.data.objects.keys())
        if kind == "abc":
            bpy.ops.wm.alembic_export(filepath=path, start=0, end=5, selected=True,
                                      as_background_job=False)
            bpy.ops.wm.alembic_import(filepath=path)
        else:
            bpy.ops.wm.usd_export(filepath=path, selected_objects_only=True,
                                  export_animation=True, export_materials=False)
            bpy.ops.wm.usd_import(filepath=path)
        new = [bpy.data.objects[n] for n in bpy.data.objects.keys() if n not in names]
        doc[f"{kind}_objects"] = len([o for o in new if o.type == "MESH"])
        per_frame = []
        for f in range(0, 6):
            scene.frame_set(f)
            rec = {}
            for o in new:
                if o.type == "MESH":
                    me = evaluated(o)
                    co = np.empty(3 * len(me.vertices), np.float32)
                    me.vertices.foreach_get("co", co)
                    rec = {"vertices": len(me.vertices),
                           "co_sum": float(co.astype(np.float64).sum())}
            per_frame.append(rec)
        doc[f"{kind}_frames"] = per_frame
        for o in new:
            bpy.data.objects.remove(o, do_unlink=True)
    doc["render"] = render_pair(scene, liquid, workdir, 2)
    done(doc)


def unrelated(script, run):
    before = set(bpy.data.objects.keys())
    # What Run Script in the Text Editor does: execute as __main__, sys.argv untouched.
    g = {"__name__": "__main__", "__file__": script}
    with open(script) as f:
        exec(compile(f.read(), script, "exec"), g)
    ran = set(bpy.data.objects.keys()) != before
    obj = g["import_run"](run, keep_scene=True)
    scene = bpy.context.scene
    scene.frame_set(1)
    doc = {"imported_by_argv": ran, "object": obj.name,
           "vertices_at_1": len(evaluated(obj).vertices),
           "kept_scene": sorted(bpy.data.objects.keys())}
    # File > Import > surge run, with Blender frame 10 showing PLY frame 0.
    names = set(bpy.data.objects.keys())
    res = bpy.ops.import_scene.surge_run(directory=run, frame_offset=10)
    new = [bpy.data.objects[n] for n in bpy.data.objects.keys() if n not in names]
    scene.frame_set(10)
    doc["operator"] = sorted(res)
    doc["operator_objects"] = [o.name for o in new]
    doc["operator_vertices_at_10"] = len(evaluated(new[0]).vertices) if new else None
    done(doc)


def ply_points(path):
    v = plyfile.PlyData.read(path)["vertex"].data
    return np.stack([v["x"], v["y"], v["z"]], axis=1).astype(np.float64)


def world_points(obj):
    ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    me = ev.data
    co = np.empty(3 * len(me.vertices), np.float32)
    me.vertices.foreach_get("co", co)
    co = co.reshape(-1, 3).astype(np.float64)
    m = np.array(ev.matrix_world)
    return co @ m[:3, :3].T + m[:3, 3]


def set_error(a, b):
    """Largest distance from a point of `a` to its nearest in `b` and back (inf if one is
    empty and the other not)."""
    if len(a) == 0 or len(b) == 0:
        return 0.0 if len(a) == len(b) else float("inf")
    d = np.linalg.norm(a[:, None, :] - b[None, :, :], axis=2)
    return float(max(d.min(axis=1).max(), d.min(axis=0).max()))


def objects(blend):
    """The objects of a .blend (opened with scripts disabled) and its scene's camera."""
    bpy.ops.wm.open_mainfile(filepath=blend, load_ui=False, use_scripts=False)
    scene = bpy.context.scene
    done({"objects": sorted(bpy.data.objects.keys()),
          "camera": scene.camera.name if scene.camera else None,
          "engine": scene.render.engine})


def lined_up(blend, run, frames):
    """Opens the .blend with scripts disabled; at every frame 0..FRAMES compares the liquid and
    the obstacles (world space) with RUN's meshes/ and obstacles/ PLYs of that frame."""
    bpy.context.preferences.filepaths.use_scripts_auto_execute = False
    bpy.ops.wm.open_mainfile(filepath=blend, load_ui=False, use_scripts=False)
    scene = bpy.context.scene
    liquid = bpy.data.objects["surge_liquid"]
    obst = bpy.data.objects["surge_obstacles"]
    scene.frame_set(0)
    doc = {"obstacle_modifiers": [m.type for m in obst.modifiers],
           "obstacle_materials": [m.name if m else None for m in evaluated(obst).materials],
           "frames": []}
    for f in range(frames + 1):
        scene.frame_set(f)
        lq = ply_points(os.path.join(run, "meshes", f"frame_{f:04d}.ply"))
        ob = ply_points(os.path.join(run, "obstacles", f"frame_{f:04d}.ply"))
        lw, ow = world_points(liquid), world_points(obst)
        doc["frames"].append({"liquid_vertices": len(lw), "liquid_ply": len(lq),
                              "liquid_error": float(np.abs(lw - lq).max()) if len(lw) and
                              len(lw) == len(lq) else (0.0 if len(lw) == len(lq) else None),
                              "obstacle_vertices": len(ow), "obstacle_error": set_error(ow, ob),
                              "obstacle_min": ow.min(axis=0).tolist() if len(ow) else None})
    done(doc)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "reopen":
        reopen(sys.argv[2], sys.argv[3])
    elif mode == "objects":
        objects(sys.argv[2])
    elif mode == "lined_up":
        lined_up(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif mode == "unrelated":
        unrelated(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(f"unknown mode {mode}")
