"""Import a surge run into Blender as a script-free Geometry Nodes mesh sequence.

One object, `surge_liquid`, carries a Geometry Nodes modifier whose node tree reads the PLY of
the current frame itself:

    Scene Time (frame) - offset -> round -> clamp to [first, last]
      -> Format String "{folder}frame_{frame:04}.ply" -> Import PLY
      -> Store Named Attribute `velocity` (FLOAT_VECTOR, point) = (vx, vy, vz)
      -> Remove Named Attribute vx, vy, vz -> Set Material -> Group Output

No frame-change handler and no Python at render time: a saved .blend plays, renders and exports
(Alembic, USD) on a machine that does not trust scripts (render farms, Flamenco workers), and
the material set on the modifier survives every frame change. Import PLY keeps the PLY's normals
as custom normals (smooth shading from the level-set gradient). `velocity` is in m/s, what
Cycles reads for motion blur (it scales by shutter / fps). Rounding the frame makes motion-blur
subframes read the centre frame's file, so their topology matches. A frame with no liquid is a
PLY with 0 vertices: Import PLY logs "failed importing, no vertices" and yields empty geometry.

The folder is stored relative to the .blend (`//...`) when the .blend is saved next to or above
the run folder (`--save`), so the project folder can be moved. The modifier's inputs (Folder,
Frame Offset, First/Last Frame, Material) can be edited in the Properties editor.

The scene's fps and frame range come from the run's `scene.json`; PLY frame N shows at Blender
frame N + offset (default 0), the first/last file is held outside the run. A fresh scene gets a
camera framing the liquid region, a sun, a floor, a grey world and Cycles with motion blur (the
default cube, camera and light are removed); `--keep-scene` adds the sequence to the open .blend
instead. When the run has `obstacles/frame_NNNN.ply` (scenes with obstacles), they come in as
one mesh object, `surge_obstacles`, with a grey material: a plain mesh (frame 0's PLY, stored in
the .blend) when no obstacle moves (the run's scene.json lists none with keyframes), else a
second sequence with the same node tree, so the obstacles line up with the liquid in every
frame.

Headless (Blender, or Python with the `bpy` module):
    blender -b -P scripts/blender_import.py -- RUN [--save shot.blend] [--render FRAME out.png]
        [--keep-scene] [--frame-offset N] [--samples N] [--resolution W H] [--blend FILE.blend]
RUN is the run folder (or its meshes/ folder). From Blender's UI: open this file in the Text
Editor, Run Script, then File > Import > "surge run (folder)". Arguments after `--` are read only
when this file itself was started with `-P`/`--python`, so other `--` arguments are ignored.

Axes: PLY coordinates are the scene's (metres, z up by default, as in Blender).
"""

import argparse
import json
import math
import os
import shutil
import sys

import bpy
from mathutils import Vector

GROUP_NAME = "surge mesh sequence"
LIQUID = "surge_liquid"
OBSTACLES = "surge_obstacles"
PATTERN = "{folder}frame_{frame:04}.ply"
# Modifier inputs, in the node group's interface order.
INPUTS = [
    ("Folder", "NodeSocketString"),
    ("Frame Offset", "NodeSocketInt"),
    ("First Frame", "NodeSocketInt"),
    ("Last Frame", "NodeSocketInt"),
    ("Material", "NodeSocketMaterial"),
]


class RunError(Exception):
    """A run folder that cannot be imported (the message names the path and the fix)."""


def frame_numbers(folder):
    """Sorted frame numbers of the frame_NNNN.ply files in `folder`."""
    out = []
    for name in os.listdir(folder):
        if name.startswith("frame_") and name.endswith(".ply") and name[6:-4].isdigit():
            out.append(int(name[6:-4]))
    return sorted(out)


def find_run(path):
    """(run folder, meshes folder) for a run folder or its meshes/ folder."""
    path = os.path.abspath(bpy.path.abspath(path))
    if not os.path.isdir(path):
        raise RunError(f"{path}: no such folder (give the run folder `surge run` wrote)")
    if os.path.isdir(os.path.join(path, "meshes")):
        run, meshes = path, os.path.join(path, "meshes")
    elif frame_numbers(path):
        run, meshes = os.path.dirname(path), path
    else:
        raise RunError(f"{path}: neither a run folder (with meshes/) nor a folder of "
                       "frame_NNNN.ply files")
    if not frame_numbers(meshes):
        raise RunError(f"{meshes}: no frame_NNNN.ply files (was the run written with "
                       "output.meshes = false? `surge mesh RUN` writes them)")
    return run, meshes


