#!/bin/bash
# The CPU library must work on machines without CUDA: no DT_NEEDED on any
# CUDA library (only the C runtime's) and no undefined cuda*/cublas* symbol.
#   core_no_cuda_dep_test.sh path/to/libkernelbridge.so
set -euo pipefail
lib=$1
needed=$(readelf -d "$lib" | awk '/NEEDED/ {print $NF}' | tr -d '[]')
echo "needed:" $needed
fail=0
if grep -Ei 'cuda|cublas|nvrtc|nvJitLink|libnv' <<<"$needed"; then echo "FAIL: CUDA DT_NEEDED"; fail=1; fi
# Only the C runtime: the CUDA backend is dlopen'ed (libdl on glibc < 2.34),
# never linked, and nothing else may sneak in (libstdc++ from the toolchain).
for lib in $needed; do
  case $lib in
    libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | ld-linux*) ;;
    *) echo "FAIL: unexpected DT_NEEDED $lib (allowed: libc, libm, libdl, libpthread)"; fail=1 ;;
  esac
done
if nm -D --undefined-only "$lib" | grep -Ei ' (cu|cublas|nvrtc)[A-Z_]'; then
  echo "FAIL: undefined CUDA symbols"
  fail=1
fi
[[ $fail == 0 ]] && echo PASSED
exit $fail
