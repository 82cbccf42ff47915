package cli

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docSkipped are the programs the docs may show that the test neither
// runs nor checks, and why. A program in neither this table nor
// docEnv.check fails the test, so that a new kind of command is
// classified rather than silently passed.
var docSkipped = map[string]string{
	"apt-get":      "installs system packages (root, the network)",
	"apt":          "installs system packages (root, the network)",
	"pip":          "installs Python packages (the network)",
	"pip3":         "installs Python packages (the network)",
	"git":          "reads or changes the repository's history",
	"nvidia-smi":   "needs an NVIDIA GPU",
	"rsvg-convert": "converts an SVG that a command above writes; needs librsvg2-bin",
	"cd":           "the commands here run from the repository root",
	// Filters of another command's output: the command before the pipe
	// is the one checked.
	"head": "filters the output of the command before it",
	"tail": "filters the output of the command before it",
	"grep": "filters the output of the command before it",
	"jq":   "filters the output of the command before it",
	"less": "filters the output of the command before it",
	"sort": "filters the output of the command before it",
}

// docPrefixes are words that run the rest of the line as a command.
var docPrefixes = map[string]bool{"sudo": true, "time": true, "env": true, "nice": true}

var envAssignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// commandWords drops what comes before the program: sudo, time, env and
// the environment's assignments (CGO_LDFLAGS=… go build).
func commandWords(words []string) []string {
	for len(words) > 0 && (docPrefixes[words[0]] || envAssignment.MatchString(words[0])) {
		words = words[1:]
	}
	return words
}

// docProgram names the kind of program a command's first word runs:
// "pipecast" for any path to a pipecast binary, "script" for the
// repository's scripts, the program's base name otherwise; "" for one
// the test does not know.
func docProgram(word string) string {
	if strings.HasPrefix(path.Clean(word), "scripts/") {
		return "script"
	}
	switch base := path.Base(word); base {
	case "pipecast", "go", "bash", "sh", "python3", "python", "mpirun", "mpiexec":
		return base
	default:
		if _, ok := docSkipped[base]; ok && base == word {
			return base
		}
	}
	return ""
}

// isCommandLine reports whether a block's line is a command: its program
// is known, and it does not read as a message ("pipecast: …",
// "pipecast profile: 10 runs").
func isCommandLine(l docLine) bool {
	fields := strings.Fields(l.text)
	for i := 0; i < min(2, len(fields)); i++ {
		if strings.HasSuffix(fields[i], ":") {
			return false
		}
	}
	if l.err != nil || len(l.segments) == 0 {
		return len(fields) > 0 && docProgram(fields[0]) != ""
	}
	words := commandWords(l.segments[0].words)
	return len(words) > 0 && docProgram(words[0]) != ""
}

// check runs or checks one simple command, returning what it found.
func (e *docEnv) check(seg shellSegment) (string, error) {
	words := commandWords(seg.words)
	if len(words) == 0 {
		return "", fmt.Errorf("no program, only %q", seg.words)
	}
	switch prog := docProgram(words[0]); prog {
	case "pipecast":
		return e.runPipecast(seg, words[1:])
	case "go":
		return e.checkGo(seg, words[1:])
	case "script":
		return checkScript(e.root, words[0], words[1:])
	case "bash", "sh":
		i := 1
		for i < len(words) && strings.HasPrefix(words[i], "-") {
			i++ // bash's own options: -x, -e
		}
		if i == len(words) {
			return "", fmt.Errorf("%s runs no script", prog)
		}
		return checkScript(e.root, words[i], words[i+1:])
	case "python3", "python":
		if len(words) < 2 {
			return "", fmt.Errorf("%s runs no script", prog)
		}
		return checkPython(e.root, words[1], words[2:])
	case "mpirun", "mpiexec":
		// mpirun's own options come first; the program starts at the
		// first word that names one the test knows.
		for i := 1; i < len(words); i++ {
			if p := docProgram(words[i]); p == "pipecast" || p == "go" {
				inner := seg
				inner.words = words[i:]
				// This process is one rank, not the job mpirun would
				// start: a profile under mpirun runs as a dry run.
				trains := e.trains
				e.trains = false
				result, err := e.check(inner)
				e.trains = trains
				return "under " + prog + ": " + result, err
			}
		}
		return "", fmt.Errorf("%s starts no pipecast", prog)
	case "":
		return "", fmt.Errorf("unknown program %q: run or check it in docEnv.check, or add it to docSkipped with the reason", words[0])
	default:
		return "skipped: " + docSkipped[prog], nil
	}
}

