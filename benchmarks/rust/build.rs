//! Compiles the C baseline against the header kernelbridge-sys ships.
fn main() {
    let include = std::env::var("DEP_KERNELBRIDGE_INCLUDE").expect("kernelbridge-sys exports its include directory");
    println!("cargo:rerun-if-changed=c/baseline.c");
    cc::Build::new()
        .file("c/baseline.c")
        .include(include)
        .opt_level(2)
        .flag("-std=c99")
        .flag("-ffp-contract=off")
        .define("_POSIX_C_SOURCE", "200809L")
        .compile("kbbench");
}
