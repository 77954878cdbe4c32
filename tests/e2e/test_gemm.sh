#!/usr/bin/env bash
# The gemm phase on 3 ranks (real mpirun, CPU engine): the HDF5 groups have the documented shapes,
# every rank's output hash agrees and is inside the error bound; `summary` on the file prints what
# the run printed; a planted bit flip (--inject sdc) on one rank is caught and that rank named;
# a stall on one shape names the rank and the shape; hybrid runs the gradient GEMM too.
source "$(dirname "$0")/lib.sh"
# The CPU engine always (auto would pick cuBLASLt on a GPU machine, where k=40 is not allowed).
common=(--phases gemm --set gemm.engine=cpu --set gemm.shapes=[64x48x40,32x16x100]
  --set gemm.iters=3 --set gemm.warmup=1)

"$MPIRUN" -n 3 "$SHAKEDOWN" run "${common[@]}" --out "$TMP/g.h5" >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 0 $? "gemm on 3 ranks"
expect_in "$TMP/stdout" "^gemm \(engine cpu" "gemm section in the summary"
expect_in "$TMP/stdout" "64x48x40 +e4m3xe4m3 +bf16 .* agree \(3\)" "64x48x40 row, hashes agree"
expect_in "$TMP/stdout" "32x16x100 +e4m3xe4m3 +bf16 .* agree \(3\)" "32x16x100 row"
expect_in "$TMP/stdout" "\[PASS\] gemm.output_hash" "hash check passes"
expect_in "$TMP/stdout" "\[PASS\] gemm.numerics" "numerics check passes"
for d in tflops time_us; do
  h5dump -H -d "/gemm/64x48x40/$d" "$TMP/g.h5" >"$TMP/h"
  grep -q 'SIMPLE { ( 3, 3 )' "$TMP/h" || { cat "$TMP/h"; fail "$d should be [iters=3, world=3]"; }
done
for d in max_rel_err err_bound_ratio output_hash hash_group rows_checked; do
  h5dump -H -d "/gemm/32x16x100/$d" "$TMP/g.h5" >"$TMP/h"
  grep -q 'SIMPLE { ( 3 )' "$TMP/h" || { cat "$TMP/h"; fail "$d should be [world=3]"; }
done
# OpenBLAS's kernels: on a CPU with AVX2 and FMA never its Prescott (SSE3) fallback, which a CPU
# model newer than the library gets (then shakedown restarts with OPENBLAS_CORETYPE and says so).
detail=$(h5dump -a /gemm/64x48x40/hash_group_0 "$TMP/g.h5" | sed -n 's/.*(0): "\(.*\)"/\1/p')
alone=$(/usr/bin/python3 -c 'import ctypes; b = ctypes.CDLL("libopenblas.so.0"); b.openblas_get_corename.restype = ctypes.c_char_p; print(b.openblas_get_corename().decode())')
if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo && [[ -z "${OPENBLAS_CORETYPE:-}" ]]; then
  [[ "$detail" != *"Prescott kernels"* ]] || fail "CPU engine on Prescott kernels on an AVX2 CPU: $detail"
  if [[ "$alone" == Prescott ]]; then
    [[ "$detail" == *"(OPENBLAS_CORETYPE="*" set by shakedown: OpenBLAS took its Prescott fallback for this CPU model)"* ]] ||
      fail "the engine should say shakedown chose its kernels: $detail"
    # A user's OPENBLAS_CORETYPE stands, even the fallback's; the engine then says what to set.
    OPENBLAS_CORETYPE=Prescott "$MPIRUN" -x OPENBLAS_CORETYPE -n 2 "$SHAKEDOWN" run "${common[@]}" \
      --out "$TMP/typo.h5" >"$TMP/typo.out" 2>&1
    expect_rc 0 $? "gemm with OPENBLAS_CORETYPE=Prescott"
    detail=$(h5dump -a /gemm/64x48x40/hash_group_0 "$TMP/typo.h5" | sed -n 's/.*(0): "\(.*\)"/\1/p')
    [[ "$detail" == *"Prescott kernels (OpenBLAS's Prescott fallback, slow on this CPU: set OPENBLAS_CORETYPE="*")"* ]] ||
      fail "the fallback the user asked for should say what to set: $detail"
  else
    [[ "$detail" == *"$alone kernels, "* ]] || fail "OpenBLAS's own choice ($alone) should stand: $detail"
  fi
