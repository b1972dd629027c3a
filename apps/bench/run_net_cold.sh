#!/usr/bin/env bash
# Cold start of a net from a warm profile (the target: a new process,
# a warm profile, ResNet-18 built and its first inference done in <= 0.5 s,
# the first inference within 1.10x the 100th), on the GPU machine, after
# run_net_bench.sh has built build-torchcudnn:
#   1. fovea-bench net --profile P0 (engine choices only, e.g. an autotuned
#      profile): the runtime-compiled plans are compiled, and the profile is
#      written back with them (P1)
#   2. three new processes: fovea-bench net --profile P1 --cold
# Usage: apps/bench/run_net_cold.sh OUTDIR [PROFILE|none] [MODEL:BATCH:SIZE]
#   PROFILE defaults to docs/bench/net_resnet18_b1_autotuned_h200.profile
#   (made with PyTorch's cuDNN 9.19: another cuDNN ignores it); none: step 1
#   chooses by heuristics; the case defaults to resnet18:1:224.
#   FV_BENCH: the fovea-bench to run (default build-torchcudnn's).
set -uo pipefail
out=${1:?usage: run_net_cold.sh OUTDIR [PROFILE] [MODEL:BATCH:SIZE]}
root=$(cd "$(dirname "$0")/../.." && pwd)
p0=${2:-$root/docs/bench/net_resnet18_b1_autotuned_h200.profile}
case=${3:-resnet18:1:224}
IFS=: read -r model batch size <<<"$case"
bench=${FV_BENCH:-$root/build-torchcudnn/apps/bench/fovea-bench}
py=${PYTHON:-python3}
mkdir -p "$out/cold"
[ -x "$bench" ] || { echo "run_net_cold: no $bench (run apps/bench/run_net_bench.sh first)"; exit 1; }
"$py" "$root/apps/common/net_models.py" --out "$out/cold" --case "$case" >/dev/null || exit 1
rm -f "$out/cold/p1.profile"
[ "$p0" = none ] || cp "$p0" "$out/cold/p1.profile"
args=(net --model "$model" --batch "$batch" --size "$size" --weights "$out/cold/$model.fvw"
      --io "$out/cold/${model}_n${batch}_s${size}.io.fvw" --iters 50 --warmup 10)
echo "== 1. from $(basename "$p0") (choices only, or none): plans compiled, profile written back"
"$bench" "${args[@]}" --profile "$out/cold/p1.profile" --cold 2>&1 | tee "$out/cold/run1.log" |
  grep -E "cold|created|graph |eager |fovea: net:|builder made|cuDNN:"
ls -l "$out/cold/p1.profile"
for i in 1 2 3; do
  echo "== 2.$i a new process from the written profile"
  "$bench" "${args[@]}" --profile "$out/cold/p1.profile" --cold 2>&1 | tee "$out/cold/run2.$i.log" |
    grep -E "context|cold|created|fovea: net:|builder made|cuDNN:"
done
# where a new process's create goes, layer by layer (conv2d info lines):
# engine (choice and plan), weights (convert, upload), warm-up (first run)
echo "== per-layer create times of 2.1 (ms): engine weights warm-up"
grep -oE "conv2d [0-9x]+ -> [0-9x]+ \([0-9x]+\).*create: .*" "$out/cold/run2.1.log" |
  sed -E 's/^(conv2d [0-9x]+ -> [0-9x]+ \([0-9x]+\)).*create: engine ([0-9.]+) ms( \(cached plan\))?, weights ([0-9.]+) ms, warm-up ([0-9.]+) ms/\1|\2 \4 \5 \3/' |
  awk -F'|' '{print $1 " | " $2; split($2, v, " "); e += v[1]; w += v[2]; u += v[3]}
             END {printf "sum: engine %.1f ms, weights %.1f ms, warm-up %.1f ms\n", e, w, u}'
