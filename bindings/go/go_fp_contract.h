/*
 * go_fp_contract.h - forced into every C file of the Go package (see cgo.go).
 *
 * The library is built with -ffp-contract=off so that a*b+c is never fused
 * into one FMA and results are bit-identical across languages.  cgo does not
 * accept that flag in #cgo CFLAGS, so the package gets the same effect this
 * way: GCC in an ISO mode (-std=c99) does not contract across or within
 * expressions, and clang honours the standard pragma below.
 */
#ifndef KBGO_FP_CONTRACT_H
#define KBGO_FP_CONTRACT_H
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif
#endif
