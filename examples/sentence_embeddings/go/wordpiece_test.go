package main

import (
	"reflect"
	"testing"
)

// Character classes and mappings against facts of the Unicode standard.
func TestCharacterData(t *testing.T) {
	strip := func(r rune) string { return string(appendStripped(nil, r)) }
	for r, want := range map[rune]string{
		'é': "e", 'Å': "A", 'ǰ': "j", 'ṩ': "s", 0x0301: "", 0x0E48: "", 'ß': "ß", 'ﬁ': "ﬁ",
		0xF900: "\u8C48", // CJK compatibility ideograph: singleton decomposition
		'한':    "\u1112\u1161\u11AB", '가': "\u1100\u1161", 'x': "x",
	} {
		if got := strip(r); got != want {
			t.Errorf("strip(%U) = %q, want %q", r, got, want)
		}
	}
	for r, want := range map[rune]rune{'A': 'a', 'Σ': 'σ', 'Ω': 'ω', 'Ж': 'ж', 0x1E9E: 'ß', 'ǅ': 'ǆ', 'a': 'a', '1': '1'} {
		if got := toLower(r); got != want {
			t.Errorf("toLower(%U) = %U, want %U", r, got, want)
		}
	}
	for _, r := range []rune{'$', '+', '~', '«', '。', '、', '—', 0x2E3A} {
		if !isPunct(r) {
			t.Errorf("isPunct(%U) = false", r)
		}
	}
	for _, r := range []rune{'a', ' ', '½', '€', 0x2160} {
		if isPunct(r) {
			t.Errorf("isPunct(%U) = true", r)
		}
	}
	for _, r := range []rune{0x00, 0x1B, 0x7F, 0x85, 0x200B, 0xFEFF, 0xAD, 0xE000, 0xF0000, 0xE0001} {
		if !isControl(r) {
			t.Errorf("isControl(%U) = false", r)
		}
	}
	for _, r := range []rune{'\t', '\n', '\r', 'a', 0x378, 0x3000} {
		if isControl(r) {
			t.Errorf("isControl(%U) = true", r)
		}
	}
	for _, r := range []rune{0x4E00, 0x9FFF, 0x3400, 0x20000, 0x2B820 - 1, 0x2B920, 0xF900, 0x2FA1F} {
		if !isCJK(r) {
			t.Errorf("isCJK(%U) = false", r)
		}
	}
	for _, r := range []rune{0x3041, 0x2B820, 0x2B91F, 0x2CEB0, 0xAC00} {
		if isCJK(r) {
			t.Errorf("isCJK(%U) = true", r)
		}
	}
}

func TestSplitWords(t *testing.T) {
	var got []string
	for _, w := range splitWords(normalize("  Héllo,\tWORLD!! 北京x\u200by ")) {
		got = append(got, string(w))
	}
	want := []string{"hello", ",", "world", "!", "!", "北", "京", "xy"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("splitWords = %q, want %q", got, want)
	}
}

func TestWordPiece(t *testing.T) {
	vocab := map[string]int32{"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4,
		"un": 5, "##aff": 6, "##able": 7, "aff": 8, "a": 9, "##a": 10}
	wp := newWordPiece(vocab, 6)
	for text, want := range map[string][]int32{
		"":              {2, 3},
		"unaffable":     {2, 5, 6, 7, 3},
		"unaffablex":    {2, 1, 3},          // a part matches nothing: the whole word is [UNK]
		"a [MASK]aff":   {2, 9, 4, 8, 3},    // special tokens are matched in the raw text
		"a a a a a a a": {2, 9, 9, 9, 9, 3}, // truncated to 6 ids
		"aaaa":          {2, 9, 10, 10, 10, 3},
	} {
		if got := wp.encode(text); !reflect.DeepEqual(got, want) {
			t.Errorf("encode(%q) = %v, want %v", text, got, want)
		}
	}
	long := make([]rune, 101)
	for i := range long {
		long[i] = 'a'
	}
	if got := wp.encode(string(long)); !reflect.DeepEqual(got, []int32{2, 1, 3}) {
		t.Errorf("a 101-character word gives %v, want [CLS] [UNK] [SEP]", got)
	}
}

func TestFixed(t *testing.T) {
	for _, c := range []struct {
		v    float32
		d    int
		want string
	}{
		{0.03125, 4, "0.0312"}, {0.09375, 4, "0.0938"}, {-0.5, 4, "-0.5000"}, {-0.00001, 4, "0.0000"},
		{1, 6, "1.000000"}, {0.75531, 4, "0.7553"},
	} {
		if got := fixed(c.v, c.d); got != c.want {
			t.Errorf("fixed(%v, %d) = %q, want %q", c.v, c.d, got, c.want)
		}
	}
}
