#!/usr/bin/env python3
"""Writes the decoder reference files replayed by test_decoder_reference.py
(bindings/python/tests/data/*_tiny.npz).

Two tiny causal language models with random weights, built and run by
PyTorch `transformers` in float32 (eager attention):

* llama_tiny.npz: LlamaForCausalLM with Llama 3.x rope scaling ("llama3"),
  grouped-query attention (4 query heads, 2 key/value heads);
* mixtral_tiny.npz: MixtralForCausalLM, 4 experts, 2 per token.

Each file holds the config (JSON string under "config"), every weight under its
transformers name, the input token ids and the logits of every position.
Weights are drawn with a scale that keeps activations of order one (the
library's default init of std 0.02 would make every logit nearly equal and the
comparison meaningless).  Run once; the test replays the files without
PyTorch.  Needs torch and transformers (PyPI).

    python3 bindings/python/tests/make_decoder_references.py [out_dir]
"""

import json
import os
import sys

import numpy as np
import torch
import transformers

COMMON = dict(
    vocab_size=128,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    rms_norm_eps=1e-5,
    max_position_embeddings=256,
    tie_word_embeddings=False,
    attention_bias=False,
)


def configs():
    llama = transformers.LlamaConfig(
        intermediate_size=96,
        rope_parameters={
            "rope_type": "llama3",
            "rope_theta": 500000.0,
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            # Small, so that the frequencies of a 16-wide head fall in all
            # three bands of the llama3 rule (scaled, blended, kept).
            "original_max_position_embeddings": 64,
        },
        **COMMON,
    )
    mixtral = transformers.MixtralConfig(
        intermediate_size=64,
        num_local_experts=4,
        num_experts_per_tok=2,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        sliding_window=None,
        router_jitter_noise=0.0,
        **COMMON,
    )
    return {
        "llama_tiny": (transformers.LlamaForCausalLM, llama),
        "mixtral_tiny": (transformers.MixtralForCausalLM, mixtral),
    }


def randomise(model, gen):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:  # norm weights around 1
                p.copy_(1 + 0.1 * torch.randn(p.shape, generator=gen))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=gen))
            else:  # [..., out, in] weights: unit-variance outputs
                p.copy_(torch.randn(p.shape, generator=gen) / p.shape[-1] ** 0.5)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
    for i, (name, (cls, cfg)) in enumerate(configs().items()):
        cfg._attn_implementation = "eager"
        gen = torch.Generator().manual_seed(1000 + i)
        model = cls(cfg).eval()
        randomise(model, gen)
        ids = torch.randint(0, cfg.vocab_size, (1, 24), generator=gen)
        with torch.no_grad():
            logits = model(input_ids=ids).logits[0]
        arrays = {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}
        arrays["input_ids"] = ids[0].numpy().astype(np.int32)
        arrays["logits"] = logits.numpy().astype(np.float32)
        arrays["config"] = np.array(json.dumps(cfg.to_dict(), sort_keys=True, default=str))
        arrays["generated_by"] = np.array("bindings/python/tests/make_decoder_references.py, transformers %s, torch %s"
                                          % (transformers.__version__, torch.__version__))
        path = os.path.join(out_dir, name + ".npz")
        np.savez_compressed(path, **arrays)
        print("wrote %s (%d bytes)" % (path, os.path.getsize(path)))


if __name__ == "__main__":
    main()
