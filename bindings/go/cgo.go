package kernelbridge

// The C library is compiled from the sources vendored into this directory by
// tools/vendor_c.py (cgo compiles every .c file of a package), with the flags
// of the library's own build (tools/bazel/copts.bzl).  -ffp-contract=off is
// not on cgo's list of allowed flags; go_fp_contract.h has the same effect.

/*
#cgo CFLAGS: -std=c99 -O2 -fvisibility=hidden -fno-strict-aliasing -D_POSIX_C_SOURCE=200809L
#cgo CFLAGS: -include ${SRCDIR}/go_fp_contract.h
#cgo LDFLAGS: -lm -lpthread -ldl
*/
import "C"
