package kernelbridge

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// A hand-built vocabulary (core/tokenizer_test.c has the full set): ids 0-2
// special, 3-258 the byte tokens, then these.
const (
	idSpace  = 259 // "▁"
	idAB     = 262 // "ab"
	idSpaceA = 263 // "▁a"
	idUD     = 264 // "<ud>", user-defined
)

func smallTokenizer(t *testing.T) *Tokenizer {
	t.Helper()
	pieces := []string{"<unk>", "<s>", "</s>"}
	types := []int32{2, 3, 3}
	for b := 0; b < 256; b++ {
		pieces = append(pieces, fmt.Sprintf("<0x%02X>", b))
		types = append(types, 6)
	}
	pieces = append(pieces, "\u2581", "a", "b", "ab", "\u2581a", "<ud>")
	types = append(types, 1, 1, 1, 1, 1, 4)
	scores := make([]float32, len(pieces))
	copy(scores[259:], []float32{-1, -2, -2, -3, -4, 0})
	tok, err := NewTokenizer(pieces, scores, types, TokenizerOptions{BOS: 1, EOS: 2, Unknown: 0, AddBOS: true, AddSpacePrefix: true})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestTokenizerIDs(t *testing.T) {
	tok := smallTokenizer(t)
	defer tok.Close()
	if tok.NTokens() != 265 || tok.BOS() != 1 || tok.EOS() != 2 {
		t.Fatalf("accessors: %d %d %d", tok.NTokens(), tok.BOS(), tok.EOS())
	}
	cases := []struct {
		text           string
		special, parse bool
		want           []int32
	}{
		{"ab a", true, false, []int32{1, idSpace, idAB, idSpaceA}},
		{"a<ud>b", false, false, []int32{idSpaceA, idUD, idSpace, 261}},
		{"<s>a", false, true, []int32{1, idSpaceA}},
		{"", true, false, []int32{1}},
		{"\U0001F600", false, false, []int32{idSpace, 3 + 0xF0, 3 + 0x9F, 3 + 0x98, 3 + 0x80}},
	}
	for _, c := range cases {
		got, err := tok.Tokenize(c.text, c.special, c.parse)
		if err != nil || !equalIDs(got, c.want) {
			t.Errorf("Tokenize(%q) = %v, %v; want %v", c.text, got, err, c.want)
		}
	}
	text, err := tok.Decode([]int32{1, idSpaceA, 2}, false, true)
	if err != nil || text != "<s> a</s>" {
		t.Errorf("Decode = %q, %v", text, err)
	}
}

func TestTokenizerRoundTripAndStream(t *testing.T) {
	tok := smallTokenizer(t)
	defer tok.Close()
	for _, text := range []string{"ab a", "  a b  ", "\u4e2d\u6587 \U0001F600", "\xff\xfe", "a\nb"} {
		ids, err := tok.Tokenize(text, false, false)
		if err != nil {
			t.Fatal(err)
		}
		back, err := tok.Decode(ids, false, false)
		if err != nil || back != text {
			t.Errorf("Decode(Tokenize(%q)) = %q, %v", text, back, err)
		}
		s := tok.Stream(false)
		var sb strings.Builder
		for _, id := range ids {
			part, err := s.Feed(int(id))
			if err != nil {
				t.Fatal(err)
			}
			sb.WriteString(part)
		}
		sb.WriteString(s.Flush())
		if sb.String() != text {
			t.Errorf("stream of %q gave %q", text, sb.String())
		}
	}
	s := tok.Stream(false)
	for i, b := range []int{0xF0, 0x9F, 0x98} {
		if part, _ := s.Feed(3 + b); part != "" {
			t.Errorf("byte %d of a split character gave %q", i, part)
		}
	}
	if part, _ := s.Feed(3 + 0x80); part != "\U0001F600" {
		t.Errorf("completed character gave %q", part)
	}
}

func TestTokenizerErrors(t *testing.T) {
	_, err := NewTokenizer([]string{"a", "a"}, []float32{0, 0}, []int32{1, 1}, TokenizerOptions{BOS: -1, EOS: -1, Unknown: -1})
	var e *Error
	if !errors.As(err, &e) || e.Code != InvalidArgument || !strings.Contains(e.Msg, "same piece") {
		t.Errorf("repeated piece: %v", err)
	}
	_, err = NewTokenizer([]string{"a"}, []float32{0}, []int32{9}, TokenizerOptions{BOS: -1, EOS: -1, Unknown: -1})
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "types[0]") {
		t.Errorf("bad type: %v", err)
	}
	tok := smallTokenizer(t)
	if _, err := tok.Decode([]int32{1, 100000}, false, false); err == nil || !strings.Contains(err.Error(), "ids[1]") {
		t.Errorf("bad id: %v", err)
	}
	tok.Close()
	tok.Close()
	if _, err := tok.Tokenize("a", true, false); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("closed: %v", err)
	}
}

func TestTokenizerConcurrent(t *testing.T) {
	tok := smallTokenizer(t)
	defer tok.Close()
	want, _ := tok.Tokenize("ab a \U0001F600 b", true, false)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				got, err := tok.Tokenize("ab a \U0001F600 b", true, false)
				if err != nil || !equalIDs(got, want) {
					t.Errorf("goroutine got %v, %v", got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
