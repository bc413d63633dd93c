#!/usr/bin/env bash
# The GPU check, in one call on the device machine (see docs/device-notes.md):
# the GPU tests, every shared case on the GPU against the f64 reference,
# compute-sanitizer memcheck on the seed and the out-of-range case, then the
# benchmarks. Built binaries come from $TF_BIN (default .devcarry/bin, copied
# there by `scripts/gpu_check.sh --stage`). Logs go under $OUT (or
# ./gpu-logs); a short table is printed last.
#
#   scripts/gpu_check.sh --stage            # here: copy the built binaries
#   scripts/gpu_check.sh [tests|cases|memcheck|bench ...]   # there: run parts (default: all)
#
# Parts: tests (test_gpu, the GPU tests of test_runtime, MmaSyncPeak), cases, memcheck, bench,
# and, not in the default set: vector (test_gpu and the cases again with
# TILEFUSE_VECTOR_LOADS=0), startup (a cold then a warm `run -v` of the seed: kernel-cache use
# and the time to the first launch), torch (bench/compare_torch.py on every bench program;
# TORCH_LIMIT, TORCH_ARGS),
# tf32 (--allow-tf32: the GpuTf32 tests, every case with --check, bench of gemm_f32),
# python (the Python package on torch CUDA tensors, python/tests: the seed against `tilefuse
# run` bit for bit, symbolic M at 1, 7, 2048, 5000, a side stream, CUDA-graph capture and
# replay, an index error leaving the context usable, jit vs eager, the host overhead of 1000
# calls; with pytest when the interpreter has it, else python/tests/run.py; $PYTHON picks it).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
BIN="${TF_BIN:-$ROOT/.devcarry/bin}"
if [[ "${1:-}" == "--stage" ]]; then
  mkdir -p "$BIN"
  cp "$BUILD/tilefuse" "$BUILD/libtilefuse.so" "$BIN/"
  rm -f "$BIN"/test_*
  # Only the binaries the parts below run (the carry limit is 64 MiB).
  for t in test_gpu test_runtime test_codegen; do cp "$BUILD/tests/$t" "$BIN/"; done
  du -sh "$BIN"
  exit 0
fi
# Logs are written to $LOG and packed into one file under $OUT at the end
# (the device tool returns at most 8 files).
LOG="${TF_LOG:-/tmp/tf-gpu-logs}"
rm -rf "$LOG"; mkdir -p "$LOG"
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
export TILEFUSE_CACHE_DIR="${TILEFUSE_CACHE_DIR:-/tmp/tf-cache}"
# The tests that run the CLI take the staged binary, not the build path's.
export TILEFUSE_TEST_BINARY="${TILEFUSE_TEST_BINARY:-$BIN/tilefuse}"
# The test binaries find the sources at the path they were built in.
if [[ ! -e /work/main/tests ]]; then mkdir -p /work && ln -sfn "$ROOT" /work/main; fi
parts=("$@")
[[ ${#parts[@]} -eq 0 ]] && parts=(tests cases memcheck bench)
declare -a TABLE
row() { TABLE+=("$(printf '%-34s %s' "$1" "$2")"); }
has() { local p; for p in "${parts[@]}"; do [[ "$p" == "$1" ]] && return 0; done; return 1; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$LOG/gpu.txt" 2>&1

if has tests; then
  for t in "$BIN"/test_*; do
    name=$(basename "$t")
    filter='*'
    case "$name" in
      test_runtime) filter='Cuda*:DeviceNumeric*:*Cublas*:*Timing*:*Cache*' ;;
      test_codegen) filter='*Peak*' ;;
      test_gpu) ;;
      *) continue ;;
    esac
    "$t" --gtest_filter="$filter" > "$LOG/$name.log" 2>&1
    rc=$?
    summary=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$LOG/$name.log" | tr '\n' ' ')
    row "$name" "rc=$rc $summary"
  done
fi

