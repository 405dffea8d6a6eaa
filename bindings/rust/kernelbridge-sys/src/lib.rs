//! Raw FFI declarations of kernelbridge, a C library of neural-network kernels.
//!
//! The declarations in this crate are produced by bindgen from
//! `kernelbridge.h` (see `regen.sh`); the build script compiles the C
//! sources shipped in `csrc/` with the flags of the C library, so results are
//! bit-identical to every other kernelbridge binding.  Semantics, argument
//! contracts and error behaviour are documented in the header (`csrc/kernelbridge.h`,
//! also exported to dependent build scripts as `DEP_KERNELBRIDGE_INCLUDE`)
//! and in the safe crate `kernelbridge`, which most users want instead.
//!
//! The CUDA backend is not linked: the C library loads
//! `libkernelbridge_cuda.so` with `dlopen` the first time CUDA is asked for
//! (this crate links `libdl`), so building needs no CUDA.
//!
//! Enums are plain integer constants (`kb_status_KB_STATUS_OK`, ...), so a
//! value the binding does not know can never be undefined behaviour.
#![no_std]
#![allow(non_upper_case_globals, non_camel_case_types, non_snake_case)]

include!("bindings.rs");
