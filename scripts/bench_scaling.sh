#!/usr/bin/env bash
# Benchmark: how the stepper scales with threads, and the multigrid's pressure against MIC(0),
# all in one run on this machine (issue 13's targets: whole substep 1.8x on 2 threads and 8x on
# 16, pressure 3x less than MIC(0) at 1M on 2 threads and 6x at 8M). Ratios only compare runs
# of this invocation; nothing here is a test.
#
#   scripts/bench_scaling.sh            1M dam break, 12 frames, multigrid: 1, 2 and all threads,
#                                       each twice in turn; then the pressure against MIC(0) in
#                                       interleaved pairs at 2 and all threads (BENCH_PAIRS)
#   scripts/bench_scaling.sh --8m       the same on the 8M dam break (3 frames; about 2 GB of
#                                       memory; a 1-thread run takes about 25 s on a 16-CPU Xeon)
#
# Environment: SCALING_FRAMES (frames per run), SCALING_THREADS (the largest thread count, default all CPUs), SCALING_REPS (runs
# per thread count, default 2), SCALING_PAIRS (default 3), BENCH_BIN (a built bench_stepper
# executable, e.g. copied to a machine without the toolchain; default: built here).
set -euo pipefail
cd "$(dirname "$0")/.."
size=1M frames=12 particles=()
if [[ "${1:-}" == "--8m" ]]; then
    size=8M frames=3 particles=(BENCH_PARTICLES=8M)
fi
frames=${SCALING_FRAMES:-$frames}
max=${SCALING_THREADS:-$(nproc)}
reps=${SCALING_REPS:-2}
pairs=${SCALING_PAIRS:-3}
bin=${BENCH_BIN:-}
if [[ -z "$bin" ]]; then
    bin=$(cargo bench --bench bench_stepper --no-run --message-format=json 2>/dev/null |
        grep -o '"executable":"[^"]*bench_stepper[^"]*"' | tail -n 1 | cut -d'"' -f4)
fi
[[ -x "$bin" ]] || { echo "bench_scaling: no bench_stepper executable (BENCH_BIN='$bin')" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
counts=(1)
for t in 2 "$max"; do
    [[ "$t" -le "$max" && "$t" != "${counts[-1]}" ]] && counts+=("$t")
done

# One stepper run: `run THREADS FILE [VAR=value ...]`.
run() {
    local t=$1 f=$2
    shift 2
    env RAYON_NUM_THREADS="$t" BENCH_SKIP_TUTORIAL=1 BENCH_DAM_PEER=0 "${particles[@]}" \
        BENCH_DAM_FRAMES="$frames" "$@" "$bin" >"$f" 2>&1 ||
        { echo "bench_scaling: the run with $t threads failed:" >&2; tail -n 20 "$f" >&2; exit 1; }
}
# `field FILE NAME`: the multigrid run's ms per substep of a stage ("pressure", ...) or of the
# whole substep ("substep"), and its checksum ("checksum").
field() {
    awk -v name="$2" '
        /^surge, / && !done { w = $0; sub(/ ms\/substep.*/, "", w); sub(/.* /, "", w); whole = w; main = 1; next }
        main && /per substep, ms:/ { for (i = 1; i < NF; i++) if ($i == name) stage = $(i + 1) }
        main && /result checksum/ { c = $NF; done = 1; main = 0 }
        END { if (name == "substep") print whole; else if (name == "checksum") print c; else print stage }
    ' "$1"
}

echo "bench_scaling: $size dam break, $frames frames, threads ${counts[*]}, $reps runs each in turn, $(nproc) CPUs"
echo "  $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ *//')"
mg=(BENCH_COMPARE_PRECONDITIONERS=0 BENCH_REPLAY_FRAMES=0)
for r in $(seq 1 "$reps"); do
    for t in "${counts[@]}"; do
        run "$t" "$tmp/mg_${t}_$r" "${mg[@]}"
    done
done
# The fastest of the runs per thread count (a shared machine's slow spells only add time).
best() { sort -g | head -n 1; }
printf '\n%-8s %-30s %-26s %-22s %s\n' threads "whole substep, ms (runs)" "pressure, ms (runs)" "density corr., ms" "speed-up (fastest)"
base="" pbase=""
for t in "${counts[@]}"; do
    w=() p=() d=()
    for r in $(seq 1 "$reps"); do
        w+=("$(field "$tmp/mg_${t}_$r" substep)")
        p+=("$(field "$tmp/mg_${t}_$r" pressure)")
        d+=("$(field "$tmp/mg_${t}_$r" density)")
    done
    wb=$(printf '%s\n' "${w[@]}" | best) pb=$(printf '%s\n' "${p[@]}" | best)
    db=$(printf '%s\n' "${d[@]}" | best)
    [[ -z "$base" ]] && base=$wb pbase=$pb
    printf '%-8s %-30s %-26s %-22s whole %.2fx, pressure %.2fx\n' "$t" "${w[*]}" "${p[*]}" "$db" \
        "$(awk -v a="$base" -v b="$wb" 'BEGIN { print a / b }')" \
        "$(awk -v a="$pbase" -v b="$pb" 'BEGIN { print a / b }')"
done
sums=$(for f in "$tmp"/mg_*; do field "$f" checksum; done | sort -u)
echo "checksums of every multigrid run (one value: the same particles for any thread count): $sums"

echo
echo "pressure, MIC(0) against the multigrid, $pairs interleaved pairs per thread count:"
for t in "${counts[@]:1}"; do
    run "$t" "$tmp/pairs_$t" BENCH_PAIRS="$pairs" BENCH_REPLAY_FRAMES=0
    line=$(grep -m1 'median: pressure' "$tmp/pairs_$t" || grep -m1 'pressure ms/substep' "$tmp/pairs_$t")
    echo "  $t threads: ${line#ratios MIC(0) / multigrid }"
done
