#!/usr/bin/env bash
# Cycles renders of one frame of a run meshed with each surface method, for the README's
# before/after pictures (issue 14):
#
#   bash scripts/render_surface_methods.sh [RUN] [FRAME]     (default: out/dam_break 20)
#   bash scripts/render_surface_methods.sh RUN FRAME calm      the default method without and
#       with the calm-water flattening (`--calm-flattening 0` and the default), into
#       scripts/images/surface_calm_{off,on}_<FRAME>.png: for a pool at rest, e.g. a box of
#       water left to settle for 1.5 s (the README's picture: 0.02 m cells, 1 x 1 x 0.2 m).
#
# Re-meshes FRAME of RUN (`surge mesh --method M`) into a scratch copy of the run folder for
# zhu_bridson and anisotropic and renders each with scripts/blender_import.py (bpy, Cycles,
# 16 samples, 480x270) into scripts/images/surface_<method>_<FRAME>.png. RUN needs the
# particles of FRAME (`cargo run --release -- run` writes them).
set -euo pipefail
cd "$(dirname "$0")/.."
run=${1:-out/dam_break}
frame=${2:-20}
py=$(bash scripts/setup_python.sh | tail -n 1)
cargo build --release --quiet
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/run/particles" scripts/images
cp "$run/scene.json" "$tmp/run/"
cp "$run/particles/$(printf 'frame_%04d.bin' "$frame")" "$tmp/run/particles/"
if [[ "${3:-}" == "calm" ]]; then
    for mode in off on; do
        flat=()
        [[ "$mode" == off ]] && flat=(--calm-flattening 0)
        ./target/release/surge mesh "$tmp/run" --frames "$frame..$frame" "${flat[@]}" -q
        # A low camera over the pool's near edge: the sun's reflection shows the ripple.
        "$py" scripts/blender_import.py -- "$tmp/run" --render "$frame" \
            "scripts/images/surface_calm_${mode}_${frame}.png" --samples 16 --resolution 480 270 \
            --view ${CALM_VIEW:-0.0 -0.9 0.45 0.0 0.0 0.15}
    done
    exit 0
fi
for method in zhu_bridson anisotropic; do
    ./target/release/surge mesh "$tmp/run" --frames "$frame..$frame" --method "$method" -q
    "$py" scripts/blender_import.py -- "$tmp/run" --render "$frame" \
        "scripts/images/surface_${method}_${frame}.png" --samples 16 --resolution 480 270
done
