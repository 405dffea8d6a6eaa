package main

// The command line, parsed exactly as the C driver (c/main.c) parses it:
// the shared tests compare the two programs' output byte for byte, so the
// same spellings must be accepted and refused (strtod / strtoul rules, not
// Go's strconv ones).

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// usage is the C driver's, word for word (its program name included), so
// that the two programs' stderr is the same.
const usage = `usage: generate --model FILE (--prompt TEXT | --prompt-ids 1,2,3) [--max-tokens N] [--temperature T]
                [--top-k K | --top-p P] [--seed S] [--threads N] [--print-ids] [--print-prompt-ids]
                [--logits-out FILE]
`

type options struct {
	model, logitsOut  string
	logitsSet         bool    // --logits-out given (even as "", which C then fails to open)
	modelSet          bool    // --model given (C tests its pointer for NULL: "" counts)
	prompt, promptIDs *string // nil when not given ("" is a valid prompt)
	maxTokens, topK   int64
	threads           int
	temperature, topP float64
	seed              uint64
	printIDs          bool
	printPromptIDs    bool
}

// usageError is a bad command line: exit status 2 and the usage text.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// A numeric option's range, with the bounds as C's %g prints them (they
// appear in the error message).
type numRange struct {
	lo, hi         float64
	loText, hiText string
}

var (
	countRange  = numRange{0, 1e9, "0", "1e+09"}
	threadRange = numRange{0, 4096, "0", "4096"}
	tempRange   = numRange{0, 1e6, "0", "1e+06"}
	probRange   = numRange{0, 1, "0", "1"}
	seedRange   = numRange{0, 18446744073709551615.0, "0", "1.84467e+19"}
)

func parseArgs(args []string) (*options, error) {
	o := &options{maxTokens: 32, topP: 1.0}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch a {
		case "--print-ids":
			o.printIDs = true
			continue
		case "--print-prompt-ids":
			o.printPromptIDs = true
			continue
		}
		if i+1 >= len(args) {
			return nil, &usageError{a + " needs a value"}
		}
		i++
		v := args[i]
		var err error
		var d float64
		switch a {
		case "--model":
			o.model, o.modelSet = v, true
		case "--prompt":
			o.prompt = &args[i]
		case "--prompt-ids":
			o.promptIDs = &args[i]
		case "--logits-out":
			o.logitsOut = v
			o.logitsSet = true
		case "--max-tokens":
			d, err = parseNumber(a, v, countRange)
			o.maxTokens = int64(d)
		case "--top-k":
			d, err = parseNumber(a, v, countRange)
			o.topK = int64(d)
		case "--threads":
			d, err = parseNumber(a, v, threadRange)
			o.threads = int(d)
		case "--temperature":
			o.temperature, err = parseNumber(a, v, tempRange)
		case "--top-p":
			o.topP, err = parseNumber(a, v, probRange)
		case "--seed":
			if _, err = parseNumber(a, v, seedRange); err == nil {
				o.seed = strtoull(v)
			}
		default:
			return nil, &usageError{"unknown option " + a}
		}
		if err != nil {
			return nil, err
		}
	}
	if !o.modelSet || (o.prompt == nil) == (o.promptIDs == nil) {
		return nil, &usageError{"--model and one of --prompt / --prompt-ids are required"}
	}
	if o.topK > 0 && o.topP < 1.0 {
		return nil, &usageError{"--top-k and --top-p cannot be combined (the library samples with one of them)"}
	}
	return o, nil
}

// cSpace is C's isspace in the "C" locale, which strtod and strtol skip.
const cSpace = " \t\n\v\f\r"

// strtodSyntax is what glibc's strtod consumes entirely (the C driver
// refuses trailing characters): decimal and hexadecimal numbers, infinity
// and NaN.
var strtodSyntax = regexp.MustCompile(`^[+-]?(?:` +
	`(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?` +
	`|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?` +
	`|(?i:inf|infinity|nan(?:\([0-9A-Za-z_]*\))?)` +
	`)$`)

