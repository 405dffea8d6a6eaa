package kernelbridge

/*
#include "kernelbridge.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// Tokenizer is a SentencePiece-style ("llama") vocabulary and its tokenizer
// (kb_tokenizer, docs/tokenizer.md): the ids of a text as llama.cpp gives
// them, and the text of ids.  The C library does the work, so every binding
// gives the same ids.
//
//	tok, err := kernelbridge.NewTokenizer(pieces, scores, types, kernelbridge.TokenizerOptions{BOS: 1, EOS: 2, Unknown: 0, AddBOS: true, AddSpacePrefix: true})
//	ids, err := tok.Tokenize("Hello world", true, false)
//	text, err := tok.Decode(ids, true, false)
//
// A Tokenizer is immutable and safe for concurrent use by multiple
// goroutines; Close waits for the calls in progress and is idempotent, and
// every later call fails with Code InvalidArgument.  Errors are *Error
// values carrying the library's message, which names the argument.
type Tokenizer struct {
	mu             sync.RWMutex // read: a call; write: Close
	ptr            *C.kb_tokenizer
	addSpacePrefix bool
}

// TokenizerOptions are the vocabulary's special ids (-1: none) and flags
// (GGUF: tokenizer.ggml.bos_token_id, eos_token_id, unknown_token_id,
// add_bos_token, add_eos_token, add_space_prefix).
type TokenizerOptions struct {
	BOS, EOS, Unknown int
	AddBOS, AddEOS    bool
	AddSpacePrefix    bool
}

// NewTokenizer builds a Tokenizer from the pieces (in id order), their
// scores and types (GGUF's tokenizer.ggml.tokens, scores, token_type); see
// kb_tokenizer_create for what is validated.
func NewTokenizer(pieces []string, scores []float32, types []int32, opt TokenizerOptions) (*Tokenizer, error) {
	size := 0
	for _, p := range pieces {
		size += len(p)
	}
	if size > 1<<31-1 {
		return nil, &Error{Code: InvalidArgument, Msg: "kb_tokenizer_create: the pieces take more than 2^31 - 1 bytes"}
	}
	blob := make([]byte, 0, size)
	offsets := make([]int32, 1, len(pieces)+1)
	for _, p := range pieces {
		blob = append(blob, p...)
		offsets = append(offsets, int32(len(blob)))
	}
	if len(scores) != len(pieces) {
		return nil, &Error{Code: ShapeMismatch, Msg: "kb_tokenizer_create: scores must have one entry per piece"}
	}
	ptr, err := cTokenizerCreate(blob, offsets, scores, types, int64(opt.BOS), int64(opt.EOS), int64(opt.Unknown),
		opt.AddBOS, opt.AddEOS, opt.AddSpacePrefix)
	if err != nil {
		return nil, err
	}
	t := &Tokenizer{ptr: ptr, addSpacePrefix: opt.AddSpacePrefix}
	runtime.SetFinalizer(t, (*Tokenizer).Close)
	return t, nil
}

// Close frees the tokenizer after the calls in progress have returned.
func (t *Tokenizer) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ptr != nil {
		C.kb_tokenizer_destroy(t.ptr)
		t.ptr = nil
	}
	return nil
}

// use returns the handle for one call (under the read lock, which the
// caller releases with t.mu.RUnlock), or an error once closed.
func (t *Tokenizer) use(fn string) (C.uintptr_t, error) {
	t.mu.RLock()
	if t.ptr == nil {
		t.mu.RUnlock()
		return 0, &Error{Code: InvalidArgument, Msg: fn + ": the Tokenizer is closed"}
	}
	return C.uintptr_t(uintptr(unsafe.Pointer(t.ptr))), nil
}

func (t *Tokenizer) query(f func(*C.kb_tokenizer) C.int64_t) int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.ptr == nil {
		return -1
	}
	return int(f(t.ptr))
}

// NTokens is the vocabulary size (-1 once closed).
func (t *Tokenizer) NTokens() int {
	return t.query(func(p *C.kb_tokenizer) C.int64_t { return C.kb_tokenizer_n_tokens(p) })
}

// BOS is the id of the beginning-of-sequence token, -1 for none.
func (t *Tokenizer) BOS() int {
	return t.query(func(p *C.kb_tokenizer) C.int64_t { return C.kb_tokenizer_bos(p) })
}

// EOS is the id of the end-of-sequence token, -1 for none.
func (t *Tokenizer) EOS() int {
	return t.query(func(p *C.kb_tokenizer) C.int64_t { return C.kb_tokenizer_eos(p) })
}

// Tokenize returns the token ids of text (any bytes), as llama.cpp's
// llama_tokenize(text, addSpecial, parseSpecial).
func (t *Tokenizer) Tokenize(text string, addSpecial, parseSpecial bool) ([]int32, error) {
	h, err := t.use("kb_tokenize")
	if err != nil {
		return nil, err
	}
	defer t.mu.RUnlock()
	data := []byte(text)
	// Most text needs fewer tokens than bytes: one call, else a second one
	// with the count the first reported.
	ids := make([]int32, len(data)+2)
	n, err := cTokenize(h, data, addSpecial, parseSpecial, ids)
	if err == nil && int(n) > len(ids) {
		ids = make([]int32, n)
		n, err = cTokenize(h, data, addSpecial, parseSpecial, ids)
	}
	if err != nil {
		return nil, err
	}
	return ids[:n], nil
}

// Piece returns the bytes token id stands for (kb_tokenizer_piece): a byte
// token's byte may be part of a UTF-8 character, see TokenStream.
func (t *Tokenizer) Piece(id int, special bool) ([]byte, error) {
	h, err := t.use("kb_tokenizer_piece")
	if err != nil {
		return nil, err
	}
	defer t.mu.RUnlock()
	buf := make([]byte, 64)
	n, err := cTokenizerPiece(h, int64(id), special, buf)
	if err == nil && int(n) > len(buf) {
		buf = make([]byte, n)
		n, err = cTokenizerPiece(h, int64(id), special, buf)
	}
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// Detokenize returns the bytes of ids, as llama.cpp's llama_detokenize.
func (t *Tokenizer) Detokenize(ids []int32, removeSpecial, unparseSpecial bool) ([]byte, error) {
	h, err := t.use("kb_detokenize")
	if err != nil {
		return nil, err
	}
	defer t.mu.RUnlock()
	n, err := cDetokenize(h, ids, removeSpecial, unparseSpecial, nil)
	if err != nil {
		return nil, err
	}
	out := make([]byte, n)
	if n > 0 {
		if _, err = cDetokenize(h, ids, removeSpecial, unparseSpecial, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Decode is Detokenize as a string.
func (t *Tokenizer) Decode(ids []int32, removeSpecial, unparseSpecial bool) (string, error) {
	b, err := t.Detokenize(ids, removeSpecial, unparseSpecial)
	return string(b), err
}

// TokenStream turns ids that arrive one at a time (generation) into text:
// Feed returns the text complete so far and keeps back the bytes of a UTF-8
// character split across byte tokens until the rest arrives; Flush returns
// what is left.  The first piece loses its leading space when the vocabulary
// adds a space prefix, as Decode does, so the stream's text equals Decode of
// the same ids.
type TokenStream struct {
	tok     *Tokenizer
	special bool
	first   bool
	pending []byte
}

// Stream starts a TokenStream; special shows control tokens' text.
func (t *Tokenizer) Stream(special bool) *TokenStream {
	return &TokenStream{tok: t, special: special, first: true}
}

// Feed adds one token and returns the text that is now complete.
func (s *TokenStream) Feed(id int) (string, error) {
	piece, err := s.tok.Piece(id, s.special)
	if err != nil {
		return "", err
	}
	if s.first {
		s.first = false
		if s.tok.addSpacePrefix && len(piece) > 0 && piece[0] == ' ' {
			piece = piece[1:]
		}
	}
	s.pending = append(s.pending, piece...)
	cut := incompleteTail(s.pending)
	out := string(s.pending[:cut])
	s.pending = append(s.pending[:0], s.pending[cut:]...)
	return out, nil
}

// Flush returns the bytes still held back (an incomplete character).
func (s *TokenStream) Flush() string {
	out := string(s.pending)
	s.pending = s.pending[:0]
	return out
}

// incompleteTail returns where a UTF-8 sequence that the last bytes of p
// begin but do not finish starts, or len(p).
func incompleteTail(p []byte) int {
	for k := 1; k <= 3 && k <= len(p); k++ {
		b := p[len(p)-k]
		if b < 0x80 {
			break
		}
		if b >= 0xC0 {
			need := 2
			if b >= 0xF0 {
				need = 4
			} else if b >= 0xE0 {
				need = 3
			}
			if need > k {
				return len(p) - k
			}
			break
		}
	}
	return len(p)
}
