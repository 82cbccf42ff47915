package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// run executes pipecast with args and returns the exit code and what it
// printed to each stream.
func run(t *testing.T, args ...string) (code ExitCode, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Execute(context.Background(), args, &IOStreams{Out: &out, ErrOut: &errOut})
	return code, out.String(), errOut.String()
}

func TestExecuteExitCodes(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   ExitCode
		wantStdout []string // substrings of stdout
		wantStderr []string // substrings of stderr
	}{
		{name: "no arguments prints help", args: nil, wantCode: ExitOK,
			wantStdout: []string{"pipecast runs real pipeline-parallel training", "Available Commands:", "version"}},
		{name: "--help", args: []string{"--help"}, wantCode: ExitOK,
			wantStdout: []string{"Available Commands:", "version"}},
		{name: "-h", args: []string{"-h"}, wantCode: ExitOK, wantStdout: []string{"Available Commands:"}},
		{name: "help command", args: []string{"help"}, wantCode: ExitOK, wantStdout: []string{"Available Commands:"}},
		{name: "help version", args: []string{"help", "version"}, wantCode: ExitOK,
			wantStdout: []string{"pipecast version [flags]", "--output"}},
		{name: "version --help", args: []string{"version", "--help"}, wantCode: ExitOK,
			wantStdout: []string{"pipecast version [flags]", "text|json"}},
		{name: "version", args: []string{"version"}, wantCode: ExitOK,
			wantStdout: []string{"pipecast version ", runtime.Version(), "cpu"}},
		{name: "version json", args: []string{"version", "--output", "json"}, wantCode: ExitOK,
			wantStdout: []string{`"go_version": "` + runtime.Version() + `"`}},
		{name: "unknown command", args: []string{"nosuch"}, wantCode: ExitUsage,
			wantStderr: []string{`pipecast: unknown command "nosuch" for "pipecast"`, "Run 'pipecast --help' for usage."}},
		{name: "misspelt command suggests", args: []string{"verson"}, wantCode: ExitUsage,
			wantStderr: []string{`did you mean "version"?`}},
		{name: "unknown root flag", args: []string{"--bogus"}, wantCode: ExitUsage,
			wantStderr: []string{"pipecast: unknown flag: --bogus"}},
		{name: "unknown version flag", args: []string{"version", "--bogus"}, wantCode: ExitUsage,
			wantStderr: []string{"pipecast: unknown flag: --bogus", "Run 'pipecast version --help' for usage."}},
		{name: "extra argument", args: []string{"version", "extra"}, wantCode: ExitUsage,
			wantStderr: []string{`pipecast: "pipecast version" accepts no arguments, got "extra"`}},
		{name: "bad output format", args: []string{"version", "--output", "xml"}, wantCode: ExitUsage,
			wantStderr: []string{`unknown format "xml" (want text|json)`}},
		{name: "bad output format with equals", args: []string{"version", "--output=table"}, wantCode: ExitUsage,
			wantStderr: []string{`unknown format "table"`}},
		{name: "output without value", args: []string{"version", "--output"}, wantCode: ExitUsage,
			wantStderr: []string{"flag needs an argument"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit code: got %d, want %d (stderr %q)", code, tc.wantCode, stderr)
			}
			for _, want := range tc.wantStdout {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout: got %q, want it to contain %q", stdout, want)
				}
			}
			for _, want := range tc.wantStderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr: got %q, want it to contain %q", stderr, want)
				}
			}
			if tc.wantCode == ExitOK && stderr != "" {
				t.Errorf("stderr on success: got %q, want nothing", stderr)
			}
			if tc.wantCode != ExitOK {
				if stdout != "" {
					t.Errorf("stdout on failure: got %q, want nothing (data only)", stdout)
				}
				if !strings.HasPrefix(stderr, "pipecast: ") {
					t.Errorf("stderr: got %q, want it to start with %q", stderr, "pipecast: ")
				}
			}
		})
	}
}

// failingWriter fails every write, as a closed pipe would.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestExecuteFailureExitsOne(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			var errOut bytes.Buffer
			code := Execute(context.Background(), []string{"version", "--output", format},
				&IOStreams{Out: failingWriter{}, ErrOut: &errOut})
			if code != ExitError {
				t.Errorf("exit code: got %d, want %d", code, ExitError)
			}
			if got := errOut.String(); !strings.HasPrefix(got, "pipecast: ") || !strings.Contains(got, "broken pipe") {
				t.Errorf("stderr: got %q, want pipecast: ... broken pipe", got)
			}
			if strings.Contains(errOut.String(), "--help") {
				t.Errorf("stderr: got %q, want no usage hint for a failure that is not a usage error", errOut.String())
			}
		})
	}
}

func TestRootHelpHasNoFlagsUsageLine(t *testing.T) {
	// The root command is runnable only for argument checking; its help
	// must not suggest that "pipecast [flags]" does anything.
	_, stdout, _ := run(t, "--help")
	if strings.Contains(stdout, "pipecast [flags]") {
		t.Errorf("root help lists %q:\n%s", "pipecast [flags]", stdout)
	}
	if !strings.Contains(stdout, "pipecast [command]") {
		t.Errorf("root help lacks %q:\n%s", "pipecast [command]", stdout)
	}
}

func TestExitCodeFor(t *testing.T) {
	usage := usageErrorf("bad flag %s", "--x")
	tests := []struct {
		name string
		err  error
		want ExitCode
	}{
		{name: "success", err: nil, want: ExitOK},
		{name: "failure", err: errors.New("disk full"), want: ExitError},
		{name: "usage", err: usage, want: ExitUsage},
		{name: "wrapped usage", err: fmt.Errorf("parse: %w", usage), want: ExitUsage},
		{name: "input", err: &InputError{Err: errors.New("no records")}, want: ExitUsage},
		{name: "missing file", err: fmt.Errorf("read: %w", &fs.PathError{Op: "open", Path: "x", Err: syscall.ENOENT}), want: ExitUsage},
		{name: "unreadable file", err: &fs.PathError{Op: "open", Path: "x", Err: syscall.EACCES}, want: ExitUsage},
		{name: "directory for a file", err: &fs.PathError{Op: "read", Path: "x", Err: syscall.EISDIR}, want: ExitUsage},
		{name: "write failure", err: &fs.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}, want: ExitError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := exitCodeFor(tc.err); got != tc.want {
				t.Errorf("exitCodeFor(%v): got %d, want %d", tc.err, got, tc.want)
			}
		})
	}
	if got, want := usage.Error(), "bad flag --x"; got != want {
		t.Errorf("UsageError message: got %q, want %q", got, want)
	}
}
