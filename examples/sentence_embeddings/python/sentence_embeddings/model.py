"""A loaded model: configuration, tokeniser and encoder from one model folder."""
import os

import kernelbridge as kb

from .config import Config
from .encoder import Encoder
from .errors import ModelError
from .vocab import read_vocab
from .weights import Weights
from .wordpiece import WordPiece


class Model:
    def __init__(self, model_dir, threads=0):
        if not os.path.isdir(model_dir):
            raise ModelError(f"{model_dir}: not a directory (the model folder holding model.safetensors)")
        self.config = Config(model_dir)
        vocab = read_vocab(os.path.join(model_dir, "vocab.txt"), self.config.vocab_size)
        self.tokenizer = WordPiece(vocab, self.config.max_seq_length)
        self.context = kb.Context(threads=threads)
        self.encoder = Encoder(self.config, Weights(model_dir, self.config), self.context)

    def tokenize(self, texts):
        return [self.tokenizer.encode(t) for t in texts]

    def embed(self, texts):
        """float32 [len(texts), hidden], each row of unit length."""
        if not texts:
            raise ModelError("no sentences to embed")
        return self.encoder.embed(self.tokenize(texts))

    def similarity(self, embeddings):
        """Cosine similarities: the embeddings are unit vectors, so E E^T."""
        return kb.gemm(embeddings, embeddings, trans_b=True, ctx=self.context)
