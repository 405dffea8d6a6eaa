#!/usr/bin/env python3
"""Copies the C sources of the library into a binding that must build them itself.

The Go module and the Rust -sys crate are installed by `go get` / `cargo add`
without Bazel, so they carry a copy of the C core.  This script is the only
way those copies are made:

  python3 tools/vendor_c.py sync DEST    write DEST/<file> for every source
  python3 tools/vendor_c.py check DEST   exit 1 if DEST differs from the sources

Files are flattened into DEST (names are unique across the source folders)
and each starts with a banner saying where it comes from.  DEST may also hold
files this script does not own; `check` only reports extra files that look
vendored (they carry the banner).
"""

import glob
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SOURCES = ["core/include/kernelbridge.h", "core/src/*.c", "core/src/*.h", "kernels/cpu/*.c", "kernels/cpu/*.h"]
MARK = "vendored by tools/vendor_c.py from "


def sources(root=ROOT):
    """Map from flattened file name to its path relative to root."""
    out = {}
    for pattern in SOURCES:
        for path in sorted(glob.glob(os.path.join(root, pattern))):
            rel = os.path.relpath(path, root)
            if rel.endswith("_test.c"):
                continue
            name = os.path.basename(rel)
            if name in out:
                sys.exit(f"vendor_c: {rel} and {out[name]} would both be vendored as {name}")
            out[name] = rel
    return out


def vendored_text(rel, root=ROOT):
    with open(os.path.join(root, rel)) as f:
        body = f.read()
    return f"/* {MARK}{rel}; do not edit */\n" + body


def main(argv):
    if len(argv) != 3 or argv[1] not in ("sync", "check"):
        sys.exit(__doc__)
    dest = os.path.abspath(argv[2])
    root = os.environ.get("KB_SOURCE_ROOT", ROOT)
    files = sources(root)
    bad = 0
    for name, rel in files.items():
        want = vendored_text(rel, root)
        path = os.path.join(dest, name)
        have = open(path).read() if os.path.exists(path) else None
        if have == want:
            continue
        if argv[1] == "sync":
            os.makedirs(dest, exist_ok=True)
            with open(path, "w") as f:
                f.write(want)
            print(f"vendor_c: wrote {os.path.relpath(path)}")
        else:
            bad += 1
            print(f"vendor_c: {path} differs from {rel}", file=sys.stderr)
    for path in sorted(glob.glob(os.path.join(dest, "*.[ch]"))):
        name = os.path.basename(path)
        if name in files:
            continue
        with open(path) as f:
            stale = MARK in f.readline()
        if stale and argv[1] == "sync":
            os.remove(path)
            print(f"vendor_c: removed {os.path.relpath(path)}")
        elif stale:
            bad += 1
            print(f"vendor_c: {path} is no longer a library source", file=sys.stderr)
    if argv[1] == "check":
        print(f"vendor_c: {len(files)} sources checked in {dest}, {bad} differ")
        if bad:
            print("vendor_c: run: python3 tools/vendor_c.py sync " + argv[2], file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
