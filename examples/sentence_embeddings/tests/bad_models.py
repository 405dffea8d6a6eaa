"""Broken copies of the model folder for the bad-input tests.

make(model_dir, out) writes one folder per case under out (unchanged files
are symbolic links to the real ones; rewritten safetensors files keep the
real size but hold zeros, written sparsely) and returns
{case: (folder, [substrings the error message must contain])}.
"""
import json
import os
import struct

TENSOR_Q3 = "encoder.layer.3.attention.self.query.weight"
TENSOR_FF2 = "encoder.layer.2.intermediate.dense.weight"
TENSOR_LN5 = "encoder.layer.5.output.LayerNorm.bias"
TENSOR_V1 = "encoder.layer.1.attention.self.value.bias"
FILES = ["config.json", "vocab.txt", "model.safetensors", "tokenizer_config.json",
         "sentence_bert_config.json", os.path.join("1_Pooling", "config.json")]


def _header(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    return header, 8 + n, os.path.getsize(path)


def _write_safetensors(path, header, data_bytes):
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        f.truncate(8 + len(text) + data_bytes)


def _folder(model_dir, out, name, replace=()):
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "1_Pooling"), exist_ok=True)
    for rel in FILES:
        if rel not in replace:
            os.symlink(os.path.join(model_dir, rel), os.path.join(d, rel))
    return d


def make(model_dir, out):
    st = os.path.join(model_dir, "model.safetensors")
    header, start, size = _header(st)
    data = size - start
    cases = {}

    def add(name, expect, replace=(), write=None):
        d = _folder(model_dir, out, name, replace)
        if write:
            write(d)
        cases[name] = (d, expect)

    cases["missing_folder"] = (os.path.join(out, "no-such-folder"), ["no-such-folder", "not a directory"])
    add("no_weights", ["model.safetensors", "missing"], replace=("model.safetensors",))
    add("no_config", ["config.json", "missing"], replace=("config.json",))
    add("no_vocab", ["vocab.txt", "missing"], replace=("vocab.txt",))

    def empty(d):
        open(os.path.join(d, "model.safetensors"), "wb").close()
    add("empty_weights", ["model.safetensors", "truncated"], ("model.safetensors",), empty)

    def short(d):
        with open(os.path.join(d, "model.safetensors"), "wb") as f:
            f.write(struct.pack("<Q", start - 8) + b"{" * 92)
    add("header_past_end", ["model.safetensors", "truncated", str(start - 8)], ("model.safetensors",), short)

    def garbage(d):
        with open(os.path.join(d, "model.safetensors"), "wb") as f:
            f.write(struct.pack("<Q", 16) + b'{"a": [1, 2,,]} ' + b"\0" * 64)
    add("header_not_json", ["model.safetensors", "JSON"], ("model.safetensors",), garbage)

    def truncated(d):
        _write_safetensors(os.path.join(d, "model.safetensors"), header, data // 2)
    add("truncated_data", ["model.safetensors", "truncated"], ("model.safetensors",), truncated)

    def changed(change):
        def write(d):
            h = json.loads(json.dumps(header))
            change(h)
            _write_safetensors(os.path.join(d, "model.safetensors"), h, data)
        return write

    add("wrong_dtype", ["model.safetensors", TENSOR_Q3, "F16"], ("model.safetensors",),
        changed(lambda h: h[TENSOR_Q3].update(dtype="F16")))
    add("wrong_shape", ["model.safetensors", TENSOR_FF2, "[1536, 383]"], ("model.safetensors",),
        changed(lambda h: h[TENSOR_FF2].update(shape=[1536, 383])))
    add("missing_tensor", ["model.safetensors", TENSOR_LN5, "missing"], ("model.safetensors",),
        changed(lambda h: h.pop(TENSOR_LN5)))
    add("bad_offsets", ["model.safetensors", TENSOR_V1, "data_offsets"], ("model.safetensors",),
        changed(lambda h: h[TENSOR_V1].update(data_offsets=[h[TENSOR_V1]["data_offsets"][0],
                                                             h[TENSOR_V1]["data_offsets"][1] - 4])))

    def config_with(**kv):
        def write(d):
            with open(os.path.join(model_dir, "config.json")) as f:
                cfg = json.load(f)
            cfg.update(kv)
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump(cfg, f)
        return write
    add("config_string_size", ["config.json", "hidden_size"], ("config.json",), config_with(hidden_size="384"))
    add("config_bad_heads", ["config.json", "num_attention_heads"], ("config.json",),
        config_with(num_attention_heads=7))

    def short_vocab(d):
        with open(os.path.join(model_dir, "vocab.txt"), encoding="utf-8") as f:
            lines = f.read().split("\n")
        with open(os.path.join(d, "vocab.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(lines[:1000]) + "\n")
    add("vocab_too_short", ["vocab.txt", "1000"], ("vocab.txt",), short_vocab)

    def long_seq(d):
        with open(os.path.join(d, "sentence_bert_config.json"), "w") as f:
            json.dump({"max_seq_length": 1000, "do_lower_case": False}, f)
    add("max_seq_length_too_big", ["sentence_bert_config.json", "max_seq_length"],
        ("sentence_bert_config.json",), long_seq)
    return cases
