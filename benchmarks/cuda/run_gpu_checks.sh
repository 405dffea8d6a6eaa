#!/bin/bash
# run_gpu_checks.sh - everything the project wants from a GPU machine, in
# one call of at most 10 minutes, with the results in one directory.
#
#   benchmarks/cuda/run_gpu_checks.sh [STEP...]        (from the repository root)
#
# Steps, in this order (default: all); the build always runs first:
#   kernels        cuda_kernels_test_bin: every CUDA kernel against the CPU
#   conformance    the C conformance runner, --backend cuda
#   go rust java python
#                  each binding's GPU tests (needs the bundle: KB_GPU_BIN)
#   benchmark      cuda_benchmark (gemm vs cuBLAS, memory-bound, attention)
#   sdpa           attention_sdpa.py (needs torch; builds the Python binding
#                  unless the bundle has it)
#   overhead       a 16-element silu on device buffers from C, Go, Rust, Java
#                  and Python against a bare launch + synchronize (bundle)
#   memcheck-conf  compute-sanitizer memcheck on the cuda conformance runner
#   racecheck-conf compute-sanitizer racecheck on it (small shapes: fast)
#   memcheck       compute-sanitizer memcheck on cuda_kernels_test_bin
#   racecheck      compute-sanitizer racecheck on cuda_kernels_test_bin
#   device-lost    cuda_kernels_test_bin with KB_CUDA_TEST_DEVICE_LOST=1
#
# KB_GPU_BIN: a bundle made by make_gpu_bundle.sh on another machine (the
# directory or its .tar.xz): then nothing is built here, and the binding
# steps run the bundle's test binaries (GPU machines here have no Bazel, Go,
# Rust or Java).  Without it the binding steps report "not run".
#
# Output: ${OUT:-./gpu-out}/summary.md (rewritten after every step, so a
# call cut short still returns what finished), one log per step, the
# conformance JSON, benchmark.md and sdpa.md.  A step that would not fit in
# the time left ($KB_GPU_BUDGET seconds from the start, default 560) is
# reported as "not run": run it in a second call, e.g.
#   benchmarks/cuda/run_gpu_checks.sh memcheck racecheck
# Build: Bazel when it works, otherwise gcc and nvcc directly (the same
# flags as the BUILD files, without -Werror for gcc); KB_GPU_BUILD=direct
# skips Bazel.  Exit status: 0 when no step failed.
set -uo pipefail

