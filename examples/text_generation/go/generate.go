package main

// The generation loop of c/main.c: pick a token from the last logits
// (greedy, or sampled with seed + step so that every language draws the
// same tokens), stream its bytes, run it through the model, until EOS or
// --max-tokens.  Nothing here allocates per token: the logits, the picked
// id and the token's input are preallocated, and each token's bytes are
// fetched from the tokenizer once and kept.

import (
	"fmt"
	"io"
	"time"

	kb "kernelbridge.dev/go/kernelbridge"
)

// pieceCache holds the bytes of the tokens generated so far
// (kb_tokenizer_piece without special tokens' text).
type pieceCache struct {
	tok    *kb.Tokenizer
	pieces [][]byte
	known  []bool
}

func newPieceCache(tok *kb.Tokenizer, vocab int) *pieceCache {
	return &pieceCache{tok: tok, pieces: make([][]byte, vocab), known: make([]bool, vocab)}
}

// piece is token id's bytes; nil when the tokenizer has none for it (C
// writes nothing then).
func (c *pieceCache) piece(id int32) []byte {
	if id < 0 || int(id) >= len(c.pieces) {
		b, _ := c.tok.Piece(int(id), false)
		return b
	}
	if !c.known[id] {
		c.pieces[id], _ = c.tok.Piece(int(id), false)
		c.known[id] = true
	}
	return c.pieces[id]
}

// sampler picks the next token as o says (kb_argmax, kb_topk_sample,
// kb_topp_sample or kb_sample) into its one-element out.
type sampler struct {
	ctx   *kb.Context
	o     *options
	vocab int
	out   []int32
}

func (s *sampler) pick(logits []float32, step int64) (int32, error) {
	o := s.o
	seed := o.seed + uint64(step)
	var err error
	switch {
	case o.temperature == 0:
		err = s.ctx.Argmax(s.vocab, logits, s.out)
	case o.topK > 0:
		err = s.ctx.TopkSample(s.vocab, logits, int(o.topK), float32(o.temperature), seed, s.out)
	case o.topP < 1:
		err = s.ctx.ToppSample(s.vocab, logits, float32(o.topP), float32(o.temperature), seed, s.out)
	default:
		err = s.ctx.Sample(s.vocab, logits, float32(o.temperature), seed, s.out)
	}
	if err != nil {
		return 0, libFail("sampling", err)
	}
	return s.out[0], nil
}

// stats are the numbers of the tokens-per-second line.
type stats struct {
	prompt, produced int
	prefill, decode  time.Duration
}

// generate runs the prompt (already prefilled: last is its last logits) on
// to at most o.maxTokens new tokens, writing each one's bytes to text as it
// comes (unless o.printIDs), and returns the generated ids (EOS included,
// as C counts it).  logits receives each decode step's logits.
func generate(ctx *kb.Context, m *model, tok *kb.Tokenizer, o *options, last, logits []float32, text io.Writer,
	st *stats) ([]int32, error) {
	s := &sampler{ctx: ctx, o: o, vocab: m.vocab, out: make([]int32, 1)}
	pieces := newPieceCache(tok, m.vocab)
	eos := tok.EOS()
	ids := make([]int32, 0, o.maxTokens)
	input := make([]int32, 1)
	step0 := logits[:m.vocab]
	for step := int64(0); step < o.maxTokens; step++ {
		next, err := s.pick(last, step)
		if err != nil {
			return ids, err
		}
		ids = append(ids, next)
		if int(next) == eos {
			break
		}
		if !o.printIDs {
			if b := pieces.piece(next); len(b) > 0 {
				text.Write(b) // unbuffered: each token reaches the reader as it comes
			}
		}
		if step+1 == o.maxTokens {
			break
		}
		input[0] = next
		t1 := time.Now()
		if err := m.forward(ctx, input, false, step0); err != nil {
			return ids, err
		}
		st.decode += time.Since(t1)
		last = step0
	}
	st.produced = len(ids)
	return ids, nil
}

// report is the tokens-per-second line on stderr, as C prints it.
func (st *stats) report(w io.Writer) {
	decoded := 0
	if st.produced > 1 {
		decoded = st.produced - 1
	}
	rate := 0.0
	if decoded > 0 && st.decode > 0 {
		rate = float64(decoded) / st.decode.Seconds()
	}
	fmt.Fprintf(w, "prefill: %d tokens, %.1f tokens/s; decode: %d tokens, %.1f tokens/s\n", st.prompt,
		float64(st.prompt)/st.prefill.Seconds(), decoded, rate)
}
