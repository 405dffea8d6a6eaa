#!/usr/bin/env python3
"""Lists the device code images embedded in a CUDA shared object.

The CUDA toolkit installed here has no cuobjdump, so cuda_build_test reads
the .nv_fatbin section itself.  Layout (little endian): a fat binary is a
16-byte header {u32 magic 0xBA55ED50, u16 version, u16 header_size,
u64 payload_size} followed by entries, each {u16 kind (1 = PTX, 2 = ELF
cubin), u16 version, u32 header_size, u64 padded_payload_size, ...,
u32 sm_version at byte 28}.  A linked library holds one fat binary per
object file.  Prints one line per image: "elf sm_80", "ptx sm_90", ...

Usage: fatbin_list.py LIBRARY
"""
import struct
import subprocess
import sys
import tempfile

MAGIC = 0xBA55ED50
KINDS = {1: "ptx", 2: "elf"}


def images(blob):
    off = 0
    while off + 16 <= len(blob):
        magic, _version, header_size, size = struct.unpack_from("<IHHQ", blob, off)
        if magic != MAGIC:
            off += 8  # fat binaries are 8-byte aligned in the section
            continue
        p, end = off + header_size, off + header_size + size
        while p + 32 <= end:
            kind, _v, entry_header, padded = struct.unpack_from("<HHIQ", blob, p)
            sm = struct.unpack_from("<I", blob, p + 28)[0]
            yield KINDS.get(kind, "kind%d" % kind), sm
            if entry_header == 0:
                break
            p += entry_header + padded
        off = end


def main():
    lib = sys.argv[1]
    with tempfile.NamedTemporaryFile(suffix=".bin") as out:
        subprocess.run(["objcopy", "-O", "binary", "--only-section=.nv_fatbin", lib, out.name], check=True)
        blob = open(out.name, "rb").read()
    for kind, sm in images(blob):
        print("%s sm_%d" % (kind, sm))


if __name__ == "__main__":
    main()