def read_scene(run):
    """The run's scene.json as a dict, or {} when missing."""
    p = os.path.join(run, "scene.json")
    if not os.path.isfile(p):
        return {}
    try:
        with open(p) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise RunError(f"{p}: cannot read the scene ({e})") from e


# --- node tree and materials ------------------------------------------------------------------

def sequence_group():
    """The shared Geometry Nodes tree (created once per .blend)."""
    ng = bpy.data.node_groups.get(GROUP_NAME)
    if ng is not None:
        return ng
    ng = bpy.data.node_groups.new(GROUP_NAME, "GeometryNodeTree")
    ng.description = "surge: the PLY of the current frame, with velocity and a material"
    for name, kind in INPUTS:
        ng.interface.new_socket(name, in_out="INPUT", socket_type=kind)
    ng.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    n, link = ng.nodes, ng.links.new
    gin = n.new("NodeGroupInput")
    gin.location = (-1400, 0)
    time = n.new("GeometryNodeInputSceneTime")
    time.location = (-1400, 250)

    def math_node(op, a, b, x):
        m = n.new("ShaderNodeMath")
        m.operation = op
        m.location = (x, 250)
        for i, v in enumerate((a, b)):
            if isinstance(v, bpy.types.NodeSocket):
                link(v, m.inputs[i])
            elif v is not None:
                m.inputs[i].default_value = v
        return m

    sub = math_node("SUBTRACT", time.outputs["Frame"], gin.outputs["Frame Offset"], -1200)
    rnd = math_node("ROUND", sub.outputs[0], None, -1000)
    lo = math_node("MAXIMUM", rnd.outputs[0], gin.outputs["First Frame"], -800)
    hi = math_node("MINIMUM", lo.outputs[0], gin.outputs["Last Frame"], -600)
    fmt = n.new("FunctionNodeFormatString")
    fmt.location = (-400, 100)
    fmt.format_items.new("STRING", "folder")
    fmt.format_items.new("INT", "frame")
    fmt.inputs["Format"].default_value = PATTERN
    link(gin.outputs["Folder"], fmt.inputs["folder"])
    link(hi.outputs[0], fmt.inputs["frame"])
    imp = n.new("GeometryNodeImportPLY")
    imp.location = (-200, 100)
    link(fmt.outputs[0], imp.inputs["Path"])

    xyz = n.new("ShaderNodeCombineXYZ")
    xyz.location = (0, -150)
    for i, c in enumerate("xyz"):
        a = n.new("GeometryNodeInputNamedAttribute")
        a.data_type = "FLOAT"
        a.inputs["Name"].default_value = "v" + c
        a.location = (-200, -100 - 120 * i)
        link(a.outputs["Attribute"], xyz.inputs[i])
    store = n.new("GeometryNodeStoreNamedAttribute")
    store.data_type = "FLOAT_VECTOR"
    store.domain = "POINT"
    store.inputs["Name"].default_value = "velocity"
    store.location = (200, 100)
    link(imp.outputs[0], store.inputs["Geometry"])
    link(xyz.outputs[0], store.inputs["Value"])
    geo, x = store.outputs[0], 400
    for c in "xyz":
        rm = n.new("GeometryNodeRemoveAttribute")
        rm.inputs["Name"].default_value = "v" + c
        rm.location = (x, 100)
        link(geo, rm.inputs["Geometry"])
        geo, x = rm.outputs[0], x + 180
    setm = n.new("GeometryNodeSetMaterial")
    setm.location = (x, 100)
    link(geo, setm.inputs["Geometry"])
    link(gin.outputs["Material"], setm.inputs["Material"])
    gout = n.new("NodeGroupOutput")
    gout.location = (x + 200, 100)
    link(setm.outputs[0], gout.inputs[0])
    return ng


