package main

// Error messages as the C driver words them: the library's own message
// (without the Go binding's "kernelbridge: CODE:" prefix), prefixed with
// what was being done.

import (
	"errors"
	"fmt"

	kb "kernelbridge.dev/go/kernelbridge"
)

// libMessage is the library's message of err (the binding's Error.Msg), or
// err's text for any other error.
func libMessage(err error) string {
	var e *kb.Error
	if errors.As(err, &e) && e.Msg != "" {
		return e.Msg
	}
	return err.Error()
}

// libFail is a failed library call: "what: the library's message".
func libFail(what string, err error) error {
	return fmt.Errorf("%s: %s", what, libMessage(err))
}
