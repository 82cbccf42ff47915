package cli

import (
	"errors"
	"fmt"
)

// ExitCode is the status the pipecast process exits with.
type ExitCode int

// The exit codes, as scripts that call pipecast rely on them.
const (
	ExitOK    ExitCode = 0 // the command succeeded
	ExitError ExitCode = 1 // the command failed while doing its work
	ExitUsage ExitCode = 2 // the command line was wrong: nothing was done
)

// UsageError is an error in the command line itself: an unknown command,
// an unknown or malformed flag, a bad flag value or a wrong number of
// arguments. It makes pipecast exit with ExitUsage.
type UsageError struct {
	Err error
}

// Error returns the message of the underlying error.
func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *UsageError) Unwrap() error { return e.Err }

// usageErrorf formats a UsageError.
func usageErrorf(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// exitCodeFor maps the error a command returned to the process's exit
// code.
func exitCodeFor(err error) ExitCode {
	if err == nil {
		return ExitOK
	}
	var u *UsageError
	if errors.As(err, &u) {
		return ExitUsage
	}
	return ExitError
}
