#!/usr/bin/env bash
# Ranks recipe candidates on one GPU at the step count each would reach on the 2-core CPU in
# the hour (issue #11; docs/recipe_search.md), then confirm the best on the CPU.
#
#   bench/rank_on_gpu.sh CANDIDATES OUT STEPS [OVERRIDE ...]
#
# CANDIDATES: a file, one candidate per line: its Hydra overrides ('' or '-' for the recipe
# itself; '#' starts a comment). Every candidate trains at once, one process each (a model this
# small leaves the GPU mostly idle, so they hardly slow each other), into OUT/N, for STEPS
# steps with the linear schedule planned for them from the start (no time budget), in fp32
# like the CPU unless a candidate says otherwise; the OVERRIDEs go to every candidate (e.g.
# data.dir=...). Then `bench/sweep_table.py OUT` ranks them on validation BLEU.
# A candidate that names no shape trains model=auto's for STEPS steps (conf/model/auto.yaml:
# without a time limit the step count picks the row); model=NAME ranks a fixed shape.
set -u
if [ $# -lt 3 ]; then
  echo "usage: bench/rank_on_gpu.sh CANDIDATES OUT STEPS [OVERRIDE ...]" >&2
  exit 2
fi
candidates=$1 out=$2 steps=$3
shift 3
[ -f "$candidates" ] || { echo "error: no candidates file $candidates" >&2; exit 2; }
python=${PYTHON:-python3}
mkdir -p "$out"
n=0
pids=()
while IFS= read -r line; do
  read -r -a overrides <<<"${line%%#*}"  # the line's words, its comment left out
  [ ${#overrides[@]} -eq 0 ] && continue
  [ "${overrides[*]}" = "-" ] && overrides=()
  "$python" train.py train.device=cuda train.precision=fp32 train.threads=1 train.max_minutes=null \
    "train.max_steps=$steps" "$@" "${overrides[@]}" "hydra.run.dir=$out/$n" >"$out/$n.log" 2>&1 &
  pids+=($!)
  echo "run $n (pid $!): ${overrides[*]:-the recipe}"
  n=$((n + 1))
done <"$candidates"
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done
echo "$n runs, $failed failed (logs: $out/N.log)"
"$python" bench/sweep_table.py "$out"
