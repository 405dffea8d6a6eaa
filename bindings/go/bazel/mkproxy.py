#!/usr/bin/env python3
"""Writes a file-based Go module proxy holding the module in MODDIR.

  mkproxy.py MODDIR PROXYDIR

The version is the one of the C header vendored in MODDIR (kernelbridge.h,
KB_VERSION_* macros), as a vX.Y.Z tag.  The layout is the GOPROXY protocol's:

  PROXYDIR/<escaped module path>/@v/list          the versions, one per line
  PROXYDIR/<escaped module path>/@v/vX.Y.Z.info   {"Version": ..., "Time": ...}
  PROXYDIR/<escaped module path>/@v/vX.Y.Z.mod    the go.mod file
  PROXYDIR/<escaped module path>/@v/vX.Y.Z.zip    every file as <module>@<version>/<path>

Use with GOPROXY=file://PROXYDIR.  Prints the module path and version.
Files in subdirectories that hold their own go.mod (other modules) are left
out, as `go mod` does; so are version-control directories.
"""

import os
import re
import sys
import zipfile


def module_path(moddir):
    with open(os.path.join(moddir, "go.mod")) as f:
        for line in f:
            m = re.match(r"^module\s+(\S+)", line)
            if m:
                return m.group(1).strip('"')
    sys.exit("mkproxy: no module line in go.mod")


def header_version(moddir):
    with open(os.path.join(moddir, "kernelbridge.h")) as f:
        text = f.read()
    parts = []
    for part in ("MAJOR", "MINOR", "PATCH"):
        m = re.search(rf"^#define\s+KB_VERSION_{part}\s+(\d+)\s*$", text, re.M)
        if not m:
            sys.exit(f"mkproxy: no KB_VERSION_{part} in kernelbridge.h")
        parts.append(m.group(1))
    return "v" + ".".join(parts)


def escape(path):
    """The proxy protocol's case encoding: an upper-case letter becomes !lower."""
    return re.sub(r"[A-Z]", lambda m: "!" + m.group(0).lower(), path)


def module_files(moddir):
    out = []
    for dirpath, dirnames, filenames in os.walk(moddir):
        rel = os.path.relpath(dirpath, moddir)
        if rel != "." and os.path.exists(os.path.join(dirpath, "go.mod")):
            dirnames[:] = []
            continue
        dirnames[:] = sorted(d for d in dirnames if d not in (".git", ".hg", ".svn", ".bzr"))
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if os.path.isfile(path):
                out.append(os.path.normpath(os.path.join(rel, name)))
    return out


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    moddir, proxy = argv[1], argv[2]
    mod = module_path(moddir)
    version = header_version(moddir)
    d = os.path.join(proxy, escape(mod), "@v")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "list"), "w") as f:
        f.write(version + "\n")
    with open(os.path.join(d, version + ".info"), "w") as f:
        f.write('{"Version":"%s","Time":"2024-01-01T00:00:00Z"}\n' % version)
    with open(os.path.join(moddir, "go.mod"), "rb") as src, open(os.path.join(d, version + ".mod"), "wb") as dst:
        dst.write(src.read())
    with zipfile.ZipFile(os.path.join(d, version + ".zip"), "w", zipfile.ZIP_DEFLATED) as z:
        for rel in module_files(moddir):
            info = zipfile.ZipInfo(f"{mod}@{version}/{rel}", date_time=(2024, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            with open(os.path.join(moddir, rel), "rb") as f:
                z.writestr(info, f.read())
    print(mod, version)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