if has cases; then
  pass=0; fail=0
  for f in "$ROOT"/tests/cases/*.tfs "$ROOT"/examples/*.tfs; do
    for plan in fused unfused; do
      b=$(basename "$f" .tfs)
      "$BIN/tilefuse" run "$f" --device cuda --plan "$plan" --check -v > "$LOG/case-$b-$plan.log" 2>&1
      rc=$?
      want=0; [[ "$b" == gather_out_of_range ]] && want=1
      if [[ $rc == "$want" ]]; then pass=$((pass+1)); else fail=$((fail+1)); row "case $b $plan" "FAILED rc=$rc"; fi
    done
  done
  row "shared cases on the GPU (x2 plans)" "$pass passed, $fail failed"
  # Symbolic dims on the GPU: one program at several token counts (the
  # kernels take T and M as arguments), both plans, against the f64 oracle.
  pass=0; fail=0
  for m in 1 7 2048 5000; do
    for plan in fused unfused; do
      "$BIN/tilefuse" run "$ROOT/examples/symbolic/gather_mm_tokens.tfs" --shape "T=4096,M=$m" \
        --device cuda --plan "$plan" --check -v > "$LOG/case-tokens-M$m-$plan.log" 2>&1
      if [[ $? == 0 ]]; then pass=$((pass+1)); else fail=$((fail+1)); row "symbolic M=$m $plan" FAILED; fi
    done
  done
  row "symbolic gather_mm_tokens (M=1,7,2048,5000 x2)" "$pass passed, $fail failed"
fi

if has vector; then
  TILEFUSE_VECTOR_LOADS=0 "$BIN/test_gpu" > "$LOG/test_gpu-vector.log" 2>&1
  rc=$?
  row "test_gpu VECTOR_LOADS=0" "rc=$rc $(grep -E '^\[  (PASSED|FAILED) ' "$LOG/test_gpu-vector.log" | tr '\n' ' ')"
  pass=0; fail=0
  for f in "$ROOT"/tests/cases/*.tfs "$ROOT"/examples/*.tfs; do
    b=$(basename "$f" .tfs)
    [[ "$b" == gather_out_of_range ]] && continue
    TILEFUSE_VECTOR_LOADS=0 "$BIN/tilefuse" run "$f" --device cuda --plan fused --check > "$LOG/vcase-$b.log" 2>&1
    if [[ $? == 0 ]]; then pass=$((pass+1)); else fail=$((fail+1)); row "vector case $b" FAILED; fi
  done
  row "cases VECTOR_LOADS=0 (fused)" "$pass passed, $fail failed"
fi

if has tf32; then
  "$BIN/test_gpu" --gtest_filter='GpuTf32*' > "$LOG/test_gpu-tf32.log" 2>&1
  rc=$?
  row "test_gpu GpuTf32*" "rc=$rc $(grep -E '^\[  (PASSED|FAILED) ' "$LOG/test_gpu-tf32.log" | tr '\n' ' ')"
  pass=0; fail=0
  for f in "$ROOT"/tests/cases/*.tfs "$ROOT"/examples/*.tfs; do
    b=$(basename "$f" .tfs)
    [[ "$b" == gather_out_of_range ]] && continue
    for plan in fused unfused; do
      "$BIN/tilefuse" run "$f" --device cuda --plan "$plan" --check --allow-tf32 > "$LOG/tcase-$b-$plan.log" 2>&1
      if [[ $? == 0 ]]; then pass=$((pass+1)); else fail=$((fail+1)); row "tf32 case $b $plan" FAILED; fi
    done
  done
  row "cases --allow-tf32 (x2 plans)" "$pass passed, $fail failed"
  "$BIN/tilefuse" bench "$ROOT/bench/programs/gemm_f32.tfs" --allow-tf32 > "$LOG/bench-gemm_f32-tf32.log" 2>&1
  rc=$?
  echo "== bench gemm_f32 --allow-tf32 (rc=$rc)"; cat "$LOG/bench-gemm_f32-tf32.log"
  row "bench gemm_f32 tf32 (us)" "fused=$(awk '$1=="fused"{print $2}' "$LOG/bench-gemm_f32-tf32.log") cuBLASLt-GEMM=$(awk '$1=="cuBLASLt"{print $4}' "$LOG/bench-gemm_f32-tf32.log")"
fi

if has startup; then
  seed="$ROOT/tests/cases/seed_gather_mm_f16.tfs"
  TILEFUSE_CACHE_DIR=/tmp/tf-startup "$BIN/tilefuse" run "$seed" -v > "$LOG/startup-cold.log" 2>&1
  for i in 1 2 3; do
    TILEFUSE_CACHE_DIR=/tmp/tf-startup "$BIN/tilefuse" run "$seed" -v > "$LOG/startup-warm$i.log" 2>&1
  done
  row "startup cold" "$(grep -E '^(tuning|first launch)' "$LOG/startup-cold.log" | cut -c1-60 | tr '\n' ' ')"
  for i in 1 2 3; do
    row "startup warm $i" "$(grep -E '^(first launch|compile:)|kernel ' "$LOG/startup-warm$i.log" | sed 's/;.*//' | tr '\n' ' ')"
  done
