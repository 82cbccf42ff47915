package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
)

// ExitCode is the status the pipecast process exits with.
type ExitCode int

// The exit codes, as scripts that call pipecast rely on them.
const (
	ExitOK    ExitCode = 0 // the command succeeded
	ExitError ExitCode = 1 // the command failed while doing its work
	ExitUsage ExitCode = 2 // the command line, or an input it names, was wrong
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

// InputError is an input the command line names that cannot serve: a
// data file without the records the command needs, say. Like a usage
// error it makes pipecast exit with ExitUsage, but the help would not
// help, so none is offered.
type InputError struct {
	Err error
}

// Error returns the message of the underlying error.
func (e *InputError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *InputError) Unwrap() error { return e.Err }

// usageErrorf formats a UsageError.
func usageErrorf(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// exitCodeFor maps the error a command returned to the process's exit
// code. Besides usage errors, a file or directory that does not exist or
// cannot be opened is bad input: every path pipecast opens is one the
// command line names (data, records, weights, output directories).
func exitCodeFor(err error) ExitCode {
	if err == nil {
		return ExitOK
	}
	var u *UsageError
	var in *InputError
	if errors.As(err, &u) || errors.As(err, &in) || badPath(err) {
		return ExitUsage
	}
	return ExitError
}

// badPath reports whether err is a path the command line named that does
// not exist, is not accessible, or is a directory where a file belongs or
// a file where a directory does.
func badPath(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) ||
		errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.ENOTDIR)
}
