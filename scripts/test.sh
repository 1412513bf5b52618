#!/usr/bin/env bash
# Runs every test of surge, optimised. `.ci/run` calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release "$@"
