package kernelbridge

// The C library is compiled from the amalgamation vendored into this
// directory by tools/vendor_c.py (kernelbridge.c, the whole library; cgo
// compiles every .c file of a package), with the flags of the library's own
// build (tools/bazel/copts.bzl).  -ffp-contract=off is not on cgo's list of
// allowed flags and is not needed: gcc in an ISO mode (-std=c99) does not
// contract a*b+c, and the amalgamation sets clang's FP_CONTRACT pragma.

/*
#cgo CFLAGS: -std=c99 -O2 -fvisibility=hidden -fno-strict-aliasing -D_POSIX_C_SOURCE=200809L
#cgo LDFLAGS: -lm -lpthread -ldl
*/
import "C"
