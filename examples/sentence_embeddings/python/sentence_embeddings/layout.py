"""Where the tokens of a batch live, for the encoder."""
import numpy as np


class Layout:
    """Where the tokens of a batch live: n packed rows (sentence after
    sentence, real tokens only) and b * s padded rows (sentence b's token j
    at row b * s + j; s is the longest sentence)."""

    def __init__(self, batch_ids):
        self.lengths = np.array([len(ids) for ids in batch_ids], dtype=np.int32)
        self.b, self.s = len(batch_ids), int(self.lengths.max())
        self.offsets = np.concatenate(([0], np.cumsum(self.lengths)[:-1])).astype(np.int32)
        self.n = int(self.lengths.sum())
        self.ids = np.array([i for ids in batch_ids for i in ids], dtype=np.int32)
        self.positions = np.concatenate([np.arange(n, dtype=np.int32) for n in self.lengths])
        # Padded row -> packed row (a padding row copies its sentence's first token:
        # any real row will do, attention ignores it and nothing reads its result).
        j = np.arange(self.s, dtype=np.int32)
        self.to_padded = (self.offsets[:, None] + np.where(j < self.lengths[:, None], j, 0)).reshape(-1).astype(np.int32)
        # Packed row -> padded row.
        self.to_packed = np.concatenate([r * self.s + np.arange(n, dtype=np.int32)
                                         for r, n in enumerate(self.lengths)]).astype(np.int32)

    def pooling(self):
        """[b, n]: row r holds float32(1 / lengths[r]) over its own tokens, 0 elsewhere."""
        p = np.zeros((self.b, self.n), dtype=np.float32)
        for r, (off, n) in enumerate(zip(self.offsets, self.lengths)):
            p[r, off : off + n] = np.float32(1.0 / float(n))
        return p