fi

if has memcheck; then
  for b in seed_gather_mm_f16 gather_out_of_range; do
    compute-sanitizer --tool memcheck --error-exitcode 99 "$BIN/tilefuse" run "$ROOT/tests/cases/$b.tfs" \
      --device cuda > "$LOG/memcheck-$b.log" 2>&1
    rc=$?
    row "memcheck $b" "rc=$rc $(grep -E 'ERROR SUMMARY' "$LOG/memcheck-$b.log" | head -1)"
  done
fi

if has bench; then
  for f in "$ROOT"/bench/programs/*.tfs; do
    b=$(basename "$f" .tfs)
    "$BIN/tilefuse" bench "$f" > "$LOG/bench-$b.log" 2>&1
    rc=$?
    echo "== bench $b (rc=$rc)"; cat "$LOG/bench-$b.log"
    fused=$(awk '$1=="fused"{print $2}' "$LOG/bench-$b.log")
    unf=$(awk '$1=="unfused"{print $2}' "$LOG/bench-$b.log")
    blas=$(awk '$1=="unfused+cuBLASLt"{print $2}' "$LOG/bench-$b.log")
    gemm=$(awk '$1=="cuBLASLt"{print $4}' "$LOG/bench-$b.log")
    row "bench $b (us)" "fused=$fused unfused=$unf unfused+cuBLASLt=$blas cuBLASLt-GEMM=$gemm"
  done
fi

if has torch; then
  # (TORCH_LIMIT: the seconds after which compare_torch starts no program, so that the part ends
  # and its log is packed within a device call; torch.compile's max-autotune takes minutes a
  # program. TORCH_ARGS: more flags, e.g. --no-compile. Session 45 lost a whole run to a call's
  # timeout with the log unpacked.)
  timeout $(( ${TORCH_LIMIT:-300} + 240 )) python3 "$ROOT/bench/compare_torch.py" \
    --tilefuse "$BIN/tilefuse" --json "$LOG/compare_torch.json" --time-limit "${TORCH_LIMIT:-300}" \
    ${TORCH_ARGS:-} > "$LOG/compare_torch.log" 2>&1
  rc=$?
  echo "== compare_torch (rc=$rc)"; tail -40 "$LOG/compare_torch.log"
  row "compare_torch" "rc=$rc (table above)"
fi

if has python; then
  PY="${PYTHON:-python3}"
  export TILEFUSE_LIBRARY="$BIN/libtilefuse.so" TILEFUSE_CLI="$BIN/tilefuse" PYTHONPATH="$ROOT/python"
  export TILEFUSE_OVERHEAD_JSON="$LOG/python-overhead.json" PYTHONDONTWRITEBYTECODE=1
  if "$PY" -c "import pytest" 2>/dev/null; then
    "$PY" -m pytest -v -s -p no:cacheprovider "$ROOT/python/tests" > "$LOG/python.log" 2>&1
  else
    "$PY" "$ROOT/python/tests/run.py" > "$LOG/python.log" 2>&1
  fi
  rc=$?
  echo "== python (rc=$rc)"; tail -60 "$LOG/python.log"
  row "python tests ($("$PY" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__)' 2>&1 | tail -1))" \
    "rc=$rc $(grep -aE '^[0-9]+ passed|passed|failed' "$LOG/python.log" | tail -1)"
  [[ -f "$LOG/python-overhead.json" ]] && row "python host overhead (median us/call)" "$(cat "$LOG/python-overhead.json")"
fi

if [[ -n "${OUT:-}" ]]; then tar -czf "$OUT/gpu-logs.tgz" -C "$LOG" . ; fi
echo
echo "== tilefuse GPU check: $(head -2 "$LOG/gpu.txt" | tail -1)"
printf '%s\n' "${TABLE[@]}"
