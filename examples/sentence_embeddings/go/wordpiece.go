package main

// BERT's uncased WordPiece tokeniser; the steps are those of the README
// ("Tokenisation") and of python/sentence_embeddings/wordpiece.py.

import (
	"sort"
	"strings"
)

var specialTokens = []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}

const maxWordChars = 100

// wordPiece turns texts into token ids with a BERT vocabulary.
type wordPiece struct {
	vocab         map[string]int32
	maxLen        int
	unk, cls, sep int32
}

func newWordPiece(vocab map[string]int32, maxLen int) *wordPiece {
	return &wordPiece{vocab: vocab, maxLen: maxLen, unk: vocab["[UNK]"], cls: vocab["[CLS]"], sep: vocab["[SEP]"]}
}

func inRanges(r rune, table [][2]rune) bool {
	i := sort.Search(len(table), func(i int) bool { return table[i][1] >= r })
	return i < len(table) && table[i][0] <= r
}

// isWhitespace: the White_Space property.
func isWhitespace(r rune) bool {
	switch {
	case r == ' ' || (r >= '\t' && r <= '\r') || r == 0x85 || r == 0xA0 || r == 0x1680:
		return true
	case r >= 0x2000 && r <= 0x200A:
		return true
	case r == 0x2028 || r == 0x2029 || r == 0x202F || r == 0x205F || r == 0x3000:
		return true
	}
	return false
}

func isControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	return inRanges(r, controlRanges)
}

var cjkRanges = [][2]rune{
	{0x3400, 0x4DBF}, {0x4E00, 0x9FFF}, {0xF900, 0xFAFF}, {0x20000, 0x2A6DF},
	{0x2A700, 0x2B73F}, {0x2B740, 0x2B81F}, {0x2B920, 0x2CEAF}, {0x2F800, 0x2FA1F},
}

func isCJK(r rune) bool { return inRanges(r, cjkRanges) }

func isPunct(r rune) bool {
	if (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126) {
		return true
	}
	return inRanges(r, punctRanges)
}

// appendStripped appends r's canonical decomposition without nonspacing marks.
func appendStripped(out []rune, r rune) []rune {
	if r < 0x80 {
		return append(out, r)
	}
	if inRanges(r, marksRanges) {
		return out
	}
	if r >= 0xAC00 && r <= 0xD7A3 { // Hangul syllable: leading, vowel[, trailing] jamo
		s := r - 0xAC00
		out = append(out, 0x1100+s/588, 0x1161+(s%588)/28)
		if s%28 != 0 {
			out = append(out, 0x11A7+s%28)
		}
		return out
	}
	i := sort.Search(len(stripKeys), func(i int) bool { return stripKeys[i] >= r })
	if i < len(stripKeys) && stripKeys[i] == r {
		return append(out, stripPool[stripIndex[i]:stripIndex[i+1]]...)
	}
	return append(out, r)
}

func toLower(r rune) rune {
	if r < 0x80 {
		if r >= 'A' && r <= 'Z' {
			return r + 32
		}
		return r
	}
	i := sort.Search(len(lowerPairs), func(i int) bool { return lowerPairs[i][0] >= r })
	if i < len(lowerPairs) && lowerPairs[i][0] == r {
		return lowerPairs[i][1]
	}
	return r
}

// normalize: clean-up, spaces around CJK ideographs, accents stripped, lower case.
func normalize(text string) []rune {
	var out, tmp []rune
	for _, r := range text {
		switch {
		case r == 0 || r == 0xFFFD || isControl(r):
			continue
		case isWhitespace(r):
			out = append(out, ' ')
			continue
		}
		tmp = appendStripped(tmp[:0], r)
		if isCJK(r) {
			out = append(out, ' ')
		}
		for _, c := range tmp {
			out = append(out, toLower(c))
		}
		if isCJK(r) {
			out = append(out, ' ')
		}
	}
	return out
}

// splitWords: words between spaces, each punctuation character a word of its own.
func splitWords(text []rune) [][]rune {
	var words [][]rune
	start := -1
	for i, r := range text {
		switch {
		case r == ' ' || isPunct(r):
			if start >= 0 {
				words = append(words, text[start:i])
				start = -1
			}
			if r != ' ' {
				words = append(words, text[i:i+1])
			}
		case start < 0:
			start = i
		}
	}
	if start >= 0 {
		words = append(words, text[start:])
	}
	return words
}

// appendWord appends the pieces of one word, or [UNK].
func (wp *wordPiece) appendWord(out []int32, word []rune) []int32 {
	if len(word) > maxWordChars {
		return append(out, wp.unk)
	}
	n := len(out)
	for start := 0; start < len(word); {
		end := len(word)
		found := int32(-1)
		for ; end > start; end-- {
			piece := string(word[start:end])
			if start > 0 {
				piece = "##" + piece
			}
			if id, ok := wp.vocab[piece]; ok {
				found = id
				break
			}
		}
		if found < 0 {
			return append(out[:n], wp.unk)
		}
		out = append(out, found)
		start = end
	}
	return out
}

// encode: [CLS] ids... [SEP], at most maxLen ids.
func (wp *wordPiece) encode(text string) []int32 {
	var ids []int32
	rest := text
	for len(rest) > 0 {
		at, tok := nextSpecial(rest)
		for _, w := range splitWords(normalize(rest[:at])) {
			ids = wp.appendWord(ids, w)
		}
		if tok == "" {
			break
		}
		ids = append(ids, wp.vocab[tok])
		rest = rest[at+len(tok):]
	}
	if len(ids) > wp.maxLen-2 {
		ids = ids[:wp.maxLen-2]
	}
	out := make([]int32, 0, len(ids)+2)
	out = append(out, wp.cls)
	out = append(out, ids...)
	return append(out, wp.sep)
}

// nextSpecial: the byte offset of the first special token in s and the token,
// or (len(s), "") when there is none.
func nextSpecial(s string) (int, string) {
	for i := 0; i < len(s); i++ {
		if s[i] != '[' {
			continue
		}
		for _, t := range specialTokens {
			if strings.HasPrefix(s[i:], t) {
				return i, t
			}
		}
	}
	return len(s), ""
}