def water_material():
    """Clear water: full transmission, IOR 1.33, slightly rough."""
    mat = bpy.data.materials.get("surge water")
    if mat is not None:
        return mat
    mat = bpy.data.materials.new("surge water")
    mat.use_nodes = True
    bsdf = mat.node_tree.nodes["Principled BSDF"]
    bsdf.inputs["Base Color"].default_value = (0.8, 0.92, 1.0, 1.0)
    bsdf.inputs["Transmission Weight"].default_value = 1.0
    bsdf.inputs["IOR"].default_value = 1.33
    bsdf.inputs["Roughness"].default_value = 0.02
    mat.diffuse_color = (0.3, 0.55, 0.9, 1.0)  # viewport colour
    return mat


def plain_material(name, rgb, roughness=0.6):
    mat = bpy.data.materials.get(name)
    if mat is not None:
        return mat
    mat = bpy.data.materials.new(name)
    mat.use_nodes = True
    bsdf = mat.node_tree.nodes["Principled BSDF"]
    bsdf.inputs["Base Color"].default_value = (*rgb, 1.0)
    bsdf.inputs["Roughness"].default_value = roughness
    mat.diffuse_color = (*rgb, 1.0)
    return mat


def _input_id(mod, name):
    for item in mod.node_group.interface.items_tree:
        if item.item_type == "SOCKET" and item.in_out == "INPUT" and item.name == name:
            return item.identifier
    raise KeyError(name)


def set_inputs(obj, **values):
    """Sets the sequence modifier's inputs by name (Folder, Frame Offset, ...)."""
    mod = obj.modifiers["surge"]
    for name, v in values.items():
        mod[_input_id(mod, name.replace("_", " ").title())] = v
    obj.update_tag()


def sequence_object(name, folder, frames, offset, material, collection):
    """A mesh object whose Geometry Nodes modifier plays `folder`'s frame_NNNN.ply files."""
    obj = bpy.data.objects.new(name, bpy.data.meshes.new(name))
    collection.objects.link(obj)
    mod = obj.modifiers.new("surge", "NODES")
    mod.node_group = sequence_group()
    set_inputs(obj, folder=os.path.join(folder, ""), frame_offset=int(offset),
               first_frame=frames[0], last_frame=frames[-1], material=material)
    obj["surge_folder"] = os.path.join(folder, "")  # absolute, for make_paths_relative
    return obj


def ply_body(path):
    """The bytes of a PLY after its header (the header carries the frame and time)."""
    with open(path, "rb") as f:
        data = f.read()
    return data[data.find(b"end_header\n"):]


def obstacles_static(scene_doc, folder, frames):
    """True when no obstacle moves: the run's scene.json lists its obstacles and none has
    keyframes; without that list, when every frame's PLY holds the same vertices and faces."""
    listed = scene_doc.get("obstacles")
    if isinstance(listed, list) and listed:
        return not any(isinstance(o, dict) and o.get("keyframes") for o in listed)
    first = ply_body(os.path.join(folder, f"frame_{frames[0]:04d}.ply"))
    return all(ply_body(os.path.join(folder, f"frame_{f:04d}.ply")) == first
               for f in frames[1:])


def static_object(name, folder, frame, material, collection):
    """A plain mesh object holding `folder`'s frame_NNNN.ply of `frame` (obstacles that do not
    move): the mesh is stored in the .blend, no file is read at render time."""
    path = os.path.join(folder, f"frame_{frame:04d}.ply")
    before = set(bpy.data.objects.keys())
    bpy.ops.wm.ply_import(filepath=path, forward_axis="Y", up_axis="Z",
                          import_attributes=False, merge_verts=False)
    new = [bpy.data.objects[n] for n in bpy.data.objects.keys() if n not in before]
    if len(new) != 1:
        raise RunError(f"{path}: Blender's PLY import made {len(new)} objects, not one")
    obj = new[0]
    for c in list(obj.users_collection):
        c.objects.unlink(obj)
    collection.objects.link(obj)
    obj.name = obj.data.name = name
    obj.data.materials.clear()
    obj.data.materials.append(material)
    obj["surge_static"] = path
    return obj


