#!/bin/bash
# Checks libkernelbridge_cuda.so as built:
# - it exports exactly one symbol, kbcuda_get_table;
# - it has no DT_NEEDED entry for cuBLAS (cuBLASLt is dlopen'ed), for the
#   CUDA runtime (linked statically) or for the driver (loaded by the runtime);
# - it holds sm_80 and sm_90 machine code and compute_90 PTX.
#   cuda_build_test.sh LIBRARY FATBIN_LIST_PY
set -euo pipefail
lib=$1
fatbin_list=$2
fail=0
bad() { echo "FAIL: $*"; fail=1; }

[[ -f "$lib" ]] || { echo "FAIL: $lib does not exist"; exit 1; }
echo "library: $lib ($(stat -L -c %s "$lib") bytes)"

exported=$(nm -D --defined-only "$lib" | awk '{print $NF}' | sort)
echo "exported: $exported"
[[ "$exported" == "kbcuda_get_table" ]] || bad "exports more than kbcuda_get_table: $exported"

needed=$(readelf -d "$lib" | awk '/NEEDED/ {print $NF}' | tr -d '[]')
echo "needed:" $needed
if grep -E 'cublas|cudart|libcuda|nvrtc|nvJitLink' <<<"$needed"; then bad "unexpected CUDA DT_NEEDED"; fi

# Device code: cuobjdump when the toolkit has it, else fatbin_list.py (the
# same information read from the .nv_fatbin section).  Each of the 14 .cu
# objects must bring sm_80 and sm_90 cubins and compute_90 PTX.
cuobjdump=""
if command -v cuobjdump >/dev/null 2>&1; then
  cuobjdump=$(command -v cuobjdump)
elif [[ -x /usr/local/cuda/bin/cuobjdump ]]; then
  cuobjdump=/usr/local/cuda/bin/cuobjdump
fi
if [[ -n "$cuobjdump" ]]; then
  listing=$("$cuobjdump" --list-elf "$lib" | sed -n 's/.*\.\(sm_[0-9]*\)\..*cubin.*/elf \1/p'
            "$cuobjdump" --list-ptx "$lib" | sed -n 's/.*\.\(sm_[0-9]*\)\.ptx.*/ptx \1/p')
  echo "device code (cuobjdump):"
else
  listing=$(python3 "$fatbin_list" "$lib")
  echo "device code (fatbin_list.py; no cuobjdump in this toolkit):"
fi
sort <<<"$listing" | uniq -c
n_elf80=$(grep -c '^elf sm_80$' <<<"$listing" || true)
n_elf90=$(grep -c '^elf sm_90$' <<<"$listing" || true)
n_ptx90=$(grep -c '^ptx sm_90$' <<<"$listing" || true)
(( n_elf80 >= 14 )) || bad "sm_80 machine code for $n_elf80 objects, expected >= 14"
(( n_elf90 >= 14 )) || bad "sm_90 machine code for $n_elf90 objects, expected >= 14"
(( n_ptx90 >= 14 )) || bad "compute_90 PTX for $n_ptx90 objects, expected >= 14"
if grep -q '^ptx sm_80$' <<<"$listing"; then bad "unexpected compute_80 PTX"; fi

[[ $fail == 0 ]] && echo PASSED
exit $fail
