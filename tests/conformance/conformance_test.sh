#!/usr/bin/env bash
# Runs conformance runners over the corpus and checks them with report.py:
# tolerances, bad-input statuses (n/a needs a reason), the xfail lists, and
# every language's output bytes equal to C's (hashes).  Also fails when a
# runner prints a warning (the Java runner runs under -Xcheck:jni, whose
# complaints are warnings).
#   conformance_test.sh LANG=RUNNER [LANG=RUNNER ...]     (c first)
# or the C runner alone on another backend (docs/conformance.md, "Backends"):
#   conformance_test.sh --backend cpu-buffers|cuda [--cuda-library LIB] c=RUNNER
set -euo pipefail
corpus=tests/conformance/corpus
out=${TEST_UNDECLARED_OUTPUTS_DIR:-${TMPDIR:-/tmp}}
log=$(mktemp "${TEST_TMPDIR:-${TMPDIR:-/tmp}}/conformance.XXXXXX")

backend=cpu
cuda_lib=""
while (($# > 0)) && [[ $1 == --* ]]; do
  case $1 in
    --backend) backend=$2; shift 2 ;;
    --cuda-library) cuda_lib=$2; shift 2 ;;
    *) echo "conformance_test.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

# The runner compares every call with a CPU run of the same call in its own
# process (report.py sees one result file and knows only the CPU's
# tolerances), so on these backends the runner's exit status decides too.
run_backend() {
  if (($# != 1)) || [[ $1 != c=* ]]; then
    echo "conformance_test.sh: --backend takes exactly one c=RUNNER" >&2
    exit 2
  fi
  local runner=${1#c=} result="$out/conformance_c_$backend.json" status=0
  # A statically linked runner would look for the CUDA library next to
  # itself; the test uses the one Bazel built.
  if [[ -n $cuda_lib ]]; then export KB_CUDA_LIBRARY="$PWD/$cuda_lib"; fi
  "$runner" --backend "$backend" --corpus "$corpus" --out "$result" >"$log" 2>&1 || status=$?
  cat "$log"
  if ((status == 0)) && grep -q "^SKIPPED: " "$log"; then
    # No usable CUDA here; Bazel 4 has no "skipped" status, the log says it.
    exit 0
  fi
  if [[ $backend == cpu-buffers ]]; then
    # Tolerances, statuses, one hash per output and the xfail lists, exactly
    # as for the cpu backend (the runner checked bit-identity with the CPU).
    python3 tests/conformance/report.py --result "$result" --corpus "$corpus" \
      --xfail-dir tests/conformance/xfail >"$log" 2>&1 || status=1
    cat "$log"
    # The cuda backend's comparison code, on outputs that are identical here:
    # it must run clean over the whole corpus before a GPU ever runs it.
    "$runner" --backend cpu-buffers --cuda-rules --corpus "$corpus" \
      --out "$out/conformance_c_cuda_rules.json" >"$log" 2>&1 || status=1
    echo "--cuda-rules: $(tail -n 1 "$log")"
    if ((status != 0)); then cat "$log"; fi
  fi
  exit $status
}
if [[ $backend != cpu ]]; then run_backend "$@"; fi
args=()
langs=()
for pair in "$@"; do
  args+=(--runner "$pair")
  langs+=("${pair%%=*}")
done
name=$(IFS=_; echo "${langs[*]}")
status=0
python3 tests/conformance/report.py "${args[@]}" --corpus "$corpus" \
  --xfail-dir tests/conformance/xfail --json "$out/conformance_$name.json" >"$log" 2>&1 || status=$?
cat "$log"
if grep -q -i "warning" "$log"; then
  echo "conformance_test.sh: a runner printed a warning (see above)" >&2
  status=1
fi
if ((${#langs[@]} > 1)) && ! grep -q "^all languages bit-identical to C: yes$" "$log"; then
  echo "conformance_test.sh: outputs are not bit-identical to C's" >&2
  status=1
fi
exit $status
