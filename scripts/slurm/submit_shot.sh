#!/usr/bin/env bash
# Submits a whole shot to SLURM: the bake, then the mesh array once the bake has succeeded.
#
#   scripts/slurm/submit_shot.sh SCENE OUT J [surge run flags]
#
# 1. `sbatch --requeue --signal=B:TERM@120 scripts/slurm/bake.sbatch SCENE OUT [flags]`:
#    simulates with `surge run`, requeued and resumed on preemption or near its time limit.
# 2. `sbatch --dependency=afterok:BAKE --array=0-(J-1) scripts/slurm/mesh_array.sbatch OUT J`:
#    J tasks mesh contiguous frame chunks once the bake finished successfully (a requeued bake
#    is not finished, so the array waits through requeues).
# Prints the two job ids ("bake BAKE_ID" and "mesh MESH_ID") on stdout.
#
# Options go to sbatch through the environment: SURGE_BAKE_SBATCH and SURGE_MESH_SBATCH (extra
# sbatch options, e.g. "--time=04:00:00 --cpus-per-task=16 --partition=sim"), SURGE_PREVIEW=1
# (the mesh tasks also render previews). SURGE (the surge binary) is passed on to the jobs.
set -euo pipefail

if [[ $# -lt 3 ]]; then
    echo "usage: $0 SCENE OUT J [surge run flags]" >&2
    exit 2
fi
scene=$1
out=$2
chunks=$3
shift 3
if ! [[ $chunks =~ ^[1-9][0-9]*$ ]]; then
    echo "submit_shot: J = '$chunks' must be a whole number of mesh tasks, 1 or more" >&2
    exit 2
fi
if [[ ! -f $scene ]]; then
    echo "submit_shot: scene $scene not found" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
# The jobs may start in another folder: give them absolute paths.
scene=$(cd "$(dirname "$scene")" && pwd)/$(basename "$scene")
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")

# shellcheck disable=SC2086 # the *_SBATCH variables hold several options
bake=$(sbatch --parsable --requeue --signal=B:TERM@120 ${SURGE_BAKE_SBATCH:-} \
    "$here/bake.sbatch" "$scene" "$out" "$@")
bake=${bake%%;*}
preview=()
[[ ${SURGE_PREVIEW:-0} == 1 ]] && preview=(--preview)
# shellcheck disable=SC2086
mesh=$(sbatch --parsable --dependency=afterok:"$bake" --kill-on-invalid-dep=yes \
    --array=0-$((chunks - 1)) ${SURGE_MESH_SBATCH:-} \
    "$here/mesh_array.sbatch" "$out" "$chunks" "${preview[@]}")
mesh=${mesh%%;*}
echo "bake $bake"
echo "mesh $mesh"
echo "submit_shot: bake job $bake, then mesh array job $mesh (tasks 0..$((chunks - 1)), after the bake succeeds); watch with: squeue -j $bake,$mesh" >&2
