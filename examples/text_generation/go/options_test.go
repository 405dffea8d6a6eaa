package main

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestParseArgsDefaults(t *testing.T) {
	o, err := parseArgs([]string{"--model", "m.gguf", "--prompt", ""})
	if err != nil {
		t.Fatal(err)
	}
	if o.model != "m.gguf" || o.prompt == nil || *o.prompt != "" || o.promptIDs != nil || o.maxTokens != 32 ||
		o.temperature != 0 || o.topP != 1 || o.topK != 0 || o.seed != 0 || o.threads != 0 || o.printIDs ||
		o.printPromptIDs || o.logitsSet {
		t.Fatalf("defaults: %+v", o)
	}
}

func TestParseArgsValues(t *testing.T) {
	o, err := parseArgs([]string{"--print-ids", "--model", "m", "--prompt-ids", "1,2", "--max-tokens", "1e2",
		"--top-p", "0.9", "--temperature", "0.8", "--seed", "18446744073709551615", "--threads", "2.9",
		"--print-prompt-ids", "--logits-out", "l.bin"})
	if err != nil {
		t.Fatal(err)
	}
	if *o.promptIDs != "1,2" || o.maxTokens != 100 || o.topP != 0.9 || o.temperature != 0.8 ||
		o.seed != math.MaxUint64 || o.threads != 2 || !o.printIDs || !o.printPromptIDs || o.logitsOut != "l.bin" {
		t.Fatalf("values: %+v", o)
	}
}

func TestParseArgsErrors(t *testing.T) {
	cases := []struct {
		args []string
		msg  string
	}{
		{[]string{"--model", "m"}, "--model and one of --prompt / --prompt-ids are required"},
		{[]string{"--prompt", "x"}, "--model and one of --prompt / --prompt-ids are required"},
		{[]string{"--model", "m", "--prompt", "a", "--prompt-ids", "1"}, "are required"},
		{[]string{"--model", "m", "--prompt"}, "--prompt needs a value"},
		{[]string{"--model", "m", "--nope", "1"}, "unknown option --nope"},
		{[]string{"--model", "m", "--prompt", "a", "--top-k", "5", "--top-p", "0.5"}, "cannot be combined"},
		{[]string{"--model", "m", "--prompt", "a", "--max-tokens", "-1"},
			"--max-tokens expects a number in [0, 1e+09], got '-1'"},
		{[]string{"--model", "m", "--prompt", "a", "--threads", "4097"},
			"--threads expects a number in [0, 4096], got '4097'"},
		{[]string{"--model", "m", "--prompt", "a", "--top-p", "1.5"}, "--top-p expects a number in [0, 1], got '1.5'"},
		{[]string{"--model", "m", "--prompt", "a", "--temperature", "nan"}, "in [0, 1e+06]"},
		{[]string{"--model", "m", "--prompt", "a", "--seed", "-1"}, "in [0, 1.84467e+19]"},
	}
	for _, c := range cases {
		_, err := parseArgs(c.args)
		var u *usageError
		if !errors.As(err, &u) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q: error %v, want a usage error with %q", c.args, err, c.msg)
		}
	}
}

// strtod's syntax and ranges as glibc's (checked against the C driver).
func TestStrtod(t *testing.T) {
	good := map[string]float64{"1": 1, " 5": 5, "+3": 3, "-0": 0, "1e1": 10, ".5": 0.5, "5.": 5, "0x10": 16,
		"0x1p3": 8, "0x.8": 0.5, "1E2": 100}
	for s, want := range good {
		if v, ok := strtod(s); !ok || v != want {
			t.Errorf("strtod(%q) = %v, %v; want %v", s, v, ok, want)
		}
	}
	for _, s := range []string{"", "abc", "1e", "5 ", "1_0", "0x", "1e400", "1e-400", "1e-310", "--1", "1.2.3"} {
		if v, ok := strtod(s); ok {
			t.Errorf("strtod(%q) = %v, accepted", s, v)
		}
	}
	if v, ok := strtod("INFINITY"); !ok || !math.IsInf(v, 1) {
		t.Errorf("strtod(INFINITY) = %v, %v", v, ok)
	}
	if v, ok := strtod("nan(1)"); !ok || !math.IsNaN(v) {
		t.Errorf("strtod(nan(1)) = %v, %v", v, ok)
	}
}

func TestStrtoull(t *testing.T) {
	cases := map[string]uint64{"0": 0, "42": 42, " 7": 7, "+7": 7, "1.5": 1, "1e3": 1, "12abc": 12, "0x10": 0,
		"-0": 0, "18446744073709551615": math.MaxUint64, "18446744073709551616": math.MaxUint64,
		"99999999999999999999999": math.MaxUint64}
	for s, want := range cases {
		if got := strtoull(s); got != want {
			t.Errorf("strtoull(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestParseIDs(t *testing.T) {
	good := map[string][]int32{"": nil, "1": {1}, "1,2,3": {1, 2, 3}, "1,": {1}, " 1, 2": {1, 2}, "+1,-0": {1, 0},
		"2147483647": {2147483647}}
	for s, want := range good {
		got, err := parseIDs(s)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("parseIDs(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"x", "1,x", "1,,2", "1 ", ",", "-1", "2147483648", "99999999999999999999", "1;2", "1,\n"} {
		if got, err := parseIDs(s); err == nil || !strings.Contains(err.Error(), "--prompt-ids") {
			t.Errorf("parseIDs(%q) = %v, %v; want an error naming --prompt-ids", s, got, err)
		}
	}
}

func TestJoinIDs(t *testing.T) {
	if got := string(joinIDs([]int32{1, 22, 333})); got != "1,22,333\n" {
		t.Errorf("joinIDs = %q", got)
	}
	if got := string(joinIDs(nil)); got != "\n" {
		t.Errorf("joinIDs(nil) = %q", got)
	}
}