// strtod converts text as C's strtod(text, &end) with *end == '\0'
// required; ok is false where C's parse_number fails on syntax or ERANGE
// (overflow, or a non-zero value below the smallest normal double, which
// glibc reports as underflow).
func strtod(text string) (v float64, ok bool) {
	s := strings.TrimLeft(text, cSpace)
	if !strtodSyntax.MatchString(s) {
		return 0, false
	}
	body := strings.TrimLeft(s, "+-")
	neg := strings.HasPrefix(s, "-")
	lower := strings.ToLower(body)
	switch {
	case strings.HasPrefix(lower, "nan"):
		return math.NaN(), true
	case strings.HasPrefix(lower, "inf"):
		if neg {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	if strings.HasPrefix(lower, "0x") && !strings.ContainsAny(lower, "p") {
		body += "p0" // Go needs the binary exponent that C makes optional
	}
	f, err := strconv.ParseFloat(body, 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, false // overflow: ERANGE
	}
	if f != 0 && math.Abs(f) < 0x1p-1022 {
		return 0, false // subnormal result: ERANGE
	}
	if f == 0 && hasNonZeroDigit(lower) {
		return 0, false // underflow to zero: ERANGE
	}
	if neg {
		f = -f
	}
	return f, true
}

// hasNonZeroDigit reports a non-zero digit in a number's mantissa.
func hasNonZeroDigit(num string) bool {
	if strings.HasPrefix(num, "0x") {
		m := num[2:]
		if i := strings.IndexByte(m, 'p'); i >= 0 {
			m = m[:i]
		}
		return strings.ContainsAny(m, "123456789abcdef")
	}
	if i := strings.IndexByte(num, 'e'); i >= 0 {
		num = num[:i]
	}
	return strings.ContainsAny(num, "123456789")
}

// parseNumber is C's parse_number: a number in [r.lo, r.hi] (NaN fails).
func parseNumber(flag, text string, r numRange) (float64, error) {
	v, ok := strtod(text)
	if !ok || !(v >= r.lo && v <= r.hi) {
		return 0, &usageError{fmt.Sprintf("%s expects a number in [%s, %s], got '%s'", flag, r.loText, r.hiText, text)}
	}
	return v, nil
}

// strtoull is C's strtoull(text, NULL, 10): leading space, a sign, the
// longest run of digits (none: 0); saturates at 2^64 - 1; a minus sign
// negates modulo 2^64.
func strtoull(text string) uint64 {
	s := strings.TrimLeft(text, cSpace)
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	var v uint64
	overflow := false
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			break
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			overflow = true
		}
		v = v*10 + d
	}
	if overflow {
		return math.MaxUint64
	}
	if neg {
		return -v
	}
	return v
}

// parseIDs is C's parse_ids: comma-separated token ids, each as strtol
// reads it (leading space and a sign allowed) in [0, 2^31 - 1], a trailing
// comma allowed; "" gives no ids.
func parseIDs(text string) ([]int32, error) {
	bad := fmt.Errorf("--prompt-ids expects comma-separated token ids, got '%s'", text)
	var ids []int32
	p := text
	for p != "" {
		s := strings.TrimLeft(p, cSpace)
		neg := false
		if s != "" && (s[0] == '+' || s[0] == '-') {
			neg = s[0] == '-'
			s = s[1:]
		}
		n := 0
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			n++
		}
		if n == 0 {
			return nil, bad // no digits: strtol's end == p
		}
		v, err := strconv.ParseInt(s[:n], 10, 64)
		if err != nil || v > math.MaxInt32 || (neg && v != 0) {
			return nil, bad // ERANGE, or outside [0, INT32_MAX]
		}
		rest := s[n:]
		if rest != "" && rest[0] != ',' {
			return nil, bad
		}
		ids = append(ids, int32(v))
		if rest != "" {
			rest = rest[1:]
		}
		p = rest
	}
	return ids, nil
}
