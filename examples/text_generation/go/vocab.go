package main

// The file's vocabulary (tokenizer.ggml.*) as the binding's Tokenizer, read
// as c/main.c's make_tokenizer reads it.

import (
	"fmt"

	kb "kernelbridge.dev/go/kernelbridge"
)

func newTokenizer(g *kb.Gguf) (*kb.Tokenizer, error) {
	if has, err := g.HasKey("tokenizer.ggml.model"); err != nil {
		return nil, libFail("tokenizer.ggml.model", err)
	} else if has {
		// As C: a value that is not a string is an error; a name of 32
		// bytes or more is not checked (the vocabulary's own checks follow).
		kind, err := g.String("tokenizer.ggml.model")
		if err != nil {
			return nil, libFail("tokenizer.ggml.model", err)
		}
		if len(kind) < 32 && cString(kind) != "llama" {
			return nil, fmt.Errorf("tokenizer '%s' is not supported (only 'llama')", cString(kind))
		}
	}
	has, err := g.HasKey("tokenizer.ggml.tokens")
	if err != nil {
		return nil, libFail("vocabulary", err)
	}
	if !has {
		return nil, fmt.Errorf("the model has no vocabulary (tokenizer.ggml.tokens)")
	}
	blob, offsets, err := g.StringArray("tokenizer.ggml.tokens")
	if err != nil {
		return nil, libFail("vocabulary", err)
	}
	n := len(offsets) - 1
	// The pieces as strings sharing one copy of the blob.
	all := string(blob)
	pieces := make([]string, n)
	for i := range pieces {
		pieces[i] = all[offsets[i]:offsets[i+1]]
	}
	// Absent scores and types: 0 and "normal" (C leaves them unset).
	scores := make([]float32, n)
	types := make([]int32, n)
	for i := range types {
		types[i] = 1
	}
	opt := kb.TokenizerOptions{BOS: -1, EOS: -1, Unknown: -1, AddBOS: true, AddSpacePrefix: true}
	if has, err := g.HasKey("tokenizer.ggml.scores"); err != nil {
		return nil, libFail("vocabulary", err)
	} else if has {
		if scores, err = g.Float32s("tokenizer.ggml.scores"); err != nil {
			return nil, libFail("vocabulary", err)
		}
	}
	if has, err := g.HasKey("tokenizer.ggml.token_type"); err != nil {
		return nil, libFail("vocabulary", err)
	} else if has {
		if types, err = g.Int32s("tokenizer.ggml.token_type"); err != nil {
			return nil, libFail("vocabulary", err)
		}
	}
	ints := []struct {
		key string
		dst *int
	}{
		{"tokenizer.ggml.bos_token_id", &opt.BOS},
		{"tokenizer.ggml.eos_token_id", &opt.EOS},
		{"tokenizer.ggml.unknown_token_id", &opt.Unknown},
	}
	for _, k := range ints {
		v, err := optionalInt(g, k.key, int64(*k.dst))
		if err != nil {
			return nil, libFail("vocabulary", err)
		}
		*k.dst = clampInt(v)
	}
	flags := []struct {
		key string
		dst *bool
	}{
		{"tokenizer.ggml.add_bos_token", &opt.AddBOS},
		{"tokenizer.ggml.add_eos_token", &opt.AddEOS},
		{"tokenizer.ggml.add_space_prefix", &opt.AddSpacePrefix},
	}
	for _, f := range flags {
		def := int64(0)
		if *f.dst {
			def = 1
		}
		v, err := optionalInt(g, f.key, def)
		if err != nil {
			return nil, libFail("vocabulary", err)
		}
		*f.dst = v != 0
	}
	tok, err := kb.NewTokenizer(pieces, scores, types, opt)
	if err != nil {
		return nil, libFail("vocabulary", err)
	}
	return tok, nil
}

// optionalInt is an integer key, def when absent.
func optionalInt(g *kb.Gguf, key string, def int64) (int64, error) {
	has, err := g.HasKey(key)
	if err != nil || !has {
		return def, err
	}
	return g.Int(key)
}
