#!/usr/bin/env bash
# Runs every test of surge, optimised. `.ci/run` calls exactly this.
#
# First makes sure the Python venv (.venv: Blender's `bpy`, numpy, plyfile) exists, because the
# real-Blender import test and the independent PLY reader test run in it; they find it through
# SURGE_PYTHON. With CI=true a failed setup fails the run; elsewhere those tests are skipped.
#
# Skips are never silent: a test that cannot run its check here calls `common::skip`, which
# appends `test: reason` to $SURGE_SKIP_LOG (a fresh file per run); the summary at the end prints
# how many tests skipped and why, and lists the `#[ignore]`d tests (known deviations, documented
# in the README) with their reasons. The exit status is cargo's.
set -uo pipefail
cd "$(dirname "$0")/.."
if py=$(bash scripts/setup_python.sh | tail -n 1); then
    export SURGE_PYTHON="$py"
elif [[ "${CI:-}" == "true" ]]; then
    echo "scripts/test.sh: setting up the Python venv failed (see above)" >&2
    exit 1
else
    echo "scripts/test.sh: no Python venv; the Blender and plyfile tests will be skipped" >&2
fi
SURGE_SKIP_LOG=$(mktemp "${TMPDIR:-/tmp}/surge-skips.XXXXXX")
export SURGE_SKIP_LOG
log=$(mktemp "${TMPDIR:-/tmp}/surge-test-output.XXXXXX")
trap 'rm -f "$SURGE_SKIP_LOG" "$log"' EXIT
start=$SECONDS
cargo test --release --no-fail-fast "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
echo
echo "== scripts/test.sh summary ($((SECONDS - start)) s) =="
skips=$(grep -c . "$SURGE_SKIP_LOG" || true)
echo "skipped: $skips"
sed 's/^/  SKIPPED /' "$SURGE_SKIP_LOG"
# libtest prints `test NAME ... ignored, REASON` for `#[ignore = "REASON"]`.
ignored=$(grep -E '^test .* \.\.\. ignored' "$log" || true)
echo "ignored (known deviations, see README): $(grep -c . <<<"$ignored" || true)"
[[ -n "$ignored" ]] && sed 's/^test /  IGNORED /' <<<"$ignored"
exit "$status"
