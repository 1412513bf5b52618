"""Run by tests/blender_import.rs with the venv's python (bpy 4.5): imports a surge mesh
sequence with scripts/blender_import.py and prints, per frame, what Blender's object holds,
as one JSON document on the last line of stdout."""

import importlib.util
import json
import os
import sys

import bpy
import numpy as np

script, meshes = sys.argv[1], sys.argv[2]
bpy.ops.wm.read_factory_settings(use_empty=True)
spec = importlib.util.spec_from_file_location("surge_blender_import", script)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)

obj = mod.import_sequence(meshes)
scene = bpy.context.scene
files = mod.list_frames(meshes)
frames = []
for f in range(scene.frame_start, scene.frame_end + 1):
    scene.frame_set(f)
    me = obj.data
    nv, nf = len(me.vertices), len(me.polygons)
    rec = {"frame": f, "mesh": me.name, "vertices": nv, "faces": nf,
           "objects": len([o for o in scene.objects if o.type == "MESH"])}
    if nv:
        co = np.empty(3 * nv, np.float32)
        me.vertices.foreach_get("co", co)
        rec["co_sum"] = float(co.astype(np.float64).sum())
        smooth = np.empty(nf, bool)
        me.polygons.foreach_get("use_smooth", smooth)
        rec["all_smooth"] = bool(smooth.all())
        vel = me.attributes.get("velocity")
        rec["velocity"] = None if vel is None else [vel.data_type, vel.domain]
        if vel is not None:
            v = np.empty(3 * nv, np.float32)
            vel.data.foreach_get("vector", v)
            _, nrm, pv, _, _ = mod.read_ply(files[f])
            rec["velocity_max_error"] = float(np.abs(v.reshape(-1, 3) - pv).max())
            # Corner normals against the stored vertex normals.
            cn = np.empty(3 * len(me.loops), np.float32)
            me.corner_normals.foreach_get("vector", cn)
            lv = np.empty(len(me.loops), np.int32)
            me.loops.foreach_get("vertex_index", lv)
            dots = (cn.reshape(-1, 3) * nrm[lv]).sum(axis=1)
            rec["normal_min_dot"] = float(dots.min())
    frames.append(rec)
start, end = scene.frame_start, scene.frame_end
# The UI path: the File > Import operator adds a second sequence object.
bpy.ops.import_scene.surge_sequence(directory=meshes, frame_offset=10)
ui = [o for o in scene.objects if o.type == "MESH" and o.name != obj.name]
scene.frame_set(10)
ui_counts = [len(ui[0].data.vertices), len(ui[0].data.polygons)] if len(ui) == 1 else None
print(json.dumps({"frames": frames, "start": start, "end": end,
                  "ui_object_counts_at_frame_10": ui_counts}))
# bpy-as-a-module's interpreter shutdown can hang when stdout is a pipe: leave at once.
sys.stdout.flush()
os._exit(0)
