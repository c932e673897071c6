#!/usr/bin/env bash
# A Slurm job array of phasegate shards and one merge job (docs/fleet.md "Slurm").
# Run on a login node of a cluster whose nodes share $RUN (a parallel file system) and
# see the same build tree $BUILD (built once, or at the same path on every node):
#   docs/fleet/sbatch_array.sh BUILD RUN [SHARDS]
set -euo pipefail
BUILD="$1"
RUN="$2"
SHARDS="${3:-8}"
PG="${PHASEGATE:-phasegate}"
mkdir -p "$RUN/logs" "$RUN/shards"

# 1. the plan, once, upstream: times from the last merged run when there is one
times=()
if [ -f "$RUN/../last/times.json" ]; then times=(--times "$RUN/../last"); fi
"$PG" shard plan --build-dir "$BUILD" --shards "$SHARDS" --label phasegate "${times[@]}" --out "$RUN/plan"

# 2. one array task per shard: the index comes from SLURM_ARRAY_TASK_ID, the devices
#    Slurm gives the task (CUDA_VISIBLE_DEVICES) become the CTest resource spec
array=$(sbatch --parsable --array="0-$((SHARDS - 1))" --gres=gpu:8 --exclusive \
  -o "$RUN/logs/shard_%a.out" \
  --wrap "$PG shard run --plan $RUN/plan/plan.json --out $RUN/shards/s\$SLURM_ARRAY_TASK_ID -j 8")

# 3. the merge, once, downstream: afterany, so a failed or lost shard still gets its
#    verdict ("not run", exit 2) instead of a merge that never starts
sbatch --parsable --dependency="afterany:$array" -o "$RUN/logs/merge.out" \
  --wrap "$PG merge --plan $RUN/plan/plan.json --out $RUN/merged $RUN/shards/s*"
