//! Compiles the C sources in csrc/ (a copy of the library's sources made by
//! tools/vendor_c.py) into a static library and links it.
//!
//! The flags are those of the C library's own build (tools/bazel/copts.bzl),
//! whatever Cargo profile is active: -O2 and -ffp-contract=off make every
//! binding compute bit-identical results; -fvisibility=hidden keeps the
//! library's internal helpers out of the exported symbols.

use std::fs;
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR is set by cargo"));
    let csrc = manifest.join("csrc");

    let mut sources: Vec<PathBuf> = fs::read_dir(&csrc)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", csrc.display()))
        .map(|entry| entry.expect("readable directory entry").path())
        .collect();
    sources.sort();
    for path in &sources {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    println!("cargo:rerun-if-changed={}", csrc.display());

    let mut build = cc::Build::new();
    for path in sources.iter().filter(|p| p.extension().is_some_and(|e| e == "c")) {
        build.file(path);
    }
    build
        .include(&csrc)
        .opt_level(2)
        .flag("-std=c99")
        .flag("-ffp-contract=off")
        .flag("-fno-strict-aliasing")
        .flag("-fvisibility=hidden")
        .define("_POSIX_C_SOURCE", "200809L")
        .warnings(false)
        .compile("kernelbridge");

    println!("cargo:rustc-link-lib=m");
    println!("cargo:rustc-link-lib=pthread");
    // The CUDA backend is loaded at run time with dlopen (csrc/cuda_loader.c);
    // nothing of CUDA is needed to build or link.
    println!("cargo:rustc-link-lib=dl");
    // For build scripts of dependent crates: DEP_KERNELBRIDGE_INCLUDE.
    println!("cargo:include={}", csrc.display());
}