// checkPython checks that a Python script the docs run exists and that
// each option the doc passes is one the script parses (named in its
// text, as argparse's add_argument names it). Scripts are not run: they
// need PyTorch.
func checkPython(root, script string, args []string) (string, error) {
	src, err := os.ReadFile(filepath.Join(root, script))
	if err != nil {
		return "", fmt.Errorf("the script: %w", err)
	}
	for _, a := range args {
		opt, _, _ := strings.Cut(a, "=")
		if strings.HasPrefix(opt, "-") && !strings.Contains(string(src), `"`+opt+`"`) && !strings.Contains(string(src), `'`+opt+`'`) {
			return "", fmt.Errorf("%s passes %s, which the script does not parse", script, opt)
		}
	}
	return "checked: the script exists and parses the options given; not run (needs PyTorch)", nil
}

// TestDocChecks checks that the doc test fails the commands it should
// and passes the others, on lines written for it.
func TestDocChecks(t *testing.T) {
	e := newDocEnv(t, repoRoot(t))
	e.outDir, e.outputs = t.TempDir(), map[string]string{}
	tests := []struct {
		line string
		want string // a part of the result, or of the error when fails
		fail bool
	}{
		{line: "pipecast version", want: "exit 0"},
		{line: "go run ./cmd/pipecast profile --model mlp --out runs", want: "--dry-run: exit 0"},
		{line: "pipecast predict --data RUNS.jsonl --devices 4 --out DIR", want: "predictor/testdata/fit_runs.jsonl"},
		{line: "pipecast report DIR/runs.jsonl", want: filepath.Join(e.outDir, "out", "DIR", "runs.jsonl")}, // what the line above wrote
		{line: "apt-get install x", want: "skipped"},
		{line: "go test -run '^$' -bench '^BenchmarkStep(No)?Recording$' ./runner", want: "BenchmarkStepNoRecording"},
		{line: "frobnicate --x", want: `unknown program "frobnicate"`, fail: true},
		{line: "pipecast report RESULTS.jsonl", want: `placeholder "RESULTS.jsonl"`, fail: true},
		{line: "pipecast profile --dataset cifar10:DIR", want: `placeholder "cifar10:DIR"`, fail: true},
		{line: "pipecast report k1/…", want: "placeholder", fail: true},
		{line: "pipecast profile --no-such-flag", want: "unknown flag: --no-such-flag", fail: true},
		{line: "pipecast predict --data nowhere/runs.jsonl", want: "nowhere/runs.jsonl", fail: true},
		{line: "pipecast profile --threads $(nproc)", want: "only a shell expands it", fail: true},
		{line: "bash scripts/no-such.sh", want: "the script", fail: true},
		{line: "bash scripts/step-vs-pytorch.sh --no-such 1", want: "option --no-such is not in the script's usage", fail: true},
		{line: "python3 scripts/check_torchvision.py --no-such", want: "does not parse", fail: true},
		{line: "go test ./runner -run '^TestNoSuchThing$'", want: "names TestNoSuchThing", fail: true},
		{line: "go test ./runner -run NoSuchThing", want: "matches no", fail: true},
		{line: "go build -o x ./cmd/no-such", want: "no Go package", fail: true},
		{line: "go frob", want: "unknown go command", fail: true},
		{line: "mpirun -np 2 hostname", want: "starts no pipecast", fail: true},
	}
	for _, tc := range tests {
		segs, err := splitShell(tc.line)
		if err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		got, err := e.check(segs[0])
		switch {
		case tc.fail && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: result %q, error %v; want an error with %q", tc.line, got, err, tc.want)
		case !tc.fail && (err != nil || !strings.Contains(got, tc.want)):
			t.Errorf("%s: result %q, error %v; want %q", tc.line, got, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(e.outDir, "out", "runs")); !os.IsNotExist(err) {
		t.Errorf("profile's dry run made its --out directory: %v", err)
	}

	// A file a command leaves in the working directory fails it.
	if err := os.WriteFile(filepath.Join(e.work, "stray.svg"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.checkWork(); err == nil || !strings.Contains(err.Error(), "stray.svg") {
		t.Errorf("a stray file: %v, want an error naming it", err)
	}
	if err := e.checkWork(); err != nil {
		t.Errorf("the stray file was not removed: %v", err)
	}
}

func TestIsCommandLine(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		{"pipecast version", true},
		{"./pipecast profile --out runs", true},
		{"CGO_LDFLAGS=-L/x go build ./cmd/pipecast", true},
		{"sudo apt-get install x", true},
		{"scripts/schedules.sh", true},
		{"pipecast profile: 10 runs on vm (2 cores)", false},
		{"pipecast: 1 of 1 configurations cannot run", false},
		{"│ resnet50 │ gpipe │", false},
		{"step: median wall time", false},
	}
	for _, tc := range tests {
		segs, err := splitShell(tc.text)
		if got := isCommandLine(docLine{text: tc.text, segments: segs, err: err}); got != tc.want {
			t.Errorf("%q: got %v, want %v", tc.text, got, tc.want)
		}
	}
}
