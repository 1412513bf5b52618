"""Import a surge mesh sequence (OUT/meshes/frame_NNNN.ply) into Blender as one animated object.

The object's mesh is swapped on every frame change by a persistent frame-change handler, so one
object in the outliner plays the whole shot. Each frame's mesh gets smooth shading with the
normals stored in the PLY (custom split normals, from the level-set gradient) and a `velocity`
point attribute (FLOAT_VECTOR, m/s per scene unit) from the PLY's `vx vy vz` properties, usable
for motion blur and in geometry nodes. PLY frame N shows at Blender frame N + frame_offset
(default offset 0); before the first and after the last file the nearest file is held.

A frame with no liquid is written by surge as a valid PLY with 0 vertices and 0 faces (which
Blender's own PLY importer rejects); this script shows an empty mesh for it.

Headless (Blender, or Python with the `bpy` module):
    blender -b -P scripts/blender_import.py -- OUT/meshes [--name liquid] [--frame-offset N]
                                                          [--save shot.blend]
From Blender's UI: open this file in the Text Editor and press Run Script, then use
File > Import > "surge mesh sequence", pick the OUT/meshes folder. Or in the Python console:
    import_sequence("/path/to/OUT/meshes")
The script also stores itself in the .blend as a registered text block, so the sequence keeps
playing after reopening the file (when Blender is allowed to run scripts in it).

Axes: PLY coordinates are the scene's (metres, z up by default, as in Blender). A y-up scene's
meshes come in y-up; rotate the object by +90 degrees about X to stand them up.
"""

import os
import re
import sys

import bpy
import numpy as np

HANDLER_NAME = "surge_frame_change"
PROP_DIR = "surge_meshes_dir"
PROP_OFFSET = "surge_frame_offset"
PROP_LOADED = "surge_loaded_frame"
FRAME_RE = re.compile(r"^frame_(\d+)\.ply$")

_PLY_TYPES = {
    "char": "i1", "int8": "i1", "uchar": "u1", "uint8": "u1",
    "short": "<i2", "int16": "<i2", "ushort": "<u2", "uint16": "<u2",
    "int": "<i4", "int32": "<i4", "uint": "<u4", "uint32": "<u4",
    "float": "<f4", "float32": "<f4", "double": "<f8", "float64": "<f8",
}


def read_ply(path):
    """Reads a binary little-endian triangle PLY.

    Returns (positions (N,3) f32, normals (N,3) f32 or None, velocities (N,3) f32 or None,
    triangles (F,3) u32, header comments).
    """
    with open(path, "rb") as f:
        data = f.read()
    end = data.find(b"end_header\n")
    if not data.startswith(b"ply") or end < 0:
        raise ValueError(f"{path}: not a PLY file")
    body = end + len(b"end_header\n")
    lines = data[:end].decode("ascii").splitlines()
    if "format binary_little_endian 1.0" not in lines:
        raise ValueError(f"{path}: only binary_little_endian PLY is supported")
    elements, comments = [], []
    for line in lines:
        w = line.split()
        if not w:
            continue
        if w[0] == "comment":
            comments.append(line[8:])
        elif w[0] == "element":
            elements.append((w[1], int(w[2]), []))
        elif w[0] == "property":
            elements[-1][2].append(w[1:])
    offset = body
    out = {}
    for name, count, props in elements:
        if any(p[0] == "list" for p in props):
            if len(props) != 1:
                raise ValueError(f"{path}: element {name} mixes lists and scalars")
            _, lt, it, pname = props[0]
            dt = np.dtype([("n", _PLY_TYPES[lt]), ("i", _PLY_TYPES[it], 3)])
            arr = np.frombuffer(data, dtype=dt, count=count, offset=offset)
            if count and not np.all(arr["n"] == 3):
                raise ValueError(f"{path}: only triangle faces are supported")
            out[name] = arr["i"].astype(np.uint32)
        else:
            dt = np.dtype([(p[1], _PLY_TYPES[p[0]]) for p in props])
            out[name] = np.frombuffer(data, dtype=dt, count=count, offset=offset)
        offset += dt.itemsize * count
    v = out.get("vertex")
    if v is None:
        raise ValueError(f"{path}: no vertex element")
    names = v.dtype.names

    def cols(keys):
        if all(k in names for k in keys):
            return np.stack([v[k].astype(np.float32) for k in keys], axis=1)
        return None

    pos = cols(("x", "y", "z"))
    tris = out.get("face", np.zeros((0, 3), np.uint32))
    return pos, cols(("nx", "ny", "nz")), cols(("vx", "vy", "vz")), tris, comments


def build_mesh(name, path):
    """A new mesh datablock from one PLY file."""
    pos, nrm, vel, tris, _ = read_ply(path)
    me = bpy.data.meshes.new(name)
    nv, nf = len(pos), len(tris)
    if nv == 0:
        return me
    me.vertices.add(nv)
    me.vertices.foreach_set("co", pos.ravel())
    me.loops.add(3 * nf)
    me.loops.foreach_set("vertex_index", tris.ravel().astype(np.int32))
    me.polygons.add(nf)
    me.polygons.foreach_set("loop_start", np.arange(0, 3 * nf, 3, dtype=np.int32))
    me.update(calc_edges=True)
    me.polygons.foreach_set("use_smooth", np.ones(nf, dtype=bool))
    if nrm is not None:
        me.normals_split_custom_set_from_vertices(nrm)
    if vel is not None:
        attr = me.attributes.new("velocity", "FLOAT_VECTOR", "POINT")
        attr.data.foreach_set("vector", vel.ravel())
    me.update()
    return me


