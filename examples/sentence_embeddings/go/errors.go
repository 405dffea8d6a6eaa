package main

import "fmt"

// modelError is a problem with the model files or the input; the message
// names the file (and tensor).
type modelError struct{ msg string }

func (e *modelError) Error() string { return e.msg }

func errorf(format string, args ...interface{}) error {
	return &modelError{fmt.Sprintf(format, args...)}
}
