"""Sentence embeddings with all-MiniLM-L6-v2, computed by kernelbridge.

    from sentence_embeddings.model import Model
    m = Model(model_dir)
    emb = m.embed(["A man is eating food.", "A man is riding a horse."])
"""