fi
# Every row checked on the CPU engine; the hashes are identical (read independently with h5dump).
h5dump -d /gemm/64x48x40/rows_checked "$TMP/g.h5" >"$TMP/rows"
grep -q '(0): 64, 64, 64' "$TMP/rows" || { cat "$TMP/rows"; fail "CPU engine should check all 64 rows"; }
h5dump -d /gemm/64x48x40/output_hash "$TMP/g.h5" >"$TMP/hash"
hashes=$(sed -n 's/.*(0): \(.*\)/\1/p' "$TMP/hash" | tr -d ' ' | tr ',' '\n' | sort -u | wc -l)
[[ "$hashes" == 1 ]] || { cat "$TMP/hash"; fail "ranks' hashes differ without a fault"; }
"$SHAKEDOWN" summary "$TMP/g.h5" >"$TMP/summary"
expect_rc 0 $? "summary of the gemm run"
diff <(sed -n '/^gemm /,$p' "$TMP/stdout") <(sed -n '/^gemm /,$p' "$TMP/summary") >"$TMP/diff" ||
  { cat "$TMP/diff"; fail "summary differs from what the run printed"; }

# scripts/analyze.py (h5py + pandas) reads the gemm groups in run order.
/usr/bin/python3 "$SHAKEDOWN_SOURCE_DIR/scripts/analyze.py" "$TMP/g.h5" >"$TMP/analyze" 2>&1 ||
  { cat "$TMP/analyze"; fail "analyze.py on the gemm run"; }
expect_in "$TMP/analyze" "^64x48x40 \(e4m3 x e4m3 -> bf16, engine cpu\)" "analyze.py gemm section"
grep -m 1 -E '^(64x48x40|32x16x100) ' "$TMP/analyze" >"$TMP/first"
grep -q '^64x48x40 ' "$TMP/first" || fail "analyze.py should list the shapes in run order"

"$MPIRUN" -n 3 "$SHAKEDOWN" run "${common[@]}" --inject sdc:rank=2,phase=gemm,step=2 \
  --out "$TMP/s.h5" >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 3 $? "planted bit flip"
expect_in "$TMP/stdout" "rank 2 \(host [^,]+, node 0\): gemm 32x16x100 output hash differs from the majority of the 3 ranks" \
  "the flipped rank is named with its shape"
expect_in "$TMP/stdout" "64x48x40 .* agree \(3\)" "the shape without the flip still agrees"
expect_in "$TMP/stdout" "verdict: DATA CORRUPTION: gemm.output_hash on rank 2 \(host [^,]+, node 0\) \(exit 3\)" "verdict"
# A flip in every shape: the headline names the check and rank once, with its count.
"$MPIRUN" -n 3 "$SHAKEDOWN" run "${common[@]}" --inject sdc:rank=2,phase=gemm \
  --out "$TMP/s_all.h5" >"$TMP/stdout_all" 2>"$TMP/stderr"
expect_rc 3 $? "planted bit flip in every shape"
expect_in "$TMP/stdout_all" "verdict: DATA CORRUPTION: gemm.output_hash on rank 2 \(host [^,]+, node 0\) \([0-9]+ findings\)(;| \(exit)" "one headline entry per check and rank"
grep "output hash differs" "$TMP/stdout" >"$TMP/named"
grep -v "^ .*rank 2 (host [^,]*, node 0): gemm" "$TMP/named" >"$TMP/others" && { cat "$TMP/others"; fail "a rank without the fault was named"; }
[[ "$(h5_root_attr "$TMP/s.h5" status)" == complete ]] || fail "the sdc run should finish (complete)"
"$SHAKEDOWN" summary "$TMP/s.h5" >/dev/null
expect_rc 3 $? "summary of the corrupted run keeps exit 3"

