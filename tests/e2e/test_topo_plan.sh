#!/usr/bin/env bash
# `shakedown topo` under mpirun and `shakedown plan` without MPI.
source "$(dirname "$0")/lib.sh"
"$MPIRUN" -n 4 "$SHAKEDOWN" topo --virtual-nodes 2 --set topology.allow_oversubscribe=true \
  >"$TMP/topo" 2>&1
expect_rc 0 $? "topo"
expect_in "$TMP/topo" "4 ranks on 2 nodes" "topo header"
expect_in "$TMP/topo" "^  3 +1 +1 +" "topo row of rank 3"
expect_in "$TMP/topo" "placement.ranks_per_node" "topo checks"
# hwloc without its plugins (libhwloc-plugins not installed, or HWLOC_PLUGINS_PATH elsewhere, as
# on a GPU machine running device-check.sh's bundle): the GL and OpenCL components it is asked to
# leave out do not exist, which is no error.
mkdir -p "$TMP/no-plugins"
HWLOC_PLUGINS_PATH="$TMP/no-plugins" "$SHAKEDOWN" topo >"$TMP/topo1" 2>&1
expect_rc 0 $? "topo with no hwloc plugins"

xml="$SHAKEDOWN_SOURCE_DIR/tests/data/topology/dgx_like.xml"
"$SHAKEDOWN" plan --nodes 2 --ranks-per-node 8 --topology-xml "$xml" >"$TMP/plan" 2>&1
expect_rc 0 $? "plan 2x8"
[[ $(grep -c '^rank [0-9]*=' "$TMP/plan") -eq 16 ]] || fail "plan: not 16 rankfile lines"
expect_in "$TMP/plan" "ppr:8:node" "plan mpirun mapping"
expect_in "$TMP/plan" "ntasks-per-node=8" "plan srun options"

"$SHAKEDOWN" plan --nodes 0 --ranks-per-node 8 >"$TMP/plan" 2>&1
expect_rc 2 $? "plan with 0 nodes"
expect_in "$TMP/plan" "^--nodes: 0 is out of range: give a whole number from 1 to 1000000$" "the range said plainly"
"$SHAKEDOWN" plan --nodes two --ranks-per-node 8 >"$TMP/plan" 2>&1
expect_rc 2 $? "plan with a word for nodes"
expect_in "$TMP/plan" "^--nodes: 'two' is not a whole number" "a word is not called out of range"
# Memory budget of one GPU (the numbers themselves are unit-tested in unit_train).
"$SHAKEDOWN" plan --model llama2-70b --tp 8 --dp 16 --micro-batch 1 --seq-len 4096 --zero 1 \
  --gpu h200-sxm >"$TMP/budget" 2>&1
expect_rc 0 $? "plan --model llama2-70b"
expect_in "$TMP/budget" "68.98 B parameters" "budget names the model"
expect_in "$TMP/budget" "^fits: yes" "llama2-70b fits an H200 at tp 8, zero 1"
expect_in "$TMP/budget" "largest micro-batch that fits" "budget: largest micro-batch"
"$SHAKEDOWN" plan --model llama2-70b --tp 8 --dp 16 --seq-len 4096 --recompute none \
  --gpu h100-sxm >"$TMP/budget" 2>&1
expect_rc 0 $? "plan that does not fit"
expect_in "$TMP/budget" "^fits: NO" "a budget over the device says so"
"$SHAKEDOWN" plan --model llama2-7b --inference --context 8192 --concurrency 64 --gpu h200-sxm \
  --format json >"$TMP/budget.json" 2>&1
expect_rc 0 $? "plan --inference --format json"
/usr/bin/python3 - "$TMP/budget.json" <<'PY' || fail "inference budget JSON"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["kind"] == "inference", j["kind"]
kv = [i for i in j["items"] if i["name"] == "KV cache bf16"][0]
# 2 x 32 layers x 32 heads x 128 x 8192 tokens x 64 sequences x 2 B = 256 GiB
assert kv["bytes"] == 256 * 2**30, kv
assert j["fits"] is False and 0 < j["largest_concurrency"] < 64, j
PY
"$SHAKEDOWN" plan --model llama2-70b --tp 3 --dp 16 >"$TMP/budget" 2>&1
expect_rc 2 $? "plan with tp 3"
expect_in "$TMP/budget" "nearest valid tp: 2 or 4" "bad tp names the nearest valid values"
"$SHAKEDOWN" plan --model llama2-8b >"$TMP/budget" 2>&1
expect_rc 2 $? "plan with an unknown model"
expect_in "$TMP/budget" "error: --model llama2-8b: train.model: unknown model .*did you mean \"llama2-7b\"" "unknown model, named as typed"
"$SHAKEDOWN" plan --model llama2-7b --seq-len -5 >"$TMP/budget" 2>&1
expect_rc 2 $? "plan with a negative sequence length"
expect_in "$TMP/budget" "error: --seq-len -5: train.seq_len: must be an integer" "the flag named as typed"
"$SHAKEDOWN" plan --model llama2-7b --gpu h300 >"$TMP/budget" 2>&1
expect_rc 2 $? "plan with an unknown GPU"
"$SHAKEDOWN" plan >"$TMP/budget" 2>&1
expect_rc 2 $? "plan with nothing to plan"
"$SHAKEDOWN" plan --model llama2-7b --context 100 >"$TMP/budget" 2>&1
expect_rc 2 $? "an inference option without --inference"
expect_in "$TMP/budget" "--context requires --inference" "refused, not left out silently"
# A preset without --seq-len is planned at its own sequence length, and says so.
"$SHAKEDOWN" plan --model llama2-70b --tp 8 --dp 16 --zero 1 --gpu h100-sxm >"$TMP/budget" 2>&1
expect_rc 0 $? "plan of a preset without --seq-len"
expect_in "$TMP/budget" "seq_len 4096 \(the model's own; --seq-len to change\)" "the preset's sequence length"
expect_in "$TMP/budget" "^fits: NO" "llama2-70b at 4096 tokens does not fit an H100 without pipeline parallelism"
# A layout with a budget that fails prints no rankfile (it would be redirected into a file).
"$SHAKEDOWN" plan --model llama2-7b --tp 8 --nodes 2 --ranks-per-node 4 >"$TMP/rankfile" 2>"$TMP/err"
expect_rc 2 $? "plan whose tp does not divide the ranks per node"
[[ ! -s "$TMP/rankfile" ]] || fail "a failed plan printed to standard output"
expect_in "$TMP/err" "train.tp = 8 does not divide the ranks per node = 4" "the rule named"
pass "topo and plan"
