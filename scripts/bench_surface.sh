#!/usr/bin/env bash
# Benchmark: surge's surface stage against splashsurf (PyPI `pysplashsurf`) on the same ~1M
# particle dam-break-like frame, same particle radius and cell size, in one run. Prints times,
# their ratio, triangle counts and closedness. Extra arguments go to the benchmark, e.g.
#   bash scripts/bench_surface.sh --repeat 5 --particles 500000
set -euo pipefail
cd "$(dirname "$0")/.."
py=$(bash scripts/setup_python.sh --bench | tail -n 1)
export SURGE_SPLASHSURF="$(dirname "$py")/pysplashsurf"
cargo bench --bench surface -- "$@"
