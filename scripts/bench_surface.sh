#!/usr/bin/env bash
# Benchmark: surge's surface stage against splashsurf (PyPI `pysplashsurf`) on the same ~1M
# particle frame, same particle radius, kernel support and cell size, in one run. Prints times,
# their ratio, triangle counts and closedness.
#
#   scripts/bench_surface.sh                      synthetic dam-break-like frame (938,768 particles)
#   scripts/bench_surface.sh --dam-break          frame 20 of a simulated 1M-particle dam break
#                                                 (runs `surge run` first, about a minute)
#   scripts/bench_surface.sh --run OUT --frame N  a frame of any run
# Other arguments go to the benchmark, e.g. `--repeat 5`.
set -euo pipefail
cd "$(dirname "$0")/.."
py=$(bash scripts/setup_python.sh --bench | tail -n 1)
export SURGE_SPLASHSURF="$(dirname "$py")/pysplashsurf"
args=()
if [[ "${1:-}" == "--dam-break" ]]; then
    shift
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    # scenes/dam_break.json at a finer cell (4x the particles), 20 frames, particles only.
    "$py" - "$tmp/scene.json" <<'PY'
import json, sys
s = json.load(open("scenes/dam_break.json"))
s["name"] = "dam_break_1m"
s["domain"]["cell_size"] = 0.0078125
s["domain"]["resolution"] = [162, 54, 82]
s["time"]["frames"] = 20
s["output"] = {"previews": False, "meshes": False, "checkpoint_every": 0, "keep_checkpoints": 1}
json.dump(s, open(sys.argv[1], "w"), indent=1)
PY
    cargo build --release --quiet
    ./target/release/surge run "$tmp/scene.json" -o "$tmp/run" -q
    args=(--run "$tmp/run" --frame 20)
fi
cargo bench --bench surface -- "${args[@]}" "$@"
