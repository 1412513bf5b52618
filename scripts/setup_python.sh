#!/usr/bin/env bash
# Creates (or reuses) `.venv/` at the repository root with what surge's Python-side tests and
# benchmarks need:
#   bpy 4.5.x    Blender as a Python module (runs on Python 3.11): the real-Blender import test
#   numpy        used by the Blender tests' checks (tests/blender_check.py, tests/blender_scene.py)
#   plyfile      an independent PLY reader, to cross-check the files surge writes
#   pysplashsurf splashsurf's CLI, the peer in scripts/bench_surface.sh (only with --bench)
# Idempotent: when everything is already installed it only checks versions (about a second).
# Prints the venv's python path as its last line.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv
PY=${SURGE_BASE_PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
want_bench=0
[[ "${1:-}" == "--bench" ]] && want_bench=1

if [[ ! -x "$VENV/bin/python" ]]; then
    "$PY" -m venv "$VENV"
fi
VPY="$VENV/bin/python"
"$VPY" -c 'import sys; assert sys.version_info[:2] == (3, 11), "bpy 4.5 needs Python 3.11, the venv has " + sys.version' >&2

check() {
    "$VPY" - "$want_bench" <<'PY' 2>/dev/null
import sys, importlib.metadata as md
need = {"bpy": "4.5.", "numpy": "", "plyfile": ""}
if sys.argv[1] == "1":
    need["pysplashsurf"] = ""
for name, prefix in need.items():
    v = md.version(name)
    assert v.startswith(prefix), (name, v)
PY
}

if ! check; then
    pkgs=("bpy>=4.5,<4.6" "numpy" "plyfile")
    [[ $want_bench == 1 ]] && pkgs+=("pysplashsurf")
    "$VPY" -m pip install --disable-pip-version-check -q "${pkgs[@]}" >&2
    check || { echo "setup_python.sh: packages still missing after pip install" >&2; exit 1; }
fi
echo "$(pwd)/$VENV/bin/python"