def list_frames(directory):
    """{frame number: path} of the frame_NNNN.ply files in `directory`."""
    frames = {}
    for f in os.listdir(directory):
        m = FRAME_RE.match(f)
        if m:
            frames[int(m.group(1))] = os.path.join(directory, f)
    return frames


def _file_for(obj, scene_frame):
    directory = bpy.path.abspath(obj[PROP_DIR])
    frames = list_frames(directory)
    if not frames:
        return None, None
    f = scene_frame - int(obj.get(PROP_OFFSET, 0))
    keys = sorted(frames)
    f = min(max(f, keys[0]), keys[-1])
    if f not in frames:  # a gap: hold the previous file
        f = max(k for k in keys if k <= f)
    return f, frames[f]


def update_object(obj, scene_frame):
    """Shows the PLY of `scene_frame` on `obj` (no-op when it already does)."""
    f, path = _file_for(obj, scene_frame)
    if path is None or obj.get(PROP_LOADED) == f:
        return
    old = obj.data
    obj.data = build_mesh(f"{obj.name}_{f:04d}", path)
    obj[PROP_LOADED] = f
    if old is not None and old.users == 0:
        bpy.data.meshes.remove(old)


@bpy.app.handlers.persistent
def surge_frame_change(scene, depsgraph=None):
    for obj in scene.objects:
        if PROP_DIR in obj.keys() and obj.type == "MESH":
            update_object(obj, scene.frame_current)


def register_handler():
    handlers = bpy.app.handlers.frame_change_pre
    for h in list(handlers):
        if getattr(h, "__name__", "") == HANDLER_NAME:
            handlers.remove(h)
    handlers.append(surge_frame_change)


def _store_self():
    """Keeps this script in the .blend as a registered text block (runs on file load)."""
    name = "surge_blender_import.py"
    path = globals().get("__file__")
    if name in bpy.data.texts or not path or not os.path.isfile(path):
        return
    txt = bpy.data.texts.new(name)
    with open(path) as f:
        txt.from_string(f.read())
    txt.use_module = True


def import_sequence(directory, name="surge_liquid", frame_offset=0):
    """Imports OUT/meshes as one object; returns it. Sets the scene's frame range."""
    directory = os.path.abspath(bpy.path.abspath(directory))
    frames = list_frames(directory)
    if not frames:
        raise FileNotFoundError(f"{directory}: no frame_NNNN.ply files (is it a surge OUT/meshes folder?)")
    scene = bpy.context.scene
    obj = bpy.data.objects.new(name, bpy.data.meshes.new(name))
    scene.collection.objects.link(obj)
    obj[PROP_DIR] = directory
    obj[PROP_OFFSET] = int(frame_offset)
    scene.frame_start = min(frames) + frame_offset
    scene.frame_end = max(frames) + frame_offset
    register_handler()
    _store_self()
    update_object(obj, scene.frame_current)
    return obj


# --- UI operator ---------------------------------------------------------------------------

class SURGE_OT_import_sequence(bpy.types.Operator):
    """Import a surge OUT/meshes folder as one animated mesh object"""

    bl_idname = "import_scene.surge_sequence"
    bl_label = "Import surge mesh sequence"
    bl_options = {"REGISTER", "UNDO"}

    directory: bpy.props.StringProperty(subtype="DIR_PATH")
    frame_offset: bpy.props.IntProperty(name="Frame offset", default=0)

    def execute(self, context):
        try:
            import_sequence(self.directory, frame_offset=self.frame_offset)
        except (OSError, ValueError) as e:
            self.report({"ERROR"}, str(e))
            return {"CANCELLED"}
        return {"FINISHED"}

    def invoke(self, context, event):
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}


def _menu(self, context):
    self.layout.operator(SURGE_OT_import_sequence.bl_idname, text="surge mesh sequence (folder)")


def register():
    try:
        bpy.utils.register_class(SURGE_OT_import_sequence)
        bpy.types.TOPBAR_MT_file_import.append(_menu)
    except (ValueError, RuntimeError):
        pass  # already registered (script run twice)
    register_handler()


def _main(argv):
    import argparse

    ap = argparse.ArgumentParser(prog="blender -b -P scripts/blender_import.py --")
    ap.add_argument("meshes", help="the run's OUT/meshes folder")
    ap.add_argument("--name", default="surge_liquid", help="object name (default: surge_liquid)")
    ap.add_argument("--frame-offset", type=int, default=0, help="Blender frame of PLY frame 0")
    ap.add_argument("--save", help="save the .blend here")
    a = ap.parse_args(argv)
    obj = import_sequence(a.meshes, a.name, a.frame_offset)
    print(f"surge: imported {a.meshes} as '{obj.name}', frames "
          f"{bpy.context.scene.frame_start}..{bpy.context.scene.frame_end}")
    if a.save:
        bpy.ops.wm.save_as_mainfile(filepath=os.path.abspath(a.save))


register()
if __name__ == "__main__" and "--" in sys.argv:
    _main(sys.argv[sys.argv.index("--") + 1:])
    if not bpy.app.binary_path:
        # Python with the `bpy` module (not the Blender program): its interpreter shutdown
        # can hang when stdout is a pipe, so leave at once once everything is written.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
