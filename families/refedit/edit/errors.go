package edit

import (
	"errors"
	"fmt"
)

// ErrInvalid marks an input the caller has to change (HTTP 400).
var ErrInvalid = errors.New("invalid input")

// ErrTooLarge marks an input over a configured limit (HTTP 413).
var ErrTooLarge = errors.New("input over the limit")

// InputError says which input is at fault and why. Param is the form field name
// ("size", "prompt", "image", ...); the CLI maps it to its flag. errors.Is on
// ErrInvalid or ErrTooLarge tells the two classes apart.
type InputError struct {
	Param   string
	Kind    error
	Message string
}

func (e *InputError) Error() string { return e.Param + ": " + e.Message }

func (e *InputError) Unwrap() error { return e.Kind }

func invalid(param, format string, args ...any) error {
	return &InputError{Param: param, Kind: ErrInvalid, Message: fmt.Sprintf(format, args...)}
}

func tooLarge(param, format string, args ...any) error {
	return &InputError{Param: param, Kind: ErrTooLarge, Message: fmt.Sprintf(format, args...)}
}