def make_paths_relative(blend_path):
    """Stores each sequence's folder as `//...` relative to `blend_path` when the .blend sits
    next to or above the folder (otherwise the absolute path is kept)."""
    base = os.path.dirname(os.path.abspath(blend_path))
    for obj in bpy.data.objects:
        folder = obj.get("surge_folder")
        if not folder or "surge" not in obj.modifiers:
            continue
        rel = os.path.relpath(folder, base)
        if rel != os.pardir and not rel.startswith(os.pardir + os.sep):
            set_inputs(obj, folder="//" + rel.replace(os.sep, "/").rstrip("/") + "/")


# --- scene set-up ------------------------------------------------------------------------------

def liquid_region(scene_doc):
    """(lower, upper) of the liquid region (the domain less its wall layer), or None."""
    d = scene_doc.get("domain")
    try:
        lo, h, res = d["lower"], float(d["cell_size"]), d["resolution"]
        return ([lo[i] + h for i in range(3)], [lo[i] + (res[i] - 1) * h for i in range(3)])
    except (TypeError, KeyError, IndexError, ValueError):
        return None


def clear_default_scene():
    for obj in list(bpy.data.objects):
        if obj.name in ("Cube", "Camera", "Light"):
            bpy.data.objects.remove(obj, do_unlink=True)


def setup_stage(scene, region, samples, resolution, view=None):
    """Camera (three-quarter view filling ~85% of the frame, or `view` = eye and target
    points), sun, floor, world, Cycles."""
    lo, hi = Vector(region[0]), Vector(region[1])
    centre, size = (lo + hi) / 2, hi - lo
    radius = size.length / 2
    cam_data = bpy.data.cameras.new("surge_camera")
    cam_data.lens = 35
    cam = bpy.data.objects.new("surge_camera", cam_data)
    scene.collection.objects.link(cam)
    direction = Vector((0.55, -1.0, 0.45)).normalized()
    # Sensor fit AUTO: the lens angle spans the longer image side.
    w, h = resolution
    fov = 2 * math.atan(math.tan(cam_data.angle / 2) * min(w, h) / max(w, h))
    dist = radius / math.sin(fov / 2) / 0.85
    cam.location = centre + direction * dist
    if view is not None:  # eye and target given: look from one to the other
        eye, target = Vector(view[:3]), Vector(view[3:])
        direction, dist = (eye - target).normalized(), (eye - target).length
        cam.location = eye
    cam.rotation_euler = (-direction).to_track_quat("-Z", "Y").to_euler()
    cam_data.clip_end = max(100.0, 4 * dist)
    scene.camera = cam

    sun_data = bpy.data.lights.new("surge_sun", "SUN")
    sun_data.energy = 3.0
    sun_data.angle = math.radians(5)
    sun = bpy.data.objects.new("surge_sun", sun_data)
    sun.rotation_euler = (math.radians(40), math.radians(10), math.radians(30))
    sun.location = centre + Vector((0, 0, size.z + radius))
    scene.collection.objects.link(sun)

    floor_me = bpy.data.meshes.new("surge_floor")
    s = 1.5 * max(size.x, size.y)
    z = lo.z - 0.002 * radius
    floor_me.from_pydata([(centre.x + a * s, centre.y + b * s, z)
                          for a, b in ((-1, -1), (1, -1), (1, 1), (-1, 1))], [], [(0, 1, 2, 3)])
    floor_me.materials.append(plain_material("surge floor", (0.18, 0.2, 0.22)))
    floor = bpy.data.objects.new("surge_floor", floor_me)
    scene.collection.objects.link(floor)

    world = scene.world or bpy.data.worlds.new("surge world")
    scene.world = world
    world.use_nodes = True
    bg = world.node_tree.nodes.get("Background")
    if bg is not None:
        bg.inputs["Color"].default_value = (0.5, 0.58, 0.68, 1.0)
        bg.inputs["Strength"].default_value = 1.0

    scene.render.engine = "CYCLES"
    scene.cycles.samples = samples
    scene.cycles.device = "CPU"
    scene.render.resolution_x, scene.render.resolution_y = resolution
    scene.render.resolution_percentage = 100
    scene.render.use_motion_blur = True
    scene.render.motion_blur_shutter = 0.5


