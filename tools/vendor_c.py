#!/usr/bin/env python3
"""Writes the C library into a binding that builds it itself: the amalgamation.

The Go module, the Rust -sys crate and the Python sdist are installed by
`go get`, `cargo add` and pip without Bazel, so each carries the library.
What it carries is two files: kernelbridge.c, the whole library as one
translation unit (tools/amalgamate.py), and kernelbridge.h, the public
header.  This script is the only way those copies are made:

  python3 tools/vendor_c.py sync DEST    write DEST/kernelbridge.c and DEST/kernelbridge.h
  python3 tools/vendor_c.py check DEST   exit 1 if they differ from a fresh amalgamation

KB_SOURCE_ROOT names another tree of the repository's layout to read from
(Bazel's runfiles).  `sync` also removes files an older version of this
script vendored one by one (they carry its old banner).
"""

import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import amalgamate  # noqa: E402

HEADER_BANNER = "/* vendored by tools/vendor_c.py from core/include/kernelbridge.h; do not edit */\n"
OLD_MARK = "vendored by tools/vendor_c.py from "


def wanted(root):
    with open(os.path.join(root, "core/include/kernelbridge.h")) as f:
        header = HEADER_BANNER + f.read()
    return {"kernelbridge.c": amalgamate.build(root), "kernelbridge.h": header}


def main(argv):
    if len(argv) != 3 or argv[1] not in ("sync", "check"):
        sys.exit(__doc__)
    dest = os.path.abspath(argv[2])
    root = os.environ.get("KB_SOURCE_ROOT") or amalgamate.ROOT
    files = wanted(root)
    bad = 0
    for name, want in files.items():
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
            print(f"vendor_c: {path} differs from a fresh amalgamation", file=sys.stderr)
    for path in sorted(glob.glob(os.path.join(dest, "*.[ch]"))):
        if os.path.basename(path) in files:
            continue
        with open(path) as f:
            stale = OLD_MARK in f.readline()
        if stale and argv[1] == "sync":
            os.remove(path)
            print(f"vendor_c: removed {os.path.relpath(path)}")
        elif stale:
            bad += 1
            print(f"vendor_c: {path} is a file-by-file copy from before the amalgamation", file=sys.stderr)
    if argv[1] == "check":
        print(f"vendor_c: kernelbridge.c and kernelbridge.h checked in {dest}, {bad} differ")
        if bad:
            print("vendor_c: run: python3 tools/vendor_c.py sync " + argv[2], file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
