package main

// vocab.txt: one token per line, its id the line number (from 0).

import (
	"strings"
	"unicode/utf8"
)

func readVocab(path string, vocabSize int) (map[string]int32, error) {
	b, err := readFile(path)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(b) {
		return nil, errorf("%s: not UTF-8", path)
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1] // the newline ending the last line
	}
	if len(lines) != vocabSize {
		return nil, errorf("%s: %d tokens, config.json says vocab_size %d", path, len(lines), vocabSize)
	}
	vocab := make(map[string]int32, len(lines))
	for i, tok := range lines {
		vocab[tok] = int32(i) // a repeated token keeps its last id
	}
	for _, tok := range specialTokens {
		if _, ok := vocab[tok]; !ok {
			return nil, errorf("%s: special token %s is missing", path, tok)
		}
	}
	return vocab, nil
}
