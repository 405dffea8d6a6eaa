package main

// The model's JSON configuration files, checked.

import (
	"path/filepath"
	"strconv"
)

type config struct {
	vocabSize, hidden, layers, heads, intermediate, maxPositions, typeVocab int
	headDim, maxSeqLength                                                   int
	layerNormEps                                                            float64
}

func readConfig(dir string) (*config, error) {
	path := filepath.Join(dir, "config.json")
	doc, err := readJSONObject(path, true)
	if err != nil {
		return nil, err
	}
	c := &config{}
	for _, f := range []struct {
		key string
		dst *int
	}{
		{"vocab_size", &c.vocabSize}, {"hidden_size", &c.hidden}, {"num_hidden_layers", &c.layers},
		{"num_attention_heads", &c.heads}, {"intermediate_size", &c.intermediate},
		{"max_position_embeddings", &c.maxPositions}, {"type_vocab_size", &c.typeVocab},
	} {
		v, ok := jsonInt(doc[f.key])
		if !ok || v <= 0 || v > 1<<30 {
			return nil, errorf("%s: %s must be a positive integer, got %s", path, f.key, rawText(doc[f.key]))
		}
		*f.dst = int(v)
	}
	eps, ok := jsonFloat(doc["layer_norm_eps"])
	if !ok || !(eps >= 0 && eps < 1) {
		return nil, errorf("%s: layer_norm_eps must be a number in [0, 1), got %s", path, rawText(doc["layer_norm_eps"]))
	}
	c.layerNormEps = eps
	if act, _ := jsonString(doc["hidden_act"]); act != "gelu" {
		return nil, errorf("%s: hidden_act must be \"gelu\", got %s", path, rawText(doc["hidden_act"]))
	}
	if raw, present := doc["position_embedding_type"]; present {
		if t, _ := jsonString(raw); t != "absolute" {
			return nil, errorf("%s: position_embedding_type must be \"absolute\"", path)
		}
	}
	if c.hidden%c.heads != 0 {
		return nil, errorf("%s: hidden_size %d is not a multiple of num_attention_heads %d", path, c.hidden, c.heads)
	}
	c.headDim = c.hidden / c.heads

	c.maxSeqLength = c.maxPositions
	stPath := filepath.Join(dir, "sentence_bert_config.json")
	st, err := readJSONObject(stPath, false)
	if err != nil {
		return nil, err
	}
	if raw, present := st["max_seq_length"]; present {
		v, ok := jsonInt(raw)
		if !ok || v < 2 || v > int64(c.maxPositions) {
			return nil, errorf("%s: max_seq_length must be an integer in [2, %d], got %s", stPath, c.maxPositions, rawText(raw))
		}
		c.maxSeqLength = int(v)
	}

	tcPath := filepath.Join(dir, "tokenizer_config.json")
	tc, err := readJSONObject(tcPath, false)
	if err != nil {
		return nil, err
	}
	if raw, present := tc["do_lower_case"]; present {
		if v, ok := jsonBool(raw); !ok || !v {
			return nil, errorf("%s: do_lower_case is not true; only uncased tokenisers are supported", tcPath)
		}
	}

	poolPath := filepath.Join(dir, "1_Pooling", "config.json")
	pool, err := readJSONObject(poolPath, false)
	if err != nil {
		return nil, err
	}
	if pool != nil {
		if v, ok := jsonBool(pool["pooling_mode_mean_tokens"]); !ok || !v {
			return nil, errorf("%s: pooling_mode_mean_tokens is not true; only mean pooling is supported", poolPath)
		}
	}
	return c, nil
}

func rawText(raw []byte) string {
	if raw == nil {
		return "nothing"
	}
	if len(raw) > 40 {
		return strconv.Quote(string(raw[:40])) + "..."
	}
	return string(raw)
}