# fp32 output: flipping the lowest mantissa bit stays inside the error bound, so only the hash
# comparison can catch it, and it must (3 ranks: the majority names rank 1).
"$MPIRUN" -n 3 "$SHAKEDOWN" run "${common[@]}" --set gemm.out_dtype=fp32 \
  --inject sdc:rank=1,phase=gemm,step=1 --out "$TMP/f.h5" >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 3 $? "bit flip in an fp32 output"
expect_in "$TMP/stdout" "\[PASS\] gemm.numerics" "the flip is inside the numeric bound"
expect_in "$TMP/stdout" "rank 1 \(host [^,]+, node 0\): gemm 64x48x40 output hash differs" "hash names rank 1"

# Two ranks that differ: no majority, so neither is blamed alone, but the run is not healthy.
"$MPIRUN" -n 2 "$SHAKEDOWN" run "${common[@]}" --set gemm.out_dtype=fp32 \
  --inject sdc:rank=1,phase=gemm --out "$TMP/two.h5" >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 3 $? "two ranks disagree"
expect_in "$TMP/stdout" "the output hashes of rank 0 .*, rank 1 .* differ and no majority says which is wrong" "tie reported"
expect_in "$TMP/stdout" "\[FAIL\] gemm.output_hash: gemm [0-9x]+: the output hashes of" "tie fails the check"
[[ $(grep -c "differ and no majority says which is wrong" "$TMP/stdout") -eq 2 ]] || fail "both shapes' ties should be listed"

# One rank: nothing to compare with, said as a warning (not a silent pass).
"$MPIRUN" -n 1 "$SHAKEDOWN" run "${common[@]}" --out "$TMP/one.h5" >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 0 $? "one rank"
expect_in "$TMP/stdout" "\[WARN\] gemm.output_hash: rank 0 had no peer running the same code" "uncompared rank said"

# A step that does not exist would never plant the fault: refused.
"$MPIRUN" -n 2 "$SHAKEDOWN" run "${common[@]}" --inject sdc:rank=1,phase=gemm,step=3 \
  --out "$TMP/n.h5" >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 2 $? "sdc step beyond the shapes"
expect_in "$TMP/stderr" "the gemm phase has 2 step\(s\).*use step=1..2" "names the steps there are"

start=$(date +%s)
"$MPIRUN" -n 3 "$SHAKEDOWN" run "${common[@]}" --set timeouts.phase_s=4 \
  --inject stall:rank=1,phase=gemm,step=2 --out "$TMP/t.h5" >"$TMP/stdout" 2>"$TMP/stderr"
rc=$?
expect_rc 3 $rc "stall in gemm"
(($(date +%s) - start < 20)) || fail "the gemm stall took too long to end the job"
expect_in "$TMP/stderr" "rank 1 \(host [^,]+, node 0\) did not reach 'gemm 32x16x100'" "stall names rank and shape"
h5dump -H -d /gemm/64x48x40/tflops "$TMP/t.h5" >"$TMP/h" || fail "shape measured before the stall lost"

"$MPIRUN" -n 2 "$SHAKEDOWN" run --phases gemm --set gemm.engine=cpu --set gemm.shapes=[32x32x64] --set gemm.format=hybrid \
  --set gemm.out_dtype=fp32 --out "$TMP/h.h5" >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 0 $? "hybrid fp32"
expect_in "$TMP/stdout" "32x32x64 +e4m3xe4m3 +fp32" "forward GEMM"
expect_in "$TMP/stdout" "32x32x64_e5m2xe4m3 +e5m2xe4m3 +fp32" "gradient GEMM"

if ! nvidia-smi -L >/dev/null 2>&1; then
  "$MPIRUN" -n 2 "$SHAKEDOWN" run --phases gemm --set gemm.engine=cublaslt --out "$TMP/x.h5" \
    >"$TMP/stdout" 2>"$TMP/stderr"
  expect_rc 2 $? "cublaslt without a GPU"
  expect_in "$TMP/stderr" "gemm.engine: cublaslt needs a GPU on every rank" "says why"
fi
pass "gemm"
