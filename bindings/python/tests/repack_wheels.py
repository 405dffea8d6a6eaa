"""Writes wheels of installed distributions into a directory, offline.

  python3 repack_wheels.py DEST NAME...

An installed distribution is an unpacked wheel: its files are listed in
RECORD and its tags in WHEEL.  The packaging test uses this to give a fresh
virtual environment its dependencies without a package index.
"""

import base64
import hashlib
import os
import sys
import zipfile
from importlib import metadata


def repack(name, dest):
    dist = metadata.distribution(name)
    base = dist.locate_file("")
    info = next(p for p in dist.files if p.parent.name.endswith(".dist-info")).parent
    wheel_meta = dist.read_text("WHEEL")
    tags = [line.split(":", 1)[1].strip() for line in wheel_meta.splitlines() if line.startswith("Tag:")]
    # Compressed tag set: py3-none-any, or cp311-cp311-manylinux_x_y + more platforms.
    pys = ".".join(sorted({t.split("-")[0] for t in tags}))
    abis = ".".join(sorted({t.split("-")[1] for t in tags}))
    plats = ".".join(sorted({t.split("-")[2] for t in tags}))
    fname = f"{dist.metadata['Name'].replace('-', '_')}-{dist.version}-{pys}-{abis}-{plats}.whl"
    record_name = f"{info}/RECORD"
    rows = []
    with zipfile.ZipFile(os.path.join(dest, fname), "w", zipfile.ZIP_DEFLATED) as zf:
        for path in dist.files:
            rel = str(path)
            if rel.startswith("..") or "__pycache__" in rel or rel == record_name or rel.endswith("INSTALLER"):
                continue
            full = os.path.join(base, rel)
            if not os.path.isfile(full):
                continue
            with open(full, "rb") as f:
                data = f.read()
            zf.writestr(rel, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            rows.append(f"{rel},sha256={digest},{len(data)}")
        rows.append(f"{record_name},,")
        zf.writestr(record_name, "\n".join(rows) + "\n")
    return fname


if __name__ == "__main__":
    for n in sys.argv[2:]:
        print("repacked:", repack(n, sys.argv[1]))
