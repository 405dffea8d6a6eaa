#!/bin/sh
# Builds the kernelbridge Python package (bindings/python, its extension
# compiled in place in a copy) into the cache, unless a build of the same
# sources is there, and writes a launcher for the example (python3 -m text_generation); prints the
# launcher's path.  Needs python3 with cffi, setuptools and numpy, and gcc.
lib_dir=$(dirname "$0")/..
. "$lib_dir/lib.sh"

# The build is keyed by the contents of everything it compiles.
key=$(cd "$ROOT" && find bindings/python core/include core/src kernels/cpu tools/vendor_c.py tools/amalgamate.py -type f \
  ! -path '*/__pycache__/*' ! -path 'bindings/python/csrc/*' ! -path 'bindings/python/build/*' \
  ! -path 'bindings/python/dist/*' ! -name '*.so' ! -name '*_test.c' | LC_ALL=C sort | xargs cat | cksum | cut -d' ' -f1)
out=$CACHE/python
pkg=$out/kernelbridge-$key

build() {
  [ -f "$pkg/.built" ] && return 0
  rm -rf "$out"
  mkdir -p "$pkg"
  (cd "$ROOT/bindings/python" && tar -cf - --exclude=./csrc --exclude=./build --exclude=./dist \
    --exclude='*.so' --exclude=__pycache__ .) | (cd "$pkg" && tar -xf -)
  KB_SOURCE_ROOT=$ROOT python3 "$ROOT/tools/vendor_c.py" sync "$pkg/csrc" >/dev/null
  (cd "$pkg" && python3 setup.py -q build_ext --inplace >"$out/build.log" 2>&1) || {
    cat "$out/build.log" >&2
    echo "python/build.sh: building the kernelbridge extension failed (log above)" >&2
    return 1
  }
  cat >"$out/text_generation" <<LAUNCHER
#!/bin/sh
PYTHONPATH='$pkg:$EXAMPLE/python' PYTHONDONTWRITEBYTECODE=1 exec python3 -m text_generation "\$@"
LAUNCHER
  chmod +x "$out/text_generation"
  touch "$pkg/.built"
}
lock python
build
echo "$out/text_generation"
