"""Compiler and linker flags for every C target of kernelbridge, in one place."""

# Warnings are errors everywhere; the C sources are C99 plus POSIX.
KB_C_WARNINGS = [
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wshadow",
    "-Wstrict-prototypes",
    "-Wmissing-prototypes",
    "-Wvla",
    "-Wformat=2",
    "-Wundef",
    "-Wpointer-arith",
]

# Flags for library sources: only KB_API symbols are exported.  No
# -ffast-math: results must be bit-reproducible across bindings.
KB_LIB_COPTS = ["-std=c99", "-D_POSIX_C_SOURCE=200809L", "-O2", "-fvisibility=hidden", "-fno-strict-aliasing", "-ffp-contract=off"] + KB_C_WARNINGS

# Flags for tests, examples and tools.
KB_TEST_COPTS = ["-std=c99", "-D_POSIX_C_SOURCE=200809L", "-O1", "-ffp-contract=off"] + KB_C_WARNINGS

# -ldl: core/src/cuda_loader.c dlopen()s the CUDA backend (libc has dlopen
# since glibc 2.34; older systems need libdl).
KB_LINKOPTS = ["-lm", "-lpthread", "-ldl"]