def import_run(path, frame_offset=0, keep_scene=False, samples=32, resolution=(960, 540),
               view=None):
    """Imports a surge run (folder or its meshes/ folder); returns the liquid object."""
    run, meshes = find_run(path)
    doc = read_scene(run)
    scene = bpy.context.scene
    frames = frame_numbers(meshes)
    try:
        fps = float(doc.get("time", {}).get("fps", 30.0))
        assert fps > 0
    except (AttributeError, TypeError, ValueError, AssertionError):
        raise RunError(f"{os.path.join(run, 'scene.json')}: time.fps is not a positive "
                       "number (rewrite it with `surge run`)") from None
    scene.render.fps = max(1, round(fps))
    scene.render.fps_base = scene.render.fps / fps
    scene.frame_start = frames[0] + frame_offset
    scene.frame_end = frames[-1] + frame_offset
    scene.frame_set(scene.frame_start)
    if not keep_scene:
        clear_default_scene()
    obj = sequence_object(LIQUID, meshes, frames, frame_offset, water_material(),
                          scene.collection)
    obstacles = os.path.join(run, "obstacles")
    if os.path.isdir(obstacles) and frame_numbers(obstacles):
        grey = plain_material("surge obstacle", (0.5, 0.45, 0.4))
        ob_frames = frame_numbers(obstacles)
        if obstacles_static(doc, obstacles, ob_frames):
            static_object(OBSTACLES, obstacles, ob_frames[0], grey, scene.collection)
        else:
            sequence_object(OBSTACLES, obstacles, ob_frames, frame_offset, grey,
                            scene.collection)
    if not keep_scene:
        region = liquid_region(doc)
        if region is None:  # no scene.json: frame the first frame's liquid
            dg = bpy.context.evaluated_depsgraph_get()
            bb = [obj.matrix_world @ Vector(c) for c in obj.evaluated_get(dg).bound_box]
            region = ([min(v[i] for v in bb) for i in range(3)],
                      [max(v[i] for v in bb) for i in range(3)])
        setup_stage(scene, region, samples, resolution, view)
    return obj


# --- UI operator -------------------------------------------------------------------------------

class SURGE_OT_import_run(bpy.types.Operator):
    """Import a surge run folder as a Geometry Nodes mesh sequence (no script needed later)"""

    bl_idname = "import_scene.surge_run"
    bl_label = "Import surge run"
    bl_options = {"REGISTER", "UNDO"}

    directory: bpy.props.StringProperty(subtype="DIR_PATH")
    frame_offset: bpy.props.IntProperty(name="Frame offset", default=0)
    keep_scene: bpy.props.BoolProperty(name="Keep scene", default=True,
                                       description="Add to the open scene (no camera/light)")

    def execute(self, context):
        try:
            import_run(self.directory, self.frame_offset, self.keep_scene)
        except (OSError, RunError) as e:
            self.report({"ERROR"}, str(e))
            return {"CANCELLED"}
        return {"FINISHED"}

    def invoke(self, context, event):
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}


def _menu(self, context):
    self.layout.operator(SURGE_OT_import_run.bl_idname, text="surge run (folder)")


def register():
    try:
        bpy.utils.register_class(SURGE_OT_import_run)
        bpy.types.TOPBAR_MT_file_import.append(_menu)
    except (ValueError, RuntimeError):
        pass  # already registered (script run twice)


# --- command line ------------------------------------------------------------------------------

def started_as_script(argv=None):
    """True when this very file was started from the command line (`python THIS -- ...` with
    the bpy module, or `blender -P THIS -- ...`), not run from the Text Editor or imported."""
    argv = sys.argv if argv is None else argv
    here = os.path.realpath(globals().get("__file__") or "")
    if not here or not os.path.isfile(here):
        return False
    cands = argv[:1] + [argv[i + 1] for i in range(len(argv) - 1)
                        if argv[i] in ("-P", "--python")]
    end = argv.index("--") if "--" in argv else len(argv)
    return any(os.path.isfile(c) and os.path.realpath(c) == here for c in cands[:end + 1])


