#!/usr/bin/env python3
"""Makes the tiny test models of the text generation example.

Run once by a developer (never by CI or `bazel test`), from anywhere:

    python3 examples/text_generation/testdata/make_models.py

Needs numpy, sentencepiece and gguf (pip); see README.md beside this file
for the versions used.  Writes, beside this script:

  tokenizer.model           SentencePiece BPE vocabulary with byte fallback,
                            trained on the repository's README.md and docs/*.md
  tiny-llama-f32.gguf       dense model, float32 weights
  tiny-llama-f16.gguf       the same weights, 2-D tensors in float16
  tiny-llama-bf16.gguf      the same weights, 2-D tensors in bfloat16
  tiny-llama-q8_0.gguf      the same weights, 2-D tensors in Q8_0
  tiny-llama-q4_0.gguf      the same weights, 2-D tensors in Q4_0
  tiny-moe-f32.gguf         Mixtral-style model with experts, float32

Every output is a pure function of the training text and the constants
below: the vocabulary trainer runs on one thread over the input in file
order, the weights come from numpy's PCG64 generator with fixed seeds.

Weights are drawn in the Hugging Face transformers layout (`hf_weights`,
also used by make_references.py) and converted to GGUF as llama.cpp's
converter converts a real Llama checkpoint: the q and k projections are
permuted from rotate-half to adjacent-pair RoPE order (`permute_qk`), and
the tensors are renamed.  An implementation reading these files must
therefore apply RoPE to adjacent pairs (x[2i], x[2i+1]).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))

# ---------------------------------------------------------------------------
# Vocabulary

VOCAB_SIZE = 1000
# Llama's special tokens: <unk>=0, <s>=1, </s>=2, no padding token.
UNK_ID, BOS_ID, EOS_ID = 0, 1, 2

# Options of the Llama tokenizer's trainer spec where they matter for
# encoding (BPE, byte fallback, digits split, no normalisation, whitespace
# kept as is, a dummy prefix), and single-threaded, unshuffled training.
SPM_OPTIONS = dict(
    model_type="bpe",
    vocab_size=VOCAB_SIZE,
    byte_fallback=True,
    split_digits=True,
    character_coverage=0.9995,
    normalization_rule_name="identity",
    add_dummy_prefix=True,
    remove_extra_whitespaces=False,
    allow_whitespace_only_pieces=True,
    split_by_whitespace=True,
    max_sentencepiece_length=16,
    max_sentence_length=16384,
    unk_id=UNK_ID,
    bos_id=BOS_ID,
    eos_id=EOS_ID,
    pad_id=-1,
    unk_surface=" \u2047 ",
    num_threads=1,
    input_sentence_size=0,
    shuffle_input_sentence=False,
    minloglevel=2,
)


def training_text_files() -> list[str]:
    """README.md, then docs/*.md in name order, as repository paths."""
    docs = sorted(f for f in os.listdir(os.path.join(REPO, "docs")) if f.endswith(".md"))
    return ["README.md"] + ["docs/" + f for f in docs]


def training_lines() -> list[str]:
    """The non-blank lines of the training files, in order."""
    lines = []
    for rel in training_text_files():
        with open(os.path.join(REPO, rel), encoding="utf-8") as f:
            lines.extend(line for line in f.read().splitlines() if line.strip())
    return lines


def train_tokenizer(out_path: str) -> None:
    import io
    import sentencepiece as spm

    # Sentences from an iterator and the model into memory: the trainer
    # spec stored in the model then names no temporary path, and the file
    # is the same bytes on every run.
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(training_lines()), model_writer=model, **SPM_OPTIONS)
    with open(out_path, "wb") as f:
        f.write(model.getvalue())


def vocab_from_spm(model_path: str):
    """tokens (bytes), scores, token types as llama.cpp's converter derives them."""
    import sentencepiece as spm
    import gguf

    sp = spm.SentencePieceProcessor()
    sp.Load(model_path)
    tokens, scores, types = [], [], []
    for i in range(sp.vocab_size()):
        tokens.append(sp.IdToPiece(i).encode("utf-8"))
        scores.append(float(sp.GetScore(i)))
        if sp.IsUnknown(i):
            t = gguf.TokenType.UNKNOWN
        elif sp.IsControl(i):
            t = gguf.TokenType.CONTROL
        elif sp.IsUnused(i):
            t = gguf.TokenType.UNUSED
        elif sp.IsByte(i):
            t = gguf.TokenType.BYTE
        else:
            t = gguf.TokenType.NORMAL
        types.append(int(t))
    assert sp.unk_id() == UNK_ID and sp.bos_id() == BOS_ID and sp.eos_id() == EOS_ID
    return tokens, scores, types


# ---------------------------------------------------------------------------
# Model configurations and weights

DENSE = dict(
    name="kernelbridge tiny llama",
    seed=27001,
    n_layer=2,
    n_embd=64,
    n_head=4,
    n_head_kv=2,
    head_dim=16,
    n_ff=128,
    n_ctx=256,
    rms_eps=1e-5,
    rope_theta=10000.0,
    n_expert=0,
    n_expert_used=0,
)

MOE = dict(DENSE, name="kernelbridge tiny moe", seed=27002, n_expert=4, n_expert_used=2)

# Standard deviations of the random weights.  Chosen so that attention
# scores, the feed-forward branch and the residual stream are all of order
# one (the model's output depends on the context, not only on the last
# token), and logits have a spread of a few units: top-1 / top-2 margins
# are then large against float32 rounding, yet nothing saturates.
EMBED_STD = 1.0
OUTPUT_STD = 0.4
NORM_JITTER = 0.1


def hf_weights(cfg: dict, vocab_size: int) -> dict[str, np.ndarray]:
    """float32 weights named and laid out as transformers' LlamaForCausalLM /
    MixtralForCausalLM state dicts (Linear weights are [out, in])."""
    rng = np.random.Generator(np.random.PCG64(cfg["seed"]))
    E, F, H, KV, D = cfg["n_embd"], cfg["n_ff"], cfg["n_head"], cfg["n_head_kv"], cfg["head_dim"]

    def normal(shape, std):
        return (rng.standard_normal(shape, dtype=np.float64) * std).astype(np.float32)

    def norm_weight():
        return (1.0 + normal((E,), NORM_JITTER)).astype(np.float32)

    w = {"model.embed_tokens.weight": normal((vocab_size, E), EMBED_STD)}
    for i in range(cfg["n_layer"]):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = norm_weight()
        w[p + "self_attn.q_proj.weight"] = normal((H * D, E), E ** -0.5)
        w[p + "self_attn.k_proj.weight"] = normal((KV * D, E), E ** -0.5)
        w[p + "self_attn.v_proj.weight"] = normal((KV * D, E), E ** -0.5)
        w[p + "self_attn.o_proj.weight"] = normal((E, H * D), (H * D) ** -0.5)
        w[p + "post_attention_layernorm.weight"] = norm_weight()
        if cfg["n_expert"] == 0:
            w[p + "mlp.gate_proj.weight"] = normal((F, E), E ** -0.5)
            w[p + "mlp.up_proj.weight"] = normal((F, E), E ** -0.5)
            w[p + "mlp.down_proj.weight"] = normal((E, F), F ** -0.5)
        else:
            w[p + "block_sparse_moe.gate.weight"] = normal((cfg["n_expert"], E), E ** -0.5)
            for x in range(cfg["n_expert"]):
                q = p + f"block_sparse_moe.experts.{x}."
                w[q + "w1.weight"] = normal((F, E), E ** -0.5)  # gate
                w[q + "w3.weight"] = normal((F, E), E ** -0.5)  # up
                w[q + "w2.weight"] = normal((E, F), F ** -0.5)  # down
    w["model.norm.weight"] = norm_weight()
    w["lm_head.weight"] = normal((vocab_size, E), OUTPUT_STD)
    return w


def permute_qk(weight: np.ndarray, n_head: int) -> np.ndarray:
    """Rows of a q or k projection ([n_head * head_dim, n_embd]) reordered from
    rotate-half RoPE order (feature j pairs with j + head_dim/2) to adjacent
    pairs (2i pairs with 2i + 1), as llama.cpp's converter does: within each
    head, the new row 2i is old row i and the new row 2i+1 is old row
    i + head_dim/2."""
    rows = weight.shape[0]
    return (weight.reshape(n_head, 2, rows // n_head // 2, *weight.shape[1:])
            .swapaxes(1, 2)
            .reshape(weight.shape))


def unpermute_qk(weight: np.ndarray, n_head: int) -> np.ndarray:
    """Inverse of permute_qk."""
    rows = weight.shape[0]
    return (weight.reshape(n_head, rows // n_head // 2, 2, *weight.shape[1:])
            .swapaxes(1, 2)
            .reshape(weight.shape))


def gguf_tensors(cfg: dict, hf: dict[str, np.ndarray]) -> list[tuple[str, np.ndarray]]:
    """(GGUF name, float32 array in GGUF/llama.cpp layout), in llama.cpp's order."""
    out = [("token_embd.weight", hf["model.embed_tokens.weight"])]
    for i in range(cfg["n_layer"]):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        out.append((b + "attn_norm.weight", hf[p + "input_layernorm.weight"]))
        out.append((b + "attn_q.weight", permute_qk(hf[p + "self_attn.q_proj.weight"], cfg["n_head"])))
        out.append((b + "attn_k.weight", permute_qk(hf[p + "self_attn.k_proj.weight"], cfg["n_head_kv"])))
        out.append((b + "attn_v.weight", hf[p + "self_attn.v_proj.weight"]))
        out.append((b + "attn_output.weight", hf[p + "self_attn.o_proj.weight"]))
        out.append((b + "ffn_norm.weight", hf[p + "post_attention_layernorm.weight"]))
        if cfg["n_expert"] == 0:
            out.append((b + "ffn_gate.weight", hf[p + "mlp.gate_proj.weight"]))
            out.append((b + "ffn_up.weight", hf[p + "mlp.up_proj.weight"]))
            out.append((b + "ffn_down.weight", hf[p + "mlp.down_proj.weight"]))
        else:
            m = p + "block_sparse_moe."
            n = cfg["n_expert"]
            out.append((b + "ffn_gate_inp.weight", hf[m + "gate.weight"]))
            # [n_expert, n_ff, n_embd] and [n_expert, n_embd, n_ff]: the experts
            # are the slowest dimension (ggml's ne[2]).
            out.append((b + "ffn_gate_exps.weight", np.stack([hf[m + f"experts.{x}.w1.weight"] for x in range(n)])))
            out.append((b + "ffn_down_exps.weight", np.stack([hf[m + f"experts.{x}.w2.weight"] for x in range(n)])))
            out.append((b + "ffn_up_exps.weight", np.stack([hf[m + f"experts.{x}.w3.weight"] for x in range(n)])))
    out.append(("output_norm.weight", hf["model.norm.weight"]))
    out.append(("output.weight", hf["lm_head.weight"]))
    return out


# ---------------------------------------------------------------------------
# GGUF writing

def write_gguf(path: str, cfg: dict, tensors, vocab, qtype_name: str) -> None:
    import gguf

    qtype = getattr(gguf.GGMLQuantizationType, qtype_name)
    ftype = {
        "F32": gguf.LlamaFileType.ALL_F32,
        "F16": gguf.LlamaFileType.MOSTLY_F16,
        "BF16": gguf.LlamaFileType.MOSTLY_BF16,
        "Q8_0": gguf.LlamaFileType.MOSTLY_Q8_0,
        "Q4_0": gguf.LlamaFileType.MOSTLY_Q4_0,
    }[qtype_name]
    tokens, scores, types = vocab

    w = gguf.GGUFWriter(path, "llama")
    w.add_name(cfg["name"])
    w.add_vocab_size(len(tokens))
    w.add_context_length(cfg["n_ctx"])
    w.add_embedding_length(cfg["n_embd"])
    w.add_block_count(cfg["n_layer"])
    w.add_feed_forward_length(cfg["n_ff"])
    w.add_rope_dimension_count(cfg["head_dim"])
    w.add_head_count(cfg["n_head"])
    w.add_head_count_kv(cfg["n_head_kv"])
    w.add_rope_freq_base(cfg["rope_theta"])
    w.add_layer_norm_rms_eps(cfg["rms_eps"])
    if cfg["n_expert"]:
        w.add_expert_count(cfg["n_expert"])
        w.add_expert_used_count(cfg["n_expert_used"])
    w.add_file_type(int(ftype))

    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(BOS_ID)
    w.add_eos_token_id(EOS_ID)
    w.add_unk_token_id(UNK_ID)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    # llama.cpp's default for the llama tokenizer; written out so that a
    # reader need not know the default.  Matches add_dummy_prefix above.
    w.add_add_space_prefix(True)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)

    for name, data in tensors:
        # As llama.cpp: 1-D tensors (norms) and the expert router stay float32.
        if data.ndim == 1 or name.endswith("ffn_gate_inp.weight") or qtype == gguf.GGMLQuantizationType.F32:
            w.add_tensor(name, np.ascontiguousarray(data, dtype=np.float32))
        elif qtype == gguf.GGMLQuantizationType.F16:
            w.add_tensor(name, data.astype(np.float16))
        else:
            q = gguf.quants.quantize(np.ascontiguousarray(data, dtype=np.float32), qtype)
            w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=qtype)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# ---------------------------------------------------------------------------
# A numpy forward pass in the transformers layout, to check the models are
# not degenerate (make_references.py computes the references with torch).

def _rms(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def _rope_half(x, pos, theta):
    d = x.shape[-1]
    inv = 1.0 / theta ** (np.arange(0, d, 2, dtype=np.float64) / d)
    ang = pos[:, None] * inv[None, :]
    cos = np.concatenate([np.cos(ang)] * 2, axis=-1)[:, None, :]
    sin = np.concatenate([np.sin(ang)] * 2, axis=-1)[:, None, :]
    rot = np.concatenate([-x[..., d // 2:], x[..., : d // 2]], axis=-1)
    return x * cos + rot * sin


def numpy_logits(cfg: dict, hf: dict, ids: list[int], stats: dict | None = None) -> np.ndarray:
    """float64 logits [len(ids), vocab] of the transformers model.  With
    experts and a stats dict, stats["min_router_gap"] is set to the smallest
    gap between the last chosen and the first unchosen expert's router
    probability (how far the expert choice is from a tie)."""
    hfd = {k: v.astype(np.float64) for k, v in hf.items()}
    H, KV, D, eps = cfg["n_head"], cfg["n_head_kv"], cfg["head_dim"], cfg["rms_eps"]
    T = len(ids)
    pos = np.arange(T, dtype=np.float64)
    x = hfd["model.embed_tokens.weight"][ids]
    mask = np.triu(np.full((T, T), -np.inf), 1)
    silu = lambda z: z / (1.0 + np.exp(-z))
    for i in range(cfg["n_layer"]):
        p = f"model.layers.{i}."
        h = _rms(x, hfd[p + "input_layernorm.weight"], eps)
        q = _rope_half((h @ hfd[p + "self_attn.q_proj.weight"].T).reshape(T, H, D), pos, cfg["rope_theta"])
        k = _rope_half((h @ hfd[p + "self_attn.k_proj.weight"].T).reshape(T, KV, D), pos, cfg["rope_theta"])
        v = (h @ hfd[p + "self_attn.v_proj.weight"].T).reshape(T, KV, D)
        k = np.repeat(k, H // KV, axis=1)
        v = np.repeat(v, H // KV, axis=1)
        s = np.einsum("thd,shd->hts", q, k) / np.sqrt(D) + mask
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        o = np.einsum("hts,shd->thd", s, v).reshape(T, H * D)
        x = x + o @ hfd[p + "self_attn.o_proj.weight"].T
        h = _rms(x, hfd[p + "post_attention_layernorm.weight"], eps)
        if cfg["n_expert"] == 0:
            f = silu(h @ hfd[p + "mlp.gate_proj.weight"].T) * (h @ hfd[p + "mlp.up_proj.weight"].T)
            x = x + f @ hfd[p + "mlp.down_proj.weight"].T
        else:
            m = p + "block_sparse_moe."
            r = h @ hfd[m + "gate.weight"].T
            r = np.exp(r - r.max(-1, keepdims=True))
            r /= r.sum(-1, keepdims=True)
            order = np.argsort(-r, axis=-1, kind="stable")
            top = order[:, : cfg["n_expert_used"]]
            if stats is not None:
                rs = np.take_along_axis(r, order, axis=-1)
                gap = float(np.min(rs[:, cfg["n_expert_used"] - 1] - rs[:, cfg["n_expert_used"]]))
                stats["min_router_gap"] = min(stats.get("min_router_gap", np.inf), gap)
            y = np.zeros_like(x)
            for t in range(T):
                wsel = r[t, top[t]] / r[t, top[t]].sum()
                for j, e in enumerate(top[t]):
                    g = silu(h[t] @ hfd[m + f"experts.{e}.w1.weight"].T) * (h[t] @ hfd[m + f"experts.{e}.w3.weight"].T)
                    y[t] += wsel[j] * (g @ hfd[m + f"experts.{e}.w2.weight"].T)
            x = x + y
    x = _rms(x, hfd["model.norm.weight"], eps)
    return x @ hfd["lm_head.weight"].T


def greedy(cfg, hf, ids, n):
    ids = list(ids)
    out = []
    for _ in range(n):
        t = int(np.argmax(numpy_logits(cfg, hf, ids)[-1]))
        out.append(t)
        ids.append(t)
    return out


def check_not_degenerate(cfg, hf, sp) -> None:
    for text in ["Hello world", "The kernels of the library", "int main(void) {"]:
        ids = [BOS_ID] + sp.encode(text)
        logits = numpy_logits(cfg, hf, ids)
        gen = greedy(cfg, hf, ids, 24)
        top2 = np.sort(logits, axis=-1)[:, -2:]
        print(f"  {cfg['name']}: {text!r} -> {gen}  logits std {logits.std():.2f}, "
              f"min top1-top2 margin {np.min(top2[:, 1] - top2[:, 0]):.4f}")
        print(f"    text {sp.decode(gen)!r}")
        if len(set(gen[8:])) < 3:
            raise SystemExit(f"{cfg['name']}: greedy continuation of {text!r} is degenerate: {gen}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=HERE, help="output folder (default: beside this script)")
    ap.add_argument("--skip-check", action="store_true", help="skip the numpy degeneracy check")
    args = ap.parse_args()

    import sentencepiece as spm

    os.makedirs(args.out, exist_ok=True)
    tok_path = os.path.join(args.out, "tokenizer.model")
    train_tokenizer(tok_path)
    vocab = vocab_from_spm(tok_path)
    sp = spm.SentencePieceProcessor()
    sp.Load(tok_path)
    n_byte = sum(1 for t in vocab[2] if t == 6)
    print(f"tokenizer.model: {len(vocab[0])} pieces, {n_byte} byte pieces, "
          f"{os.path.getsize(tok_path)} bytes")

    for cfg, variants in ((DENSE, ("F32", "F16", "BF16", "Q8_0", "Q4_0")), (MOE, ("F32",))):
        hf = hf_weights(cfg, len(vocab[0]))
        if not args.skip_check:
            check_not_degenerate(cfg, hf, sp)
        tensors = gguf_tensors(cfg, hf)
        stem = "tiny-llama" if cfg["n_expert"] == 0 else "tiny-moe"
        for v in variants:
            path = os.path.join(args.out, f"{stem}-{v.lower()}.gguf")
            write_gguf(path, cfg, tensors, vocab, v)
            print(f"{os.path.basename(path)}: {os.path.getsize(path)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
