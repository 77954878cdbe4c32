#!/usr/bin/env bash
# Accuracy of the straggler verdict on this machine (a benchmark, not a CI test): N healthy
# 4-rank smoke runs (2 virtual nodes, as scripts/demo.sh runs them) and N runs per planted
# slowdown, rotating the planted rank. Prints the false flags over the healthy runs and, per
# planted case, how often the planted rank and only it was named, and which ranks were named.
#   bench/verdict_accuracy.sh [N=20] [build folder=build-release]
# Targets: 0 false stragglers in 20 healthy runs; the planted rank alone named in >= 19/20 at 2x.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-20}
build=${2:-build-release}
[[ "$build" == /* ]] || build="$root/$build"  # relative to the repository, or absolute
bin="$build/shakedown"
[[ -x "$bin" ]] || { echo "no $bin: build first (scripts/demo.sh or cmake --build $build)" >&2; exit 2; }
tmp=$(mktemp -d /tmp/sd-accuracy.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# named RUNLOG CHECK: the ranks a check named (one per finding line), sorted, comma-separated.
named() {
  grep -E "^  \[(WARN|FAIL)\] $2: |^         rank [0-9]+ .*" "$1" | grep -E "$2|^         rank" |
    sed -n "/\[\(WARN\|FAIL\)\] $2: /,/^  \[/p" | grep -oE '^(  \[[A-Z]+\] [a-z._]+: )?( *)rank [0-9]+' |
    grep -oE '[0-9]+$' | sort -n | paste -sd, -
}

run() {  # run LOG ARGS...
  "$root/scripts/mpirun-local.sh" -n 4 "$bin" run --config "$root/configs/smoke.yaml" \
    --virtual-nodes 2 --out "$tmp/run.h5" "${@:2}" >"$1" 2>&1
  rm -f "$tmp/run.h5"
}

echo "# verdict accuracy: $n runs per case, 4 ranks on $(nproc) cores (2 virtual nodes), configs/smoke.yaml"
false_gemm=0 false_late=0
for ((i = 0; i < n; i++)); do
  run "$tmp/log"
  g=$(named "$tmp/log" gemm.stragglers) l=$(named "$tmp/log" collectives.lateness)
  [[ -n "$g" ]] && false_gemm=$((false_gemm + 1))
  [[ -n "$l" ]] && false_late=$((false_late + 1))
  [[ -n "$g$l" ]] && echo "  healthy run $i: named gemm [$g] lateness [$l]"
done
printf '%-32s %s\n' "healthy: false gemm.stragglers" "$false_gemm/$n runs"
printf '%-32s %s\n' "healthy: false lateness" "$false_late/$n runs"

for spec in gemm:1.3 gemm:2 collectives:2; do
  phase=${spec%%:*} factor=${spec##*:}
  check=gemm.stragglers
  [[ $phase == collectives ]] && check=collectives.lateness
  right=0 others=""
  for ((i = 0; i < n; i++)); do
    rank=$((i % 4))
    run "$tmp/log" --inject "slow:rank=$rank,phase=$phase,factor=$factor"
    got=$(named "$tmp/log" "$check")
    if [[ "$got" == "$rank" ]]; then right=$((right + 1)); else others+=" run $i (planted $rank): [$got];"; fi
  done
  printf '%-32s %s\n' "slow $phase x$factor: $check" "planted rank alone named in $right/$n runs${others:+; otherwise:$others}"
done
