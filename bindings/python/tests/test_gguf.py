"""kernelbridge.Gguf on small GGUF files written here with struct: keys of
every type, the vocabulary, tensor shapes (row-major), bytes and values,
from a path and from memory, and errors naming the key or tensor."""

import struct

import numpy as np
import pytest

import kernelbridge as kb


def _str(text):
    raw = text.encode("utf-8")
    return struct.pack("<Q", len(raw)) + raw


def _array(elem_type, items):
    return struct.pack("<IQ", elem_type, len(items)) + b"".join(items)


TOKENS = ["<unk>", "<s>", "</s>", "\u2581hello", "<0x0A>"]
EMBD = np.arange(24, dtype=np.float32).reshape(6, 4) / 8  # [vocab, dim]
NORM = np.array([1.0, -2.0, 0.5], dtype=np.float16)


def gguf_bytes(version=3):
    keys = [
        ("general.architecture", 8, _str("llama")),
        ("llama.block_count", 4, struct.pack("<I", 2)),
        ("llama.rope.freq_base", 6, struct.pack("<f", 10000.0)),
        ("llama.attention.layer_norm_rms_epsilon", 12, struct.pack("<d", 1e-6)),
        ("general.flag", 7, b"\x01"),
        ("general.offset", 11, struct.pack("<q", -3)),
        ("tokenizer.ggml.tokens", 9, _array(8, [_str(t) for t in TOKENS])),
        ("tokenizer.ggml.scores", 9, _array(6, [struct.pack("<f", -float(i)) for i in range(5)])),
        ("tokenizer.ggml.token_type", 9, _array(5, [struct.pack("<i", t) for t in (2, 3, 3, 1, 6)])),
    ]
    q4k = bytes(range(144))
    tensors = [
        # name, ne (innermost first), ggml type, data
        ("token_embd.weight", (4, 6), 0, EMBD.tobytes()),
        ("output_norm.weight", (3,), 1, NORM.tobytes()),
        ("blk.0.ffn_down.weight", (256, 1), 12, q4k),
    ]
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(keys))
    for name, typ, payload in keys:
        out += _str(name) + struct.pack("<I", typ) + payload
    offset, data = 0, b""
    for name, ne, typ, blob in tensors:
        out += _str(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        out += struct.pack("<IQ", typ, offset)
        blob += bytes(-len(blob) % 32)
        data += blob
        offset += len(blob)
    out += bytes(-len(out) % 32)
    return out + data


def check_file(g):
    assert g.version == 3
    assert g.keys()[:2] == ["general.architecture", "llama.block_count"]
    assert "llama.block_count" in g and "no.such.key" not in g
    assert g.get("general.architecture") == "llama"
    assert g.get_str("general.architecture") == "llama"
    assert g.get("llama.block_count") == 2 and g.get_int("llama.block_count") == 2
    assert g.get("llama.rope.freq_base") == 10000.0
    assert g.get_float("llama.attention.layer_norm_rms_epsilon") == pytest.approx(1e-6, rel=1e-6)
    assert g.get("general.flag") is True
    assert g.get("general.offset") == -3
    assert g.get("missing", 7) == 7
    assert g.key_type("tokenizer.ggml.tokens") == kb.GgufType.ARRAY
    assert g.array_type("tokenizer.ggml.tokens") == kb.GgufType.STRING
    assert g.get("tokenizer.ggml.tokens") == TOKENS
    blob, offsets, scores, types = g.vocabulary()
    assert offsets.dtype == np.int32 and list(offsets) == [0, 5, 8, 12, 20, 26]
    assert [blob[offsets[i]:offsets[i + 1]].decode() for i in range(5)] == TOKENS
    np.testing.assert_array_equal(scores, -np.arange(5, dtype=np.float32))
    np.testing.assert_array_equal(types, [2, 3, 3, 1, 6])
    assert g.tensor_names() == ["token_embd.weight", "output_norm.weight", "blk.0.ffn_down.weight"]
    assert g.tensor_type("token_embd.weight") == kb.Dtype.F32
    assert g.tensor_shape("token_embd.weight") == (6, 4)  # row-major: GGUF's ne is (4, 6)
    np.testing.assert_array_equal(g.tensor("token_embd.weight"), EMBD)
    np.testing.assert_array_equal(g.tensor("output_norm.weight"), NORM)
    assert g.tensor_nbytes("token_embd.weight") == 96
    assert g.tensor_offset("token_embd.weight") % 32 == 0
    assert g.tensor_type("blk.0.ffn_down.weight") == 12  # Q4_K: listed, not a kernel type
    assert g.tensor_shape("blk.0.ffn_down.weight") == (1, 256)
    with pytest.raises(NotImplementedError, match="'blk.0.ffn_down.weight' has GGML type Q4_K"):
        g.read_tensor("blk.0.ffn_down.weight")
    # The embedding kernel takes the bytes as they are.
    rows = kb.embedding(np.array([5, 0], np.int32), g.tensor("token_embd.weight"))
    np.testing.assert_array_equal(rows, EMBD[[5, 0]])


def test_from_memory_and_path(tmp_path):
    data = gguf_bytes()
    with kb.Gguf(data) as g:
        check_file(g)
    path = tmp_path / "tiny.gguf"
    path.write_bytes(data)
    with kb.Gguf(path) as g:
        check_file(g)
    with kb.Gguf(str(path), ctx=kb.Context()) as g:
        assert g.get("general.architecture") == "llama"
    assert kb.Gguf(gguf_bytes(version=2)).version == 2


def test_errors():
    g = kb.Gguf(gguf_bytes())
    with pytest.raises(kb.InvalidArgumentError, match="key 'general.architecture' is a STRING, not an integer"):
        g.get_int("general.architecture")
    with pytest.raises(kb.InvalidArgumentError, match="holds FLOAT32 values, not integers"):
        g.get_i32("tokenizer.ggml.scores")
    with pytest.raises(KeyError):
        g.get_int("no.such.key")
    with pytest.raises(KeyError):
        g.tensor_shape("no.such.tensor")
    with pytest.raises(kb.InvalidArgumentError, match="key holds a NUL character"):
        g.get_int("a\0b")
    g.close()
    with pytest.raises(kb.InvalidArgumentError, match="closed"):
        g.keys()
    bad = bytearray(gguf_bytes())
    bad[4:8] = struct.pack("<I", 1)
    with pytest.raises(NotImplementedError, match="GGUF version 1"):
        kb.Gguf(bytes(bad))
    with pytest.raises(kb.InvalidArgumentError, match="kb_gguf_open_memory: not a GGUF file"):
        kb.Gguf(b"GGML" + bytes(20))
    data = gguf_bytes()
    with pytest.raises(kb.InvalidArgumentError, match="lies past the end of the file"):
        kb.Gguf(data[:-200])
    with pytest.raises(kb.InvalidArgumentError, match="kb_gguf_open: cannot open '/no/such/file.gguf'"):
        kb.Gguf("/no/such/file.gguf")
