#!/usr/bin/env bash
# Makes the README's Blender picture, scripts/images/blender_pillar.png: scenes/pillar.json
# (a dam break against a cylinder and a turned box) run for FRAMES frames, imported into Blender
# by scripts/blender_import.py (the liquid sequence and the static obstacles as a plain mesh,
# the camera, sun and floor it sets up) and rendered with Cycles at 480x270, 32 samples.
#
#   bash scripts/blender_readme_image.sh [FRAMES]      (default 24; uses .venv's bpy, or
#                                                      BLENDER=/path/to/blender when set)
set -euo pipefail
cd "$(dirname "$0")/.."
frames=${1:-24}
out=out/readme_pillar
cargo build --release -q
target/release/surge run scenes/pillar.json -o "$out" --frames "$frames" --overwrite -q
args=(-- "$out" --save "$out.blend" --render "$frames" scripts/images/blender_pillar.png
      --samples 32 --resolution 480 270)
if [ -n "${BLENDER:-}" ]; then
    "$BLENDER" -b -P scripts/blender_import.py "${args[@]}"
else
    .venv/bin/python scripts/blender_import.py "${args[@]}"
fi
