"""A minimal safetensors reader: zero-copy float32 views of a memory-mapped file.

Format: 8 bytes little-endian unsigned header length N, N bytes of JSON
({"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__":
{...}}), then the data; offsets are relative to the first byte after the
header.  Only what the caller asks for is checked and returned, so a file
may hold other tensors (this model's int64 position_ids, the pooler).
"""
import json
import mmap
import struct

import numpy as np

from .errors import ModelError

# A header larger than this is not a model we know how to read.
MAX_HEADER_BYTES = 100 << 20


class SafeTensors:
    """The tensors of one .safetensors file (the file stays mapped while in use)."""

    def __init__(self, path):
        self.path = path
        try:
            with open(path, "rb") as f:
                size = f.seek(0, 2)
                if size < 8:
                    raise ModelError(f"{path}: truncated: {size} bytes, a safetensors file starts with an 8-byte header length")
                self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except FileNotFoundError:
            raise ModelError(f"{path}: missing") from None
        except OSError as e:
            raise ModelError(f"{path}: cannot read: {e.strerror}") from None
        (n,) = struct.unpack("<Q", self._map[:8])
        if n > MAX_HEADER_BYTES or 8 + n > size:
            raise ModelError(f"{path}: truncated or corrupt: header length {n} but the file has {size} bytes")
        try:
            header = json.loads(bytes(self._map[8 : 8 + n]).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ModelError(f"{path}: the header is not valid JSON: {e}") from None
        if not isinstance(header, dict):
            raise ModelError(f"{path}: the header is not a JSON object")
        self._header = header
        self._data_start = 8 + n
        self._data_len = size - self._data_start

    def float32(self, name, shape):
        """The tensor `name` as a read-only float32 array of the given shape."""
        entry = self._header.get(name)
        if name == "__metadata__" or entry is None:
            raise ModelError(f"{self.path}: tensor {name} is missing")
        where = f"{self.path}: tensor {name}"
        if not isinstance(entry, dict):
            raise ModelError(f"{where}: header entry is not an object")
        dtype, dims, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
        if dtype != "F32":
            raise ModelError(f"{where}: dtype is {dtype}, expected F32")
        if not isinstance(dims, list) or not all(type(d) is int and d >= 0 for d in dims):
            raise ModelError(f"{where}: shape {dims!r} is not a list of sizes")
        if list(dims) != list(shape):
            raise ModelError(f"{where}: shape is {list(dims)}, expected {list(shape)}")
        if (not isinstance(offsets, list) or len(offsets) != 2
                or not all(type(o) is int for o in offsets) or not 0 <= offsets[0] <= offsets[1]):
            raise ModelError(f"{where}: data_offsets {offsets!r} are not [begin, end]")
        begin, end = offsets
        count = int(np.prod(shape, dtype=np.int64))
        if end - begin != 4 * count:
            raise ModelError(f"{where}: data_offsets {offsets} hold {end - begin} bytes, shape {list(shape)} needs {4 * count}")
        if end > self._data_len:
            raise ModelError(f"{where}: data ends at byte {self._data_start + end} but the file has "
                             f"{self._data_start + self._data_len} bytes (truncated?)")
        if begin % 4:
            raise ModelError(f"{where}: data_offsets begin {begin} is not a multiple of 4")
        arr = np.frombuffer(self._map, dtype="<f4", count=count, offset=self._data_start + begin)
        return arr.reshape(shape)
