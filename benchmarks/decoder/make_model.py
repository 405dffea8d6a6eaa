#!/usr/bin/env python3
"""Write a Llama-architecture GGUF file with random weights, for decode-speed benchmarks.

The file loads in llama.cpp (llama-bench, llama-cli, ...) like a converted
Llama checkpoint, but its weights are random, so only its speed means
anything.  Optionally (--dump-raw) every tensor is also written as a raw
file, byte for byte as stored in the GGUF, with a JSON index, so that a C
benchmark can run on the identical weights without a GGUF parser.

Presets (SwiGLU FFN, grouped-query attention, head_dim 64, RMSNorm eps 1e-5,
rope theta 10000, context 2048, untied input/output embeddings):

    small:  8 layers, hidden  512,  8 q / 2 kv heads, FFN 1536, vocab  8000  (~32.3 M params)
    large: 14 layers, hidden 1280, 20 q / 4 kv heads, FFN 3584, vocab 32000  (~329.7 M params, ~10.2x)

Weights are drawn from numpy.random.default_rng(seed), in the order of the
tensor list below (token_embd, then per block attn_norm, attn_q, attn_k,
attn_v, attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down, then output_norm,
output), each as a float32 normal with std 0.02 (norm weights: 1 + normal
noise with std 0.02).  The same seed gives the same float weights for every
--type; only their rounding/quantization differs.  The 2-D matrices are
stored in --type using gguf's own quantizer (gguf.quants.quantize); the 1-D
norm weights are always F32.

Usage:
    python3 benchmarks/decoder/make_model.py --out /tmp/m.gguf --preset small --type q8_0 --seed 0
    python3 benchmarks/decoder/make_model.py --out /tmp/m.gguf --preset small --type f32 \\
        --seed 0 --dump-raw /tmp/m-raw

Requires the `gguf` and `numpy` PyPI packages (pip install gguf numpy).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict, dataclass

import numpy as np

try:
    import gguf
except ImportError:  # pragma: no cover - depends on the machine
    sys.exit("make_model.py: the `gguf` package is missing; run: pip install gguf numpy")


@dataclass(frozen=True)
class Config:
    n_layer: int
    n_embd: int
    n_head: int
    n_head_kv: int
    n_ff: int
    n_vocab: int
    n_ctx: int = 2048
    rope_theta: float = 10000.0
    rms_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head


PRESETS = {
    "small": Config(n_layer=8, n_embd=512, n_head=8, n_head_kv=2, n_ff=1536, n_vocab=8000),
    "large": Config(n_layer=14, n_embd=1280, n_head=20, n_head_kv=4, n_ff=3584, n_vocab=32000),
}

QTYPES = {
    "f32": (gguf.GGMLQuantizationType.F32, gguf.LlamaFileType.ALL_F32),
    "f16": (gguf.GGMLQuantizationType.F16, gguf.LlamaFileType.MOSTLY_F16),
    "bf16": (gguf.GGMLQuantizationType.BF16, gguf.LlamaFileType.MOSTLY_BF16),
    "q8_0": (gguf.GGMLQuantizationType.Q8_0, gguf.LlamaFileType.MOSTLY_Q8_0),
    "q4_0": (gguf.GGMLQuantizationType.Q4_0, gguf.LlamaFileType.MOSTLY_Q4_0),
}

WEIGHT_STD = 0.02


def tensor_specs(cfg: Config) -> list[tuple[str, tuple[int, ...]]]:
    """(name, shape) for every tensor, shapes in PyTorch [out, in] order.

    gguf's writer stores numpy shapes reversed (ggml's ne[0] is the
    contiguous, input dimension), which is the layout llama.cpp expects,
    e.g. token_embd.weight has ne = {n_embd, n_vocab}.
    """
    e, kv = cfg.n_embd, cfg.n_head_kv * cfg.head_dim
    specs: list[tuple[str, tuple[int, ...]]] = [("token_embd.weight", (cfg.n_vocab, e))]
    for i in range(cfg.n_layer):
        b = f"blk.{i}."
        specs += [
            (b + "attn_norm.weight", (e,)),
            # llama.cpp's llama architecture uses the "normal" (non-NeoX) rope:
            # it rotates adjacent pairs (2j, 2j+1) of each head.  Hugging Face
            # Llama checkpoints rotate (j, j + head_dim/2) instead, so
            # llama.cpp's converter permutes the rows of attn_q / attn_k when
            # it writes a GGUF.  These weights are random, so there is nothing
            # to permute and speed is unaffected; a C implementation that must
            # reproduce llama.cpp's numbers on these exact weights has to use
            # the adjacent-pair rope convention.
            (b + "attn_q.weight", (e, e)),
            (b + "attn_k.weight", (kv, e)),
            (b + "attn_v.weight", (kv, e)),
            (b + "attn_output.weight", (e, e)),
            (b + "ffn_norm.weight", (e,)),
            (b + "ffn_gate.weight", (cfg.n_ff, e)),
            (b + "ffn_up.weight", (cfg.n_ff, e)),
            (b + "ffn_down.weight", (e, cfg.n_ff)),
        ]
    specs += [("output_norm.weight", (e,)), ("output.weight", (cfg.n_vocab, e))]
    return specs


def parameter_count(cfg: Config) -> int:
    return sum(int(np.prod(shape)) for _, shape in tensor_specs(cfg))


def random_tensors(cfg: Config, seed: int):
    """Yield (name, float32 array) deterministically from the seed."""
    rng = np.random.default_rng(seed)
    for name, shape in tensor_specs(cfg):
        w = rng.standard_normal(shape, dtype=np.float32)
        w *= np.float32(WEIGHT_STD)
        if len(shape) == 1:  # RMSNorm gains: 1 + small noise
            w += np.float32(1.0)
        yield name, w


def encode(w: np.ndarray, qtype: gguf.GGMLQuantizationType) -> np.ndarray:
    """Return the array exactly as it will be stored in the GGUF file.

    F32/F16 come back as float arrays, every other type as uint8 blocks
    of shape [out, in / block_size * type_size].
    """
    if w.ndim == 1:
        return w  # norm weights always F32
    return gguf.quants.quantize(w, qtype)


def add_tokenizer(writer: gguf.GGUFWriter, n_vocab: int) -> None:
    """A minimal SentencePiece-style ("llama") vocabulary.

    ids 0-2: <unk>, <s>, </s>; ids 3-258: the byte tokens <0x00>..<0xFF>
    (llama.cpp looks up <0x0A> for the newline); the rest are unique
    placeholder pieces.  Enough for llama.cpp to load the model and for
    llama-bench, which feeds random token ids.
    """
    if n_vocab < 259:
        raise ValueError("vocabulary must hold at least 259 tokens")
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    types += [gguf.TokenType.BYTE] * 256
    scores = [0.0] * len(tokens)
    for i in range(len(tokens), n_vocab):
        tokens.append(f"\u2581tok{i}")
        types.append(gguf.TokenType.NORMAL)
        scores.append(-float(i))
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="GGUF file to write")
    ap.add_argument("--preset", choices=sorted(PRESETS), default="small")
    ap.add_argument("--type", choices=list(QTYPES), default="f32",
                    help="storage type of the 2-D weight matrices (norms stay F32)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dump-raw", metavar="DIR",
                    help="also write each tensor's stored bytes to DIR/<name>.bin "
                         "plus DIR/index.json")
    args = ap.parse_args(argv)

    cfg = PRESETS[args.preset]
    qtype, ftype = QTYPES[args.type]
    n_params = parameter_count(cfg)

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    writer = gguf.GGUFWriter(args.out, "llama")  # sets general.architecture
    writer.add_name(f"kernelbridge-random-llama-{args.preset}-{args.type}-seed{args.seed}")
    writer.add_file_type(int(ftype))
    if qtype not in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16):
        writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    writer.add_context_length(cfg.n_ctx)
    writer.add_embedding_length(cfg.n_embd)
    writer.add_block_count(cfg.n_layer)
    writer.add_feed_forward_length(cfg.n_ff)
    writer.add_head_count(cfg.n_head)
    writer.add_head_count_kv(cfg.n_head_kv)
    writer.add_rope_dimension_count(cfg.head_dim)
    writer.add_rope_freq_base(cfg.rope_theta)
    writer.add_layer_norm_rms_eps(cfg.rms_eps)
    writer.add_vocab_size(cfg.n_vocab)
    add_tokenizer(writer, cfg.n_vocab)

    index = []
    if args.dump_raw:
        os.makedirs(args.dump_raw, exist_ok=True)
    for name, w in random_tensors(cfg, args.seed):
        stored = encode(w, qtype)
        ttype = gguf.GGMLQuantizationType.F32 if w.ndim == 1 else qtype
        if stored.dtype == np.uint8:
            writer.add_tensor(name, stored, raw_dtype=ttype)
        else:
            writer.add_tensor(name, stored)
        if args.dump_raw:
            fname = name + ".bin"
            with open(os.path.join(args.dump_raw, fname), "wb") as f:
                f.write(np.ascontiguousarray(stored).tobytes())
            index.append({"name": name, "file": fname, "type": ttype.name,
                          "shape": list(w.shape), "nbytes": int(stored.nbytes)})

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    if args.dump_raw:
        meta = {
            "preset": args.preset, "type": args.type, "seed": args.seed,
            "n_params": n_params, "weight_std": WEIGHT_STD,
            "config": {**asdict(cfg), "head_dim": cfg.head_dim},
            "rope": "adjacent pairs (2j, 2j+1) per head, as ggml's normal rope mode",
            "shape_order": "PyTorch [out, in]; rows are contiguous",
            "tensors": index,
        }
        with open(os.path.join(args.dump_raw, "index.json"), "w") as f:
            json.dump(meta, f, indent=1)
            f.write("\n")

    size = os.path.getsize(args.out)
    print(f"wrote {args.out}: preset {args.preset}, {n_params / 1e6:.1f} M params, "
          f"{args.type}, {size / 2**20:.1f} MiB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
