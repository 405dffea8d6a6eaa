package main

// A loaded model: configuration, tokeniser and encoder from one model folder.

import (
	"os"
	"path/filepath"

	kb "kernelbridge.dev/go/kernelbridge"
)

type model struct {
	cfg       *config
	tokenizer *wordPiece
	ctx       *kb.Context
	enc       *encoder
}

func loadModel(dir string, threads int) (*model, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, errorf("%s: not a directory (the model folder holding model.safetensors)", dir)
	}
	cfg, err := readConfig(dir)
	if err != nil {
		return nil, err
	}
	vocab, err := readVocab(filepath.Join(dir, "vocab.txt"), cfg.vocabSize)
	if err != nil {
		return nil, err
	}
	w, err := loadWeights(dir, cfg)
	if err != nil {
		return nil, err
	}
	ctx, err := kb.NewContext(threads, kb.BackendCPU)
	if err != nil {
		return nil, err
	}
	return &model{cfg: cfg, tokenizer: newWordPiece(vocab, cfg.maxSeqLength), ctx: ctx, enc: newEncoder(cfg, w, ctx)}, nil
}

func (m *model) tokenize(texts []string) [][]int32 {
	out := make([][]int32, len(texts))
	for i, t := range texts {
		out[i] = m.tokenizer.encode(t)
	}
	return out
}

// embed returns len(texts) unit vectors of hidden floats, row after row.
func (m *model) embed(texts []string) ([]float32, error) {
	if len(texts) == 0 {
		return nil, errorf("no sentences to embed")
	}
	return m.enc.embed(m.tokenize(texts))
}

// similarity: cosine similarities of unit vectors, E E^T.
func (m *model) similarity(emb []float32, n int) ([]float32, error) {
	h := m.cfg.hidden
	sim := make([]float32, n*n)
	err := m.ctx.Gemm(false, true, n, n, h, 1, emb, h, emb, h, 0, sim, n)
	return sim, err
}