start=$SECONDS
budget=${KB_GPU_BUDGET:-560}
out=${OUT:-./gpu-out}
mkdir -p "$out" && out=$(cd "$out" && pwd)
root=$(pwd)
# Unpacked bundles and installed wheels: outside $out, which comes back.
scratch=${TMPDIR:-/tmp}/kb-gpu-checks
mkdir -p "$scratch"
[[ -f core/include/kernelbridge.h ]] || { echo "run from the repository root" >&2; exit 2; }
all=(kernels conformance go rust java python benchmark sdpa overhead memcheck-conf racecheck-conf memcheck racecheck device-lost)
steps=("$@")
((${#steps[@]})) || steps=("${all[@]}")

results=() # "step|status|seconds|note"
left() { echo $((budget - (SECONDS - start))); }

summary() {
  {
    echo "# GPU checks of kernelbridge"
    echo
    echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')" \
      "($(git status --porcelain 2>/dev/null | wc -l) changed files), $(date -u '+%Y-%m-%d %H:%M UTC')," \
      "$((SECONDS - start)) s so far, build: ${build_how:-not yet}"
    echo
    echo '```'
    cat "$out/device.txt" 2>/dev/null
    echo '```'
    echo
    echo "| step | result | seconds | note |"
    echo "|---|---|---|---|"
    for r in "${results[@]}"; do
      IFS='|' read -r s st sec note <<<"$r"
      echo "| $s | $st | $sec | $note |"
    done
    for f in conformance.log benchmark.md sdpa.md overhead.md; do
      [[ -s $out/$f ]] || continue
      echo
      echo "## $f"
      echo
      [[ $f == *.log ]] && echo '```'
      # The runner's per-kernel table and totals; the markdown as it is.
      if [[ $f == *.log ]]; then grep -v "^FAIL" "$out/$f" | tail -n 40; echo '```'; else cat "$out/$f"; fi
    done
  } >"$out/summary.md"
}

# record STEP STATUS SECONDS NOTE
record() {
  results+=("$1|$2|$3|${4//|//}")
  echo "== $1: $2 ($3 s) $4"
  summary
}

# run_step STEP CAP LOG CMD...: runs CMD with a timeout of min(CAP, time
# left - 15 s), output in LOG; sets rc (124: timed out, 125: not run).
run_step() {
  local step=$1 cap=$2 log=$3
  shift 3
  local t=$(($(left) - 15))
  ((t > cap)) && t=$cap
  if ((t < 20)); then
    rc=125
    return
  fi
  echo "== $step (timeout $t s): $*"
  timeout --kill-after=10 "$t" "$@" >"$log" 2>&1
  rc=$?
}

# ---------------------------------------------------------------- device
{
  nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv 2>&1 || echo "nvidia-smi failed"
  command -v nvcc >/dev/null && nvcc --version | tail -n 2
} >"$out/device.txt" 2>&1

# ---------------------------------------------------------------- build
bin="$out/bin"
mkdir -p "$bin"
build_with_bazel() {
  local targets=(//kernels/cuda:libkernelbridge_cuda.so //kernels/cuda:cuda_kernels_test_bin
                 //tests/conformance:c_runner //benchmarks/cuda:cuda_benchmark)
  command -v bazel >/dev/null || { echo "no bazel on PATH"; return 1; }
  [[ ${KB_GPU_BUILD:-} != direct ]] || { echo "KB_GPU_BUILD=direct"; return 1; }
  # A Bazel that cannot work offline must not eat the whole call.
  timeout 300 bazel build "${targets[@]}" || return 1
  local bb
  bb=$(timeout 60 bazel info bazel-bin) || return 1
  cp -f "$bb/kernels/cuda/libkernelbridge_cuda.so" "$bb/kernels/cuda/cuda_kernels_test_bin" \
    "$bb/tests/conformance/c_runner" "$bb/benchmarks/cuda/cuda_benchmark" "$bin/"
}

# The same sources and flags as core/BUILD, kernels/cuda/BUILD,
# tests/conformance/BUILD and benchmarks/cuda/BUILD.
build_directly() {
  local cc=${CC:-gcc} o="$bin/obj" pids=() f
  local copts=(-std=c99 -D_POSIX_C_SOURCE=200809L -O2 -fvisibility=hidden -fno-strict-aliasing -ffp-contract=off
               -Wall -Wextra -Icore/include -Icore/src)
  mkdir -p "$o/cuda"
  for f in core/src/*.c kernels/cpu/*.c; do
    [[ $f == *_test.c ]] && continue
    "$cc" "${copts[@]}" -c "$f" -o "$o/$(basename "${f%.c}").o" & pids+=($!)
  done
  for f in kernels/cuda/*.cu; do
    kernels/cuda/nvcc.sh compile "$f" "$o/cuda/$(basename "${f%.cu}").o" -Icore/include -Icore/src & pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || return 1; done
  rm -f "$o/libkernelbridge.a"
  ar rcs "$o/libkernelbridge.a" "$o"/*.o || return 1
  kernels/cuda/nvcc.sh link "$bin/libkernelbridge_cuda.so" kernels/cuda/kbcuda.map "$o"/cuda/*.o || return 1
  local test_opts=(-std=c99 -D_POSIX_C_SOURCE=200809L -O1 -ffp-contract=off -Icore/include)
  local libs=("$o/libkernelbridge.a" -lm -lpthread -ldl)
  "$cc" "${test_opts[@]}" -Icore/src kernels/cuda/cuda_kernels_test.c "${libs[@]}" -o "$bin/cuda_kernels_test_bin" ||
    return 1
  local runner=()
  for f in tests/conformance/runners/c/*.c; do [[ $f == *_test.c ]] || runner+=("$f"); done
  "$cc" "${test_opts[@]}" "${runner[@]}" "${libs[@]}" -o "$bin/c_runner" || return 1
  benchmarks/cuda/build.sh "$bin/cuda_benchmark" core/include "$o/libkernelbridge.a" -- \
    benchmarks/cuda/bench_*.c benchmarks/cuda/cuda_benchmark.c
}

# The CUDA libraries (cuBLAS, cuBLASLt, which the backend dlopens) where the
# loader might not look: the toolkit's and Python's nvidia-* wheels'.
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
  $(python3 -c 'import nvidia, os; [print(os.path.join(p, "cu13", "lib")) for p in nvidia.__path__]' 2>/dev/null); do
  [[ -e $d/libcublasLt.so.13 ]] && export LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
done

t0=$SECONDS
bundle=""
if [[ -n ${KB_GPU_BIN:-} ]]; then
  if [[ -f $KB_GPU_BIN ]]; then
    bundle=$scratch/bundle
    rm -rf "$bundle" && mkdir -p "$bundle" && xz -dc "$KB_GPU_BIN" | tar -C "$bundle" -xf - || { record build FAIL $((SECONDS - t0)) "cannot unpack $KB_GPU_BIN"; exit 1; }
  else
    bundle=$(cd "$KB_GPU_BIN" && pwd)
  fi
  bin=$bundle
  build_how="prebuilt bundle ($KB_GPU_BIN)"
elif ! { build_how=bazel; build_with_bazel >"$out/build_bazel.log" 2>&1; }; then
  build_how="gcc/nvcc (Bazel failed: see build_bazel.log)"
  if ! build_directly >"$out/build_direct.log" 2>&1; then
    record build FAIL $((SECONDS - t0)) "Bazel and the direct build failed: build_bazel.log, build_direct.log"
    exit 1
  fi
fi
record build ok $((SECONDS - t0)) "$build_how"
lib="$bin/libkernelbridge_cuda.so"
export KB_CUDA_LIBRARY="$lib"

sanitizer=""
for s in "$(command -v compute-sanitizer 2>/dev/null)" "${CUDA_HOME:-/nonexistent}/bin/compute-sanitizer" \
  /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer \
  "$(dirname "$(command -v nvcc 2>/dev/null || echo /x/nvcc)")/compute-sanitizer"; do
  if [[ -n $s && -x $s ]]; then sanitizer=$s; break; fi
done

# ---------------------------------------------------------------- steps
failed=0
# The bundle's Python package, plus cffi from the bundle's wheel when this
# Python has none (installed once, into the output's scratch directory).
pypath=${PYTHONPATH:-}
python_env() {
  pypath=$bin/python${PYTHONPATH:+:$PYTHONPATH}
  python3 -c "import _cffi_backend" >/dev/null 2>&1 && return 0
  local w
  w=$(ls "$bin"/cffi-*.whl 2>/dev/null | head -n 1)
  [[ -n $w ]] || return 0
  [[ -d $scratch/site ]] || python3 -m pip install -q --no-index --no-deps --no-compile --target "$scratch/site" "$w" >"$out/pip.log" 2>&1
  pypath=$pypath:$scratch/site
}
note_of() { grep -E "$2" "$1" 2>/dev/null | tail -n 1 | cut -c1-200; }

for step in "${steps[@]}"; do
  t0=$SECONDS
  log="$out/$step.log"
  status="" note=""
  case $step in
    kernels | device-lost)
      if [[ $step == device-lost ]]; then
        run_step "$step" 240 "$log" env KB_CUDA_TEST_DEVICE_LOST=1 "$bin/cuda_kernels_test_bin" "$lib"
      else
        run_step "$step" 240 "$log" "$bin/cuda_kernels_test_bin" "$lib"
      fi
      note=$(note_of "$log" "passed, .* failed|^SKIPPED")
      if ((rc == 0)) && grep -q "^SKIPPED" "$log"; then status=SKIPPED
      elif ((rc == 0)) && grep -qE "^[0-9]+ passed, 0 failed" "$log"; then status=ok
      fi
      ;;
    conformance)
      # KB_RUNNER_TRACE: each case's name on stderr first, so a crash names it.
      run_step "$step" 120 "$log" env KB_RUNNER_TRACE=1 "$bin/c_runner" --backend cuda \
        --corpus tests/conformance/corpus --out "$out/conformance_cuda.json"
      note=$(note_of "$log" "^c runner|^SKIPPED")
      if ((rc > 128 && rc < 160)); then
        note="killed by signal $((rc - 128)) after $(grep '^runner: ' "$log" | tail -n 1 | cut -c9-80); $note"
        gdb=$(command -v cuda-gdb || echo /usr/local/cuda/bin/cuda-gdb)
        if [[ -x $gdb ]]; then
          # A backtrace of the crash (the runner keeps its symbols).
          rc_keep=$rc
          run_step conformance-gdb 90 "$out/conformance-gdb.log" "$gdb" -batch -ex run -ex bt -ex "info registers rip" \
            --args "$bin/c_runner" --backend cuda --corpus tests/conformance/corpus --out "$scratch/gdb.json"
          rc=$rc_keep
          note+=" (backtrace: conformance-gdb.log)"
        fi
      fi
      if ((rc == 0)) && grep -q "^SKIPPED" "$log"; then status=SKIPPED; elif ((rc == 0)); then status=ok; fi
      ;;
    memcheck* | racecheck*)
      tool=${step%%-*}
      if [[ -z $sanitizer ]]; then
        status=SKIPPED note="compute-sanitizer not found"
        rc=0
      elif [[ $step == *-conf ]]; then
        run_step "$step" 180 "$log" "$sanitizer" --tool "$tool" --error-exitcode 86 "$bin/c_runner" \
          --backend cuda --corpus tests/conformance/corpus --out "$out/conformance_cuda_$tool.json"
      else
        run_step "$step" 240 "$log" "$sanitizer" --tool "$tool" --error-exitcode 86 "$bin/cuda_kernels_test_bin" "$lib"
      fi
      if [[ -z $status ]]; then
        note=$(note_of "$log" "ERROR SUMMARY|RACECHECK SUMMARY")
        # A clean run: exit 0 and "ERROR SUMMARY: 0 errors" (racecheck: "RACECHECK
        # SUMMARY: 0 hazards displayed (0 errors, ..."), and the program under
        # it must not have skipped.
        if ((rc == 0)) && grep -q "^SKIPPED" "$log"; then status=SKIPPED
        elif ((rc == 0)) && grep -qE "ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards displayed \(0 errors" "$log"; then
          status=ok
        fi
      fi
      ;;
    go | rust | java | python)
      if [[ -z $bundle ]]; then
        status="not run" note="needs a bundle (KB_GPU_BIN, make_gpu_bundle.sh)"
        rc=0
      else
        case $step in
          go) run_step "$step" 120 "$log" bash -c "cd bindings/go && exec '$bin/go_gpu.test' -test.count=1 -test.v -test.run '^Test(CUDA|GPU)'" ;;
          rust) run_step "$step" 120 "$log" "$bin/rust_cuda.test" --nocapture --test-threads=1 ;;
          java) run_step "$step" 120 "$log" "$bin/java/jre/bin/java" -Xcheck:jni \
                  -cp "$bin/java/kernelbridge.jar:$bin/java/classes" org.kernelbridge.test.GpuTest ;;
          python) python_env && run_step "$step" 150 "$log" env PYTHONPATH="$pypath" \
                    python3 -m pytest -q -rs -p no:cacheprovider "$bin/python/tests/test_gpu.py" ;;
        esac
        note=$(note_of "$log" "passed|PASS|FAIL|test result|SKIPPED|rror")
        if ((rc == 0)) && grep -qE "SKIPPED:|--- SKIP: TestGPU|[0-9]+ skipped" "$log"; then status=SKIPPED
        elif ((rc == 0)) && [[ $step == java ]] && grep -qi warning "$log"; then status=FAIL note="JVM warning under -Xcheck:jni; $note"
        elif ((rc == 0)); then status=ok
        fi
      fi
      ;;
    overhead)
      if [[ -z $bundle || ! -x $bin/overhead/run.sh ]]; then
        status="not run" note="needs a bundle with overhead/ (make_gpu_bundle.sh)"
        rc=0
      else
        python_env
        run_step "$step" 120 "$log" env PYTHONPATH="$pypath" JAVA="$bin/java/jre/bin/java" \
          KB_JAVA_CP="$bin/java/kernelbridge.jar" "$bin/overhead/run.sh" "$bin/overhead"
        cp "$log" "$out/overhead.md"
        note=$(note_of "$log" "^SKIPPED|FAILED")
        if ((rc == 0)) && grep -q "^SKIPPED" "$log"; then status=SKIPPED; elif ((rc == 0)); then status=ok; fi
      fi
      ;;
    benchmark)
      run_step "$step" 240 "$log" "$bin/cuda_benchmark" --cuda-library "$lib"
      grep -v "^$" "$log" >/dev/null && cp "$log" "$out/benchmark.md"
      note=$(note_of "$log" "^## |^SKIPPED")
      if ((rc == 0)) && grep -q "^SKIPPED" "$log"; then status=SKIPPED; elif ((rc == 0)); then status=ok; fi
      ;;
    sdpa)
      # The Python binding only when torch is there to compare with.
      if [[ -n $bundle ]]; then
        python_env
      elif python3 -c "import torch" >/dev/null 2>&1; then
        run_step sdpa-build 150 "$out/sdpa_build.log" \
          bash -c "cd bindings/python && python3 setup.py build_ext --inplace"
        ((rc == 0)) || note="Python binding build failed (sdpa_build.log); "
        pypath=$root/bindings/python${PYTHONPATH:+:$PYTHONPATH}
      fi
      run_step "$step" 180 "$log" env PYTHONPATH="$pypath" python3 benchmarks/cuda/attention_sdpa.py
      cp "$log" "$out/sdpa.md"
      note+=$(note_of "$log" "^## |^SKIPPED")
      if ((rc == 0)) && grep -q "^SKIPPED" "$log"; then status=SKIPPED; elif ((rc == 0)); then status=ok; fi
      ;;
    *)
      echo "unknown step $step (steps: ${all[*]})" >&2
      rc=2 status=FAIL note="unknown step"
      ;;
  esac
  if [[ -z $status ]]; then
    case $rc in
      124 | 137) status=TIMEOUT ;;
      125) status="not run" note="not enough time left: run it in another call" ;;
      *) status=FAIL note="exit $rc; $note" ;;
    esac
  fi
  [[ $status == FAIL || $status == TIMEOUT ]] && failed=1
  record "$step" "$status" $((SECONDS - t0)) "$note (log: $(basename "$log"))"
done
exit $failed
