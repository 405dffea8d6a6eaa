#!/bin/bash
# Runs the GPU comparison program with the library built here.  The program
# itself prints SKIPPED and exits 0 when there is no GPU or driver.
#   cuda_kernels_test.sh PROGRAM LIBRARY
set -euo pipefail
exec "$1" "$2"