def parse_args(args):
    ap = argparse.ArgumentParser(prog="blender -b -P scripts/blender_import.py --",
                                 description="Import a surge run as a Geometry Nodes sequence.")
    ap.add_argument("run", help="the run folder surge wrote (or its meshes/ folder)")
    ap.add_argument("--save", metavar="FILE.blend", help="save the .blend here")
    ap.add_argument("--render", nargs=2, metavar=("FRAME", "PNG"),
                    help="render Blender frame FRAME with Cycles to PNG")
    ap.add_argument("--blend", metavar="FILE.blend",
                    help="open this .blend first (for the bpy module; Blender itself takes "
                         "the file before -P)")
    ap.add_argument("--keep-scene", action="store_true",
                    help="add to the open .blend (keep its objects, camera and render settings)")
    ap.add_argument("--frame-offset", type=int, default=0, help="Blender frame of PLY frame 0")
    ap.add_argument("--samples", type=int, default=32, help="Cycles samples (default 32)")
    ap.add_argument("--resolution", type=int, nargs=2, default=(960, 540), metavar=("W", "H"))
    ap.add_argument("--view", type=float, nargs=6, metavar=("EX", "EY", "EZ", "TX", "TY", "TZ"),
                    help="camera at (EX, EY, EZ) looking at (TX, TY, TZ), m (default: framed)")
    a = ap.parse_args(args)
    if a.render:
        try:
            a.render = (int(a.render[0]), a.render[1])
        except ValueError:
            ap.error(f"--render FRAME PNG: FRAME must be a whole number, got {a.render[0]!r}")
    if a.samples < 1 or min(a.resolution) < 1:
        ap.error("--samples and --resolution must be positive")
    return a


def main(args):
    a = parse_args(args)
    if a.blend:
        if not os.path.isfile(a.blend):
            print(f"surge: --blend {a.blend}: no such file", file=sys.stderr)
            return 1
        bpy.ops.wm.open_mainfile(filepath=os.path.abspath(a.blend), load_ui=False)
    try:
        obj = import_run(a.run, a.frame_offset, a.keep_scene, a.samples, tuple(a.resolution),
                         a.view)
    except RunError as e:
        print(f"surge: {e}", file=sys.stderr)
        return 1
    scene = bpy.context.scene
    print(f"surge: imported {a.run} as '{obj.name}' (Geometry Nodes), frames "
          f"{scene.frame_start}..{scene.frame_end} at {scene.render.fps / scene.render.fps_base:g} fps")
    if a.save:
        path = os.path.abspath(a.save)
        make_paths_relative(path)
        bpy.ops.wm.save_as_mainfile(filepath=path)
        print(f"surge: saved {path}")
    if a.render:
        scene.frame_set(a.render[0])
        scene.render.filepath = os.path.abspath(a.render[1])
        scene.render.image_settings.file_format = "PNG"
        bpy.ops.render.render(write_still=True)
        print(f"surge: rendered frame {a.render[0]} to {scene.render.filepath}")
    return 0


def purge_blender_tempdir():
    """Deletes the bpy session's temp folder ($TMPDIR/blender_XXXXXX), which Blender's exit
    handlers delete and `os._exit` skips: without this every run left one behind."""
    d = os.path.normpath(bpy.app.tempdir or "")
    if os.path.basename(d).startswith("blender_") and os.path.isdir(d):
        shutil.rmtree(d, ignore_errors=True)


register()


if __name__ == "__main__" and started_as_script() and bpy.app.binary_path and \
        "--" not in sys.argv:
    # `blender -P blender_import.py` with no arguments: the UI way.
    print("surge: File > Import > \"surge run (folder)\" is ready (to import from the command "
          "line: blender -b -P blender_import.py -- RUN --save FILE.blend)")
elif __name__ == "__main__" and started_as_script():
    try:
        code = main(sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else [])
    except SystemExit as e:  # argparse's usage errors (already printed)
        code = e.code if isinstance(e.code, int) else 1
    sys.stdout.flush()
    sys.stderr.flush()
    if not bpy.app.binary_path:
        # Python with the `bpy` module: its interpreter shutdown can hang when stdout is a
        # pipe, so leave at once once everything is written.
        purge_blender_tempdir()
        os._exit(code)
    elif code:
        sys.exit(code)
