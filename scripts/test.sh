#!/usr/bin/env bash
# Runs every test of surge, optimised. `.ci/run` calls exactly this.
#
# First makes sure the Python venv (.venv: Blender's `bpy`, numpy, plyfile) exists, because the
# real-Blender import test and the independent PLY reader test run in it; they find it through
# SURGE_PYTHON. With CI=true a failed setup fails the run; elsewhere those tests are skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
if py=$(bash scripts/setup_python.sh | tail -n 1); then
    export SURGE_PYTHON="$py"
elif [[ "${CI:-}" == "true" ]]; then
    echo "scripts/test.sh: setting up the Python venv failed (see above)" >&2
    exit 1
else
    echo "scripts/test.sh: no Python venv; the Blender and plyfile tests will be skipped" >&2
fi
cargo test --release --no-fail-fast "$@"
