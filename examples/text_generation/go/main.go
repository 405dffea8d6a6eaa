// Command text_generation generates text from a Llama-architecture GGUF
// model (dense or with experts) on kernelbridge's kernels: the Go port of
// the C driver examples/text_generation/c (same options, same kernels in
// the same order, byte-identical output).
//
//	text_generation --model FILE (--prompt TEXT | --prompt-ids 1,2,3) [--max-tokens N]
//	                [--temperature T] [--top-k K | --top-p P] [--seed S] [--threads N]
//	                [--print-ids] [--print-prompt-ids] [--logits-out FILE]
package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"
	"time"

	kb "kernelbridge.dev/go/kernelbridge"
)

func main() {
	o, err := parseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %s\n%s", err, usage)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "error: %s\n", err)
		os.Exit(1)
	}
}

func run(o *options) error {
	ctx, err := kb.NewContext(o.threads, kb.BackendCPU)
	if err != nil {
		return fmt.Errorf("%s", libMessage(err))
	}
	defer ctx.Close()
	g, err := ctx.OpenGguf(o.model)
	if err != nil {
		return fmt.Errorf("%s", libMessage(err))
	}
	defer g.Close()
	tok, err := newTokenizer(g)
	if err != nil {
		return err
	}
	defer tok.Close()

	// The prompt: its ids, with BOS as the vocabulary says.
	var prompt []int32
	if o.prompt != nil {
		if prompt, err = tok.Tokenize(*o.prompt, true, false); err != nil {
			return fmt.Errorf("%s", libMessage(err))
		}
	} else if prompt, err = parseIDs(*o.promptIDs); err != nil {
		return err
	}
	if len(prompt) == 0 {
		return fmt.Errorf("the prompt has no tokens")
	}
	if o.printPromptIDs {
		os.Stdout.Write(joinIDs(prompt))
	}
	m, err := loadModel(g, len(prompt))
	if err != nil {
		return err
	}
	if int64(len(prompt))+o.maxTokens > int64(m.context) {
		return fmt.Errorf("%d prompt tokens + %d new ones exceed the model's context of %d", len(prompt),
			o.maxTokens, m.context)
	}
	rows := 1
	if o.logitsSet {
		rows = len(prompt)
	}
	logits := make([]float32, rows*m.vocab)
	st := &stats{prompt: len(prompt)}
	t0 := time.Now()
	if err := m.forward(ctx, prompt, o.logitsSet, logits); err != nil {
		return err
	}
	st.prefill = time.Since(t0)
	if o.logitsSet {
		if err := writeLogits(o.logitsOut, logits); err != nil {
			return err
		}
	}
	last := logits[(rows-1)*m.vocab:]
	ids, err := generate(ctx, m, tok, o, last, logits, os.Stdout, st)
	if err != nil {
		return err
	}
	if o.printIDs {
		os.Stdout.Write(joinIDs(ids))
	} else {
		os.Stdout.Write([]byte{'\n'})
	}
	st.report(os.Stderr)
	return nil
}

// joinIDs is ids comma-separated, then a newline.
func joinIDs(ids []int32) []byte {
	var b bytes.Buffer
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(id)))
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// writeLogits writes the prompt's logits, float32 little-endian.
func writeLogits(path string, logits []float32) error {
	buf := make([]byte, 4*len(logits))
	for i, v := range logits {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
	}
	f, err := os.Create(path)
	if err == nil {
		_, err = f.Write(buf)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("cannot write %s", path)
	}
	return nil
}
