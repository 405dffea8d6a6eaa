#!/usr/bin/env bash
# llama_cpp.sh - the llama.cpp side of the kernelbridge decode-speed comparison.
#
# 1. Builds llama.cpp's `llama-bench` (CPU only) from the llama.cpp sources
#    vendored in the `llama-cpp-python` PyPI sdist, into a cache directory
#    outside the repository.  The build is skipped when the binary exists.
#    Flags: cmake Release, GGML_NATIVE=OFF with the x86 ISA extensions named
#    explicitly (up to AVX-512 F/CD/VL/DQ/BW + VBMI + VNNI + BF16), AMX OFF
#    (a native build on this VM can die with an illegal instruction), no
#    CUDA / Metal / BLAS, static libraries, `-j2`.
# 2. Runs `llama-bench` on the given GGUF files (prompt processing of 64 and
#    512 tokens, generation of 64 tokens; --reps repetitions, default 3) and
#    prints a compact table: file, model type, threads, test and tokens/s over the
#    repetitions (median, mean, standard deviation).  On a small shared VM
#    the median is the robust figure: a busy neighbour makes ggml's
#    spin-waiting threads lose whole time slices, which drags the mean.
#
# Usage:
#   benchmarks/decoder/llama_cpp.sh --build-only
#   benchmarks/decoder/llama_cpp.sh [--threads 1,2] [--reps 3] MODEL.gguf...
#
# Environment:
#   KB_LLAMA_CPP_DIR          cache directory
#                             (default ${XDG_CACHE_HOME:-$HOME/.cache}/kernelbridge/llama.cpp)
#   LLAMA_CPP_PYTHON_VERSION  llama-cpp-python sdist to build from (default 0.3.36,
#                             which vendors ggml-org/llama.cpp@0c1e57098; the cmake
#                             option names below were checked against it)
#   PYTHON                    python used for `pip download` (default python3)
set -euo pipefail

CACHE_DIR="${KB_LLAMA_CPP_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kernelbridge/llama.cpp}"
VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
PYTHON="${PYTHON:-python3}"
BUILD_DIR="$CACHE_DIR/build-$VERSION"
BENCH="$BUILD_DIR/bin/llama-bench"

THREADS=""
REPS=3
BUILD_ONLY=0
MODELS=()

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'
}

while [[ $# -gt 0 ]]; do
    case "$1" in
        --threads|-t) THREADS="$2"; shift 2 ;;
        --threads=*)  THREADS="${1#*=}"; shift ;;
        --reps|-r)    REPS="$2"; shift 2 ;;
        --reps=*)     REPS="${1#*=}"; shift ;;
        --build-only) BUILD_ONLY=1; shift ;;
        -h|--help)    usage; exit 0 ;;
        --)           shift; MODELS+=("$@"); break ;;
        -*)           echo "llama_cpp.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
        *)            MODELS+=("$1"); shift ;;
    esac
done
[[ -n "$THREADS" ]] || THREADS="$(nproc)"

build() {
    if [[ -x "$BENCH" ]]; then
        echo "llama-bench already built: $BENCH" >&2
        return
    fi
    mkdir -p "$CACHE_DIR"
    local sdist="$CACHE_DIR/llama_cpp_python-$VERSION.tar.gz"
    local src="$CACHE_DIR/llama_cpp_python-$VERSION/vendor/llama.cpp"
    if [[ ! -f "$sdist" ]]; then
        echo "downloading llama-cpp-python==$VERSION sdist ..." >&2
        "$PYTHON" -m pip download --quiet --no-binary :all: --no-deps \
            -d "$CACHE_DIR" "llama-cpp-python==$VERSION"
    fi
    if [[ ! -f "$src/CMakeLists.txt" ]]; then
        tar -xzf "$sdist" -C "$CACHE_DIR"
    fi
    echo "configuring llama.cpp ($(cd "$src" && git rev-parse --short HEAD 2>/dev/null || echo 'unknown commit')) in $BUILD_DIR ..." >&2
    cmake -S "$src" -B "$BUILD_DIR" \
        -DCMAKE_BUILD_TYPE=Release \
        -DBUILD_SHARED_LIBS=OFF \
        -DGGML_NATIVE=OFF \
        -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_BMI2=ON \
        -DGGML_FMA=ON -DGGML_F16C=ON \
        -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON \
        -DGGML_AVX512_BF16=ON \
        -DGGML_AVX_VNNI=OFF \
        -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
        -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_BLAS=OFF -DGGML_VULKAN=OFF \
        -DGGML_BACKEND_DL=OFF -DGGML_CPU_ALL_VARIANTS=OFF \
        -DLLAMA_OPENSSL=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=ON >&2
    cmake --build "$BUILD_DIR" --config Release --target llama-bench -j2 >&2
    echo "built $BENCH" >&2
}

build
if [[ $BUILD_ONLY -eq 1 ]]; then
    echo "$BENCH"
    exit 0
fi
if [[ ${#MODELS[@]} -eq 0 ]]; then
    echo "llama_cpp.sh: no GGUF files given (or use --build-only)" >&2
    exit 2
fi

"$BENCH" --version 2>&1 | sed 's/^/# /'
echo "# llama-bench -p 64,512 -n 64 -t $THREADS -r $REPS"
printf '%-20s %-5s %7s %-6s %9s %9s %8s\n' file type threads test median mean std
for m in "${MODELS[@]}"; do
    # -o jsonl: one JSON object per (model, test, threads) result on stdout;
    # llama-bench's log goes to stderr and is kept for failures only.
    log="$(mktemp)"
    if ! "$BENCH" -m "$m" -p 64,512 -n 64 -t "$THREADS" -r "$REPS" -o jsonl \
            2>"$log" >"$log.out"; then
        echo "llama-bench failed on $m:" >&2
        tail -n 30 "$log" >&2
        rm -f "$log" "$log.out"
        exit 1
    fi
    "$PYTHON" - "$m" "$log.out" <<'EOF'
import json, os, statistics, sys
name = os.path.basename(sys.argv[1])
for line in open(sys.argv[2]):
    line = line.strip()
    if not line:
        continue
    r = json.loads(line)
    test = "pp%d" % r["n_prompt"] if r["n_prompt"] else "tg%d" % r["n_gen"]
    print("%-20s %-5s %7d %-6s %9.1f %9.1f %8.1f" % (
        name, r["model_type"].split()[-1], r["n_threads"], test,
        statistics.median(r["samples_ts"]), r["avg_ts"], r["stddev_ts"]))
EOF
    rm -f "$log" "$log.out"
done
