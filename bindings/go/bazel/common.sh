# Sourced by the Go binding's sh_tests: finds the module and gives go private,
# writable directories (the sandbox makes $HOME read-only).
set -euo pipefail

# The module's files: from the runfiles under Bazel, else this checkout.
# The caller sets bazel_dir to the directory of this file.
if [[ -n "${TEST_SRCDIR:-}" && -f "$TEST_SRCDIR/${TEST_WORKSPACE:-kernelbridge}/bindings/go/go.mod" ]]; then
  module_src="$TEST_SRCDIR/${TEST_WORKSPACE:-kernelbridge}/bindings/go"
else
  module_src=$(cd "$bazel_dir/.." && pwd)
fi
work=${TEST_TMPDIR:-$(mktemp -d "${TMPDIR:-/tmp}/kb-go-test.XXXXXX")}

# A plain copy of the module: runfiles are symlinks, and go must never write
# into the source tree.
copy_module() {
  local dest=$1
  mkdir -p "$dest"
  (cd "$module_src" && find . -type f -o -type l | grep -v '^\./bazel/' | while read -r f; do
    mkdir -p "$dest/$(dirname "$f")"
    cp -L "$f" "$dest/$f"
  done)
  chmod -R u+w "$dest"
}

export PATH=/usr/bin:$PATH
export HOME=$work/home GOPATH=$work/gopath GOMODCACHE=$work/gopath/pkg/mod
export GOTOOLCHAIN=local GOFLAGS= CGO_ENABLED=1
mkdir -p "$HOME"
