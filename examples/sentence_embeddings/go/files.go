package main

// Reading the model folder's files: errors name the file.

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func readFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errorf("%s: missing", path)
	}
	if err != nil {
		return nil, errorf("%s: cannot read: %v", path, unwrapPathError(err))
	}
	return b, nil
}

// readJSONObject returns the object in path, or nil when the file is absent
// and not required.
func readJSONObject(path string, required bool) (map[string]json.RawMessage, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) && !required {
		return nil, nil
	}
	b, err := readFile(path)
	if err != nil {
		return nil, err
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil || doc == nil {
		return nil, errorf("%s: not a valid JSON object", path)
	}
	return doc, nil
}

// jsonInt: an integer written without fraction or exponent, as Python's json reads an int.
func jsonInt(raw json.RawMessage) (int64, bool) {
	v, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	return v, err == nil
}

// jsonFloat: any JSON number, as float64.
func jsonFloat(raw json.RawMessage) (float64, bool) {
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, false
	}
	return v, true
}

func jsonString(raw json.RawMessage) (string, bool) {
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", false
	}
	return v, true
}

func jsonBool(raw json.RawMessage) (bool, bool) {
	var v bool
	if err := json.Unmarshal(raw, &v); err != nil {
		return false, false
	}
	return v, true
}

func shapeString(s []int64) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = strconv.FormatInt(d, 10)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
