package main

// The encoder's tensors from model.safetensors, by name, with their shapes checked.

import (
	"fmt"
	"path/filepath"
)

type layerWeights struct {
	qW, qB, kW, kB, vW, vB, oW, oB, ln1W, ln1B []float32
	ff1W, ff1B, ff2W, ff2B, ln2W, ln2B         []float32
}

type weights struct {
	word, position, tokenType, lnW, lnB []float32
	layers                              []layerWeights
}

func loadWeights(dir string, c *config) (*weights, error) {
	st, err := openSafeTensors(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		return nil, err
	}
	h, in := int64(c.hidden), int64(c.intermediate)
	var firstErr error
	get := func(name string, shape ...int64) []float32 {
		if firstErr != nil {
			return nil
		}
		t, err := st.float32(name, shape...)
		if err != nil {
			firstErr = err
		}
		return t
	}
	w := &weights{
		word:      get("embeddings.word_embeddings.weight", int64(c.vocabSize), h),
		position:  get("embeddings.position_embeddings.weight", int64(c.maxPositions), h),
		tokenType: get("embeddings.token_type_embeddings.weight", int64(c.typeVocab), h),
		lnW:       get("embeddings.LayerNorm.weight", h),
		lnB:       get("embeddings.LayerNorm.bias", h),
	}
	for n := 0; n < c.layers; n++ {
		p := fmt.Sprintf("encoder.layer.%d.", n)
		w.layers = append(w.layers, layerWeights{
			qW:   get(p+"attention.self.query.weight", h, h),
			qB:   get(p+"attention.self.query.bias", h),
			kW:   get(p+"attention.self.key.weight", h, h),
			kB:   get(p+"attention.self.key.bias", h),
			vW:   get(p+"attention.self.value.weight", h, h),
			vB:   get(p+"attention.self.value.bias", h),
			oW:   get(p+"attention.output.dense.weight", h, h),
			oB:   get(p+"attention.output.dense.bias", h),
			ln1W: get(p+"attention.output.LayerNorm.weight", h),
			ln1B: get(p+"attention.output.LayerNorm.bias", h),
			ff1W: get(p+"intermediate.dense.weight", in, h),
			ff1B: get(p+"intermediate.dense.bias", in),
			ff2W: get(p+"output.dense.weight", h, in),
			ff2B: get(p+"output.dense.bias", h),
			ln2W: get(p+"output.LayerNorm.weight", h),
			ln2B: get(p+"output.LayerNorm.bias", h),
		})
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return w, nil
}
