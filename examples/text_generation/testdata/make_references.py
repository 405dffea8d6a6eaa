#!/usr/bin/env python3
"""Computes the reference outputs of the text generation example's test models.

Run once by a developer after make_models.py (never by CI or `bazel test`):

    python3 examples/text_generation/testdata/make_references.py

Needs numpy, sentencepiece, gguf, torch, transformers and llama-cpp-python
(pip); see README.md beside this file for the versions used.  Writes,
beside this script:

  references.json     the test prompts; their token ids from llama.cpp and
                      from sentencepiece; greedy continuations from
                      transformers and from llama.cpp for every model file;
                      agreement statistics; the settings and versions
  logits_dense.npz    float32 logits of transformers' LlamaForCausalLM
  logits_moe.npz      float32 logits of transformers' MixtralForCausalLM

Two implementations that share no code with each other or with
kernelbridge:

- transformers, on the weights in the Hugging Face layout as make_models.py
  draws them (q and k NOT permuted: rotate-half RoPE).  The script checks
  that the float32 GGUF files hold exactly these weights, q and k permuted.
- llama.cpp (through llama-cpp-python), reading the GGUF files themselves:
  tokenization, and greedy generation with its own KV cache.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_models as mm  # noqa: E402

# Texts tokenized by both tokenizers.  They reach real merges (words of the
# docs), whitespace runs, newlines, tabs, digits (split one by one), and
# byte fallback (accents, CJK, emoji, symbols not in the vocabulary).
PROMPTS = [
    "Hello world",
    "The kernels of the library run on every ISA level.",
    "kernelbridge is a C library of neural-network kernels with Python, Go, Rust and Java bindings.",
    "int main(void) {\n    return 0;\n}\n",
    "  two  spaces,   three   spaces and a\ttab",
    "Numbers: 3.14159, 2026-11-27 and 1000000.",
    "Caf\u00e9, na\u00efve, r\u00e9sum\u00e9, \u00c5ngstr\u00f6m, se\u00f1or, Stra\u00dfe",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3068\u4e2d\u6587",
    "Emoji: \U0001f642\U0001f680\U0001f44d\U0001f3fd and \u2764\ufe0f",
    "Symbols: \u03b1\u03b2\u03b3 \u2211 \u2264 \u2192 \u00d7 \u00f7 \u2014 \u201cquotes\u201d",
    "",
    "<s> and </s> are written as text here",
    "\n\nleading newlines and trailing spaces   ",
    " leading space",
    "Windows\r\nline end",
]

# Prompts whose logits are saved (all positions of prompt + continuation).
LOGIT_PROMPTS = [0, 3, 8]

MAX_TOKENS = 16  # greedy continuation length; EOS does not stop it
N_THREADS = 2
# top-1 minus top-2 logit below which an argmax is called fragile
FRAGILE_MARGIN = 1e-2


def sh(cmd: str) -> str:
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return ""


def cpu_name() -> str:
    for line in sh("lscpu").splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


# ---------------------------------------------------------------------------
# transformers

def hf_model(cfg: dict, hf: dict[str, np.ndarray]):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, MixtralConfig, MixtralForCausalLM

    common = dict(
        vocab_size=hf["lm_head.weight"].shape[0],
        hidden_size=cfg["n_embd"],
        intermediate_size=cfg["n_ff"],
        num_hidden_layers=cfg["n_layer"],
        num_attention_heads=cfg["n_head"],
        num_key_value_heads=cfg["n_head_kv"],
        head_dim=cfg["head_dim"],
        max_position_embeddings=cfg["n_ctx"],
        rms_norm_eps=cfg["rms_eps"],
        rope_parameters={"rope_type": "default", "rope_theta": cfg["rope_theta"]},
        hidden_act="silu",
        tie_word_embeddings=False,
        bos_token_id=mm.BOS_ID,
        eos_token_id=mm.EOS_ID,
        attention_dropout=0.0,
    )
    if cfg["n_expert"] == 0:
        conf = LlamaConfig(attention_bias=False, mlp_bias=False, **common)
        cls = LlamaForCausalLM
    else:
        conf = MixtralConfig(num_local_experts=cfg["n_expert"], num_experts_per_tok=cfg["n_expert_used"],
                             sliding_window=None, router_jitter_noise=0.0, **common)
        cls = MixtralForCausalLM
    conf._attn_implementation = "eager"
    model = cls(conf).to(torch.float32).eval()
    assert model.config.rope_parameters["rope_theta"] == cfg["rope_theta"], model.config.rope_parameters

    state = {}
    for k, v in model.state_dict().items():
        if k in hf:
            state[k] = hf[k]
            continue
        # Mixtral experts: transformers 4 names them block_sparse_moe.experts.E.w1/w2/w3,
        # transformers 5 fuses them into mlp.experts.gate_up_proj [E, 2F, H] and down_proj.
        layer = k.split(".")[2]
        m = f"model.layers.{layer}.block_sparse_moe."
        n = cfg["n_expert"]
        if k.endswith("mlp.gate.weight"):
            state[k] = hf[m + "gate.weight"]
        elif k.endswith("mlp.experts.gate_up_proj"):
            state[k] = np.stack([np.concatenate([hf[m + f"experts.{x}.w1.weight"], hf[m + f"experts.{x}.w3.weight"]])
                                 for x in range(n)])
        elif k.endswith("mlp.experts.down_proj"):
            state[k] = np.stack([hf[m + f"experts.{x}.w2.weight"] for x in range(n)])
        else:
            raise KeyError(f"no weight for {k}")
        assert tuple(state[k].shape) == tuple(v.shape), (k, state[k].shape, v.shape)
    model.load_state_dict({k: torch.from_numpy(np.array(v, dtype=np.float32, copy=True)) for k, v in state.items()}, strict=True)
    return model


def hf_logits(model, ids: list[int]) -> np.ndarray:
    import torch

    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids], dtype=torch.long), use_cache=False)
    return out.logits[0].to(torch.float32).numpy()


def hf_greedy(model, ids: list[int], n: int) -> tuple[list[int], np.ndarray]:
    """Greedy continuation, every step a full forward pass without cache;
    returns the new ids and the logits of prompt + continuation[:-1]."""
    seq = list(ids)
    for _ in range(n):
        seq.append(int(np.argmax(hf_logits(model, seq)[-1])))
    logits = hf_logits(model, seq[:-1])
    assert [int(t) for t in np.argmax(logits[len(ids) - 1:], axis=-1)] == seq[len(ids):]
    return seq[len(ids):], logits


# ---------------------------------------------------------------------------
# GGUF contents

def gguf_as_hf(path: str, cfg: dict) -> dict[str, np.ndarray]:
    """The model's weights read back from a GGUF file, dequantized to float32,
    q and k un-permuted, under the transformers names of mm.hf_weights."""
    import gguf

    r = gguf.GGUFReader(path)
    g = {}
    for t in r.tensors:
        a = gguf.quants.dequantize(t.data, t.tensor_type)
        shape = tuple(int(d) for d in reversed(t.shape))
        g[t.name] = np.asarray(a, dtype=np.float32).reshape(shape)
    hf = {"model.embed_tokens.weight": g["token_embd.weight"],
          "model.norm.weight": g["output_norm.weight"],
          "lm_head.weight": g["output.weight"]}
    for i in range(cfg["n_layer"]):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        hf[p + "input_layernorm.weight"] = g[b + "attn_norm.weight"]
        hf[p + "self_attn.q_proj.weight"] = mm.unpermute_qk(g[b + "attn_q.weight"], cfg["n_head"])
        hf[p + "self_attn.k_proj.weight"] = mm.unpermute_qk(g[b + "attn_k.weight"], cfg["n_head_kv"])
        hf[p + "self_attn.v_proj.weight"] = g[b + "attn_v.weight"]
        hf[p + "self_attn.o_proj.weight"] = g[b + "attn_output.weight"]
        hf[p + "post_attention_layernorm.weight"] = g[b + "ffn_norm.weight"]
        if cfg["n_expert"] == 0:
            hf[p + "mlp.gate_proj.weight"] = g[b + "ffn_gate.weight"]
            hf[p + "mlp.up_proj.weight"] = g[b + "ffn_up.weight"]
            hf[p + "mlp.down_proj.weight"] = g[b + "ffn_down.weight"]
        else:
            m = p + "block_sparse_moe."
            hf[m + "gate.weight"] = g[b + "ffn_gate_inp.weight"]
            for x in range(cfg["n_expert"]):
                hf[m + f"experts.{x}.w1.weight"] = g[b + "ffn_gate_exps.weight"][x]
                hf[m + f"experts.{x}.w2.weight"] = g[b + "ffn_down_exps.weight"][x]
                hf[m + f"experts.{x}.w3.weight"] = g[b + "ffn_up_exps.weight"][x]
    return hf


# ---------------------------------------------------------------------------
# llama.cpp

def llama_open(path: str, vocab_only: bool = False):
    from llama_cpp import Llama

    if vocab_only:
        return Llama(model_path=path, vocab_only=True, verbose=False)
    # float32 KV cache (llama.cpp's default is float16) and no flash
    # attention, so that the float32 model computes in float32 throughout.
    return Llama(model_path=path, n_ctx=256, n_batch=256, n_ubatch=256, n_threads=N_THREADS,
                 n_threads_batch=N_THREADS, logits_all=True, type_k=0, type_v=0, flash_attn=False,
                 seed=0, verbose=False)


def llama_greedy(llm, ids: list[int], n: int) -> tuple[list[int], np.ndarray]:
    """Prefill of the prompt, then n greedy steps through llama.cpp's KV cache;
    returns the new ids and the logits of prompt + continuation[:-1]."""
    llm.reset()
    llm.eval(ids)
    gen = []
    for _ in range(n):
        t = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        gen.append(t)
        if len(gen) < n:
            llm.eval([t])
    logits = np.array(llm.scores[: llm.n_tokens], dtype=np.float32)
    return gen, logits


def rel_diff(a: np.ndarray, ref: np.ndarray) -> float:
    """max over positions of max|a - ref| / max|ref| (per position)."""
    num = np.max(np.abs(a.astype(np.float64) - ref), axis=-1)
    den = np.max(np.abs(ref.astype(np.float64)), axis=-1)
    return float(np.max(num / den))


def margins(logits: np.ndarray) -> np.ndarray:
    top2 = np.sort(logits, axis=-1)[:, -2:]
    return top2[:, 1] - top2[:, 0]


# ---------------------------------------------------------------------------

def main() -> int:
    import gguf  # noqa: F401
    import llama_cpp
    import sentencepiece as spm
    import torch
    import transformers

    torch.set_num_threads(N_THREADS)
    sp = spm.SentencePieceProcessor()
    sp.Load(os.path.join(HERE, "tokenizer.model"))
    vocab_size = sp.vocab_size()
    dense_f32 = os.path.join(HERE, "tiny-llama-f32.gguf")

    # -- tokenization -------------------------------------------------------
    tok = llama_open(dense_f32, vocab_only=True)
    prompts = []
    n_agree = 0
    for text in PROMPTS:
        lids = [int(t) for t in tok.tokenize(text.encode("utf-8"), add_bos=True, special=False)]
        sids = [mm.BOS_ID] + [int(t) for t in sp.encode(text)]
        detok = tok.detokenize(lids[1:])
        entry = {
            "text": text,
            "ids": lids,
            "sentencepiece_ids": sids,
            "sentencepiece_agrees": lids == sids,
            "pieces": [sp.IdToPiece(t) for t in lids],
            "llama_cpp_detokenized_hex": detok.hex(),
        }
        n_agree += lids == sids
        prompts.append(entry)
        flag = "same" if lids == sids else "DIFFERENT"
        print(f"tokens {flag:9s} {text!r}: {lids}" + ("" if lids == sids else f" vs sentencepiece {sids}"))
    del tok

    # -- models -------------------------------------------------------------
    files = {}
    summary = {}
    for cfg, stem, variants in ((mm.DENSE, "tiny-llama", ("f32", "f16", "bf16", "q8_0", "q4_0")),
                                (mm.MOE, "tiny-moe", ("f32",))):
        kind = "dense" if cfg["n_expert"] == 0 else "moe"
        hf = mm.hf_weights(cfg, vocab_size)
        # The GGUF float32 file holds exactly these weights, q/k permuted.
        back = gguf_as_hf(os.path.join(HERE, f"{stem}-f32.gguf"), cfg)
        assert back.keys() == hf.keys()
        for k in hf:
            assert np.array_equal(back[k], hf[k]), k
        model = hf_model(cfg, hf)

        # numpy float64 forward of make_models.py against transformers
        np_rel = rel_diff(hf_logits(model, prompts[1]["ids"]), mm.numpy_logits(cfg, hf, prompts[1]["ids"]))

        ref_gen, ref_logits = {}, {}
        npz = {}
        for i, p in enumerate(prompts):
            gen, logits = hf_greedy(model, p["ids"], MAX_TOKENS)
            ref_gen[i], ref_logits[i] = gen, logits
            if i in LOGIT_PROMPTS:
                npz[f"ids_{i}"] = np.array(p["ids"] + gen[:-1], dtype=np.int32)
                npz[f"logits_{i}"] = logits.astype(np.float32)
        npz_name = f"logits_{kind}.npz"
        np.savez_compressed(os.path.join(HERE, npz_name), **npz)

        for v in variants:
            name = f"{stem}-{v}.gguf"
            path = os.path.join(HERE, name)
            llm = llama_open(path)
            # transformers on this file's weights dequantized to float32
            deq = model if v == "f32" else hf_model(cfg, gguf_as_hf(path, cfg))
            cases = []
            worst_rel, worst_rel_deq, min_margin = 0.0, 0.0, np.inf
            n_same = 0
            for i, p in enumerate(prompts):
                lgen, llog = llama_greedy(llm, p["ids"], MAX_TOKENS)
                case = {"prompt": i, "llama_cpp_greedy": lgen}
                if v == "f32":
                    hgen, hlog = ref_gen[i], ref_logits[i]
                else:
                    hgen, hlog = hf_greedy(deq, p["ids"], MAX_TOKENS)
                case["transformers_greedy"] = hgen
                case["same_greedy"] = lgen == hgen
                n_same += lgen == hgen
                # Compare logits where both continuations are the same sequence.
                n_cmp = len(p["ids"]) + next((j for j in range(MAX_TOKENS) if lgen[j] != hgen[j]), MAX_TOKENS - 1)
                r = rel_diff(llog[:n_cmp], hlog[:n_cmp])
                case["max_rel_diff_llama_cpp_vs_transformers"] = r
                worst_rel = max(worst_rel, r)
                if v != "f32":
                    # against the float32 model's logits (quantization error + kernel differences)
                    r32 = rel_diff(llog[: len(p["ids"])], ref_logits[i][: len(p["ids"])])
                    case["max_rel_diff_prefill_vs_f32_transformers"] = r32
                    worst_rel_deq = max(worst_rel_deq, r32)
                mg = margins(hlog)
                case["min_top2_margin"] = float(mg.min())
                case["argmax_prefill"] = [int(t) for t in np.argmax(hlog[: len(p["ids"])], axis=-1)]
                min_margin = min(min_margin, float(mg.min()))
                if cfg["n_expert"] and v == "f32":
                    st = {}
                    mm.numpy_logits(cfg, hf, p["ids"] + hgen[:-1], st)
                    case["min_router_gap"] = st["min_router_gap"]
                cases.append(case)
            del llm
            entry = {
                "kind": kind,
                "weights": v,
                "config": {k: cfg[k] for k in cfg if k not in ("seed",)},
                "transformers_class": "LlamaForCausalLM" if kind == "dense" else "MixtralForCausalLM",
                "transformers_weights": "hf_weights (float32)" if v == "f32" else
                                        "this file's tensors dequantized to float32",
                "cases": cases,
                "max_rel_diff_llama_cpp_vs_transformers": worst_rel,
                "greedy_same_prompts": n_same,
                "min_top2_margin": min_margin,
            }
            if cfg["n_expert"] and v == "f32":
                entry["min_router_gap"] = min(c["min_router_gap"] for c in cases)
            if v == "f32":
                entry["logits_file"] = npz_name
                entry["logits_prompts"] = LOGIT_PROMPTS
                entry["max_rel_diff_numpy_float64_vs_transformers"] = np_rel
            else:
                entry["max_rel_diff_prefill_vs_f32_transformers"] = worst_rel_deq
            files[name] = entry
            summary[name] = (worst_rel, n_same, min_margin)
            print(f"{name}: llama.cpp vs transformers max rel diff {worst_rel:.3g}, greedy same on "
                  f"{n_same}/{len(prompts)} prompts, min top-2 margin {min_margin:.4f}"
                  + (f", min router gap {entry['min_router_gap']:.4f}" if "min_router_gap" in entry else "")
                  + (f", numpy float64 vs transformers {np_rel:.3g}" if v == "f32" else
                     f", vs float32 model {worst_rel_deq:.3g}"))

    refs = {
        "about": "References for examples/text_generation; see README.md beside this file.",
        "tokenizer": {
            "file": "tokenizer.model",
            "vocab_size": vocab_size,
            "bos_id": mm.BOS_ID, "eos_id": mm.EOS_ID, "unk_id": mm.UNK_ID,
            "add_bos": True, "add_space_prefix": True,
            "ids_from": "llama.cpp, llama_tokenize(add_special=true, parse_special=false)",
            "prompts_where_sentencepiece_agrees": n_agree,
        },
        "prompts": prompts,
        "generation": {
            "max_tokens": MAX_TOKENS,
            "temperature": 0,
            "greedy": "argmax of the logits; ties never occur (see min_top2_margin)",
            "stop_at_eos": False,
            "prompt_ids": "prompts[i].ids (llama.cpp's tokenization, BOS first)",
            "logits_layout": "logits_<kind>.npz: ids_<i> (int32 [T]) = prompt ids + continuation[:-1]; "
                             "logits_<i> (float32 [T, vocab]): row t = logits after ids[0..t], "
                             "i.e. row t predicts ids[t+1]; rows from len(prompt)-1 on give the greedy "
                             "continuation",
            "rel_diff": "max over positions of max_j|a_j - ref_j| / max_j|ref_j|",
            "llama_cpp_settings": {"n_threads": N_THREADS, "type_k": "f32", "type_v": "f32",
                                   "flash_attn": False, "n_batch": 256, "n_ctx": 256},
        },
        "models": files,
        "made_with": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "sentencepiece": spm.__version__,
            "gguf": importlib.metadata.version("gguf"),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "llama_cpp_python": importlib.metadata.version("llama_cpp_python"),
            "cpu": cpu_name(),
            "llama_cpp_system_info": llama_cpp.llama_print_system_info().decode().strip(),
        },
    }
    with open(os.path.join(HERE, "references.json"), "w", encoding="utf-8") as f:
        json.dump(refs, f, indent=1, ensure_ascii=True)
        f.write("\n")
    print(f"tokenization: sentencepiece agrees with llama.cpp on {n_agree}/{len(prompts)} prompts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
