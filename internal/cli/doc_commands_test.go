package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDocCommands runs or checks every command in the code blocks of
// README.md and docs/*.md, so that the commands the docs show cannot rot:
//
//   - pipecast commands (pipecast, ./pipecast, go run ./cmd/pipecast, and
//     the one mpirun starts) run in this process from the repository
//     root, each output (docOutputFlags, > redirections) sent to a
//     temporary directory and each placeholder replaced by a fixture
//     (docPlaceholders). profile runs with --dry-run (the README's for
//     real, unless -short), every other command for real, and each must exit 0 (or refuse only for want of a build
//     tag this test binary lacks).
//   - scripts must exist and pass bash -n, the options the doc passes
//     being ones their usage mentions; they are not run.
//   - go test commands must name packages that exist, and their -run,
//     -bench and -fuzz patterns must match some test; go build, vet and
//     the like must name packages that exist. None is run.
//   - the programs of docSkipped are listed with the reason they are not
//     checked; any other program fails the test until it is classified.
//
// A block none of whose lines starts with a known program is output (a
// table, a message) and is skipped; every command and its result is
// logged (go test -v).
func TestDocCommands(t *testing.T) {
	root := repoRoot(t)
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append([]string{filepath.Join(root, "README.md")}, docs...)
	env := newDocEnv(t, root)
	for _, path := range docs {
		rel, _ := filepath.Rel(root, path)
		src, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the glob
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Run(rel, func(t *testing.T) {
			env.outDir, env.outputs = t.TempDir(), map[string]string{}
			env.trains = rel == "README.md" && !testing.Short()
			for _, b := range docBlocks(rel, string(src)) {
				env.checkBlock(t, b)
			}
		})
	}
}

// repoRoot returns the repository root: the nearest directory above the
// test's own that holds go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}

// docOutputFlags are pipecast's flags that name a file or directory to
// write: their values go to the doc's temporary directory.
var docOutputFlags = map[string]bool{"out": true, "svg": true, "svg-chart": true, "svg-memory": true, "trace": true, "pprof": true}

// docPlaceholders are the files the docs name by a placeholder, or by a
// path that only an earlier command (not run here) would have made, and
// the fixture each stands for, relative to the repository root. Add a
// line when a doc uses a new placeholder; the test names the doc, the
// line and the placeholder until it is mapped.
var docPlaceholders = map[string]string{
	// The default sweep's workload (resnet50 32px ×0.25, batch 16) at K
	// = 1, 2 and M = 1 to 8 under gpipe, coop and 1f1b: what profile
	// --out runs records, in the shape every command reading runs takes.
	"RUNS.jsonl":      "predictor/testdata/fit_runs.jsonl",
	"runs/runs.jsonl": "predictor/testdata/fit_runs.jsonl",
	"DIR/runs.jsonl":  "predictor/testdata/fit_runs.jsonl",
	"TRAIN.jsonl":     "predictor/testdata/fit_runs.jsonl",
	// Two datasets of the same workload, for report --compare A B.
	"A.jsonl": "predictor/testdata/fit_runs.jsonl",
	"B.jsonl": "predictor/testdata/validation_runs.jsonl",
}

// docSlowLimit is how long a command may take before the log calls it
// slow: one that takes longer belongs in docSlowInShort.
const docSlowLimit = 20 * time.Second

// docSlowInShort says why a pipecast command is left out under -short,
// or "": models export and import write and read files of hundreds of
// MiB (2 to 9 s each at the docs' sizes, gigabytes for the large models).
func docSlowInShort(args []string) string {
	if len(args) > 1 && args[0] == "models" && (args[1] == "export" || args[1] == "import") {
		return "models " + args[1] + " moves hundreds of MiB of weights"
	}
	return ""
}

// docEnv is where the doc's commands run: a working directory that
// mirrors the repository root, every entry a symbolic link into it, so
// that a file a command writes where the test did not redirect it lands
// there, not in the repository, and fails the test.
type docEnv struct {
	root, work string
	outDir     string            // the current doc's outputs
	outputs    map[string]string // a path the doc writes → where it went
	// trains says whether the current doc's profile commands train for
	// real: the README's, which are the quick ones a newcomer runs first,
	// unless testing.Short(); every other profile runs as a dry run.
	trains bool
}

func newDocEnv(t *testing.T, root string) *docEnv {
	work := filepath.Join(t.TempDir(), "root")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == ".git" {
			continue
		}
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(work, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(work)
	return &docEnv{root: root, work: work}
}

// checkBlock checks the commands of a block, or logs it as output.
func (e *docEnv) checkBlock(t *testing.T, b docBlock) {
	if !b.prompted && !slices.ContainsFunc(b.lines, isCommandLine) {
		t.Logf("%s:%d: output, not commands (no line starts with a known program)", b.file, b.line)
		return
	}
	for _, l := range b.lines {
		if l.err != nil {
			t.Errorf("%s\n\tcannot split it: %v", l, l.err)
			continue
		}
		for _, seg := range l.segments {
			result, err := e.check(seg)
			text := l.text
			if len(l.segments) > 1 {
				text = strings.Join(seg.words, " ") + "   (of " + l.text + ")"
			}
			if err != nil {
				t.Errorf("%s:%d: %s\n\t%v", l.file, l.line, text, err)
				continue
			}
			t.Logf("%s:%d: %s\n\t%s", l.file, l.line, text, result)
		}
	}
}

// runPipecast runs a pipecast command line in this process, profile as
// a dry run unless the doc's profile commands train (docEnv.trains).
func (e *docEnv) runPipecast(seg shellSegment, args []string) (string, error) {
	if len(seg.expands) > 0 {
		return "", fmt.Errorf("%q: only a shell expands it; write the value, or a placeholder in docPlaceholders", seg.expands[0])
	}
	if why := docSlowInShort(args); why != "" && testing.Short() {
		return "skipped under -short: " + why, nil
	}
	args, err := e.rewriteArgs(args)
	if err != nil {
		return "", err
	}
	if len(args) > 0 && args[0] == "profile" && !e.trains && !slices.Contains(args, "--dry-run") {
		args = append(args, "--dry-run")
	}
	var out, errOut bytes.Buffer
	start := time.Now()
	code := Execute(context.Background(), args, &IOStreams{Out: &out, ErrOut: &errOut})
	took := time.Since(start)
	if seg.stdout != "" {
		if err := os.WriteFile(e.output("stdout", seg.stdout), out.Bytes(), 0o644); err != nil {
			return "", err
		}
	}
	if err := e.checkWork(); err != nil {
		return "", err
	}
	ran := fmt.Sprintf("pipecast %s: exit %d in %.1f s", strings.Join(args, " "), code, took.Seconds())
	if took > docSlowLimit {
		ran += fmt.Sprintf(" (slow: over %v; see docSlowInShort)", docSlowLimit)
	}
	if code == ExitOK {
		return ran, nil
	}
	if tag := missingTag(code, errOut.String()); tag != "" {
		return ran + ", as this build must: " + tag, nil
	}
	return "", fmt.Errorf("%s, want 0:\n\t%s", ran, strings.ReplaceAll(strings.TrimSpace(errOut.String()), "\n", "\n\t"))
}

// missingTag says which build tag a command's refusal asks for, or "":
// a command for the GPU or MPI build cannot run in a test binary built
// without that tag. Its flags still parse, and profile --dry-run makes
// every other check before it refuses the MPI transport.
func missingTag(code ExitCode, stderr string) string {
	switch {
	case code != ExitUsage:
		return ""
	case !mpiBuilt && strings.Contains(stderr, "built without the mpi tag"):
		return "the test binary is built without -tags mpi"
	case strings.Contains(stderr, "not compiled in"):
		return "the test binary lacks the backend's build tag"
	}
	return ""
}

// rewriteArgs sends every output to the doc's temporary directory and
// replaces inputs: a path an earlier command of the doc wrote by where it
// went, a placeholder by its fixture.
func (e *docEnv) rewriteArgs(args []string) ([]string, error) {
	out := slices.Clone(args)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if name, value, eq := strings.Cut(strings.TrimPrefix(a, "--"), "="); strings.HasPrefix(a, "--") {
			switch {
			case docOutputFlags[name] && eq:
				out[i] = "--" + name + "=" + e.output(name, value)
			case docOutputFlags[name] && i+1 < len(out):
				out[i+1] = e.output(name, out[i+1])
				i++
			case eq:
				v, err := e.input(value)
				if err != nil {
					return nil, err
				}
				out[i] = "--" + name + "=" + v
			}
			continue
		}
		v, err := e.input(a)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// output returns where a file the doc writes with flag goes.
func (e *docEnv) output(flag, path string) string {
	dir := filepath.Join(e.outDir, flag)
	_ = os.MkdirAll(dir, 0o755) // a failure shows as the command's own error
	p := filepath.Join(dir, filepath.Base(path))
	e.outputs[filepath.Clean(path)] = p
	return p
}

// input returns what an argument (or each of its comma-separated values)
// stands for here.
func (e *docEnv) input(arg string) (string, error) {
	values := strings.Split(arg, ",")
	for i, v := range values {
		clean := filepath.Clean(v)
		for written, p := range e.outputs {
			if rest, ok := strings.CutPrefix(clean, written); ok && (rest == "" || strings.HasPrefix(rest, "/")) {
				if _, err := os.Stat(p + rest); err == nil {
					values[i] = p + rest
				}
			}
		}
		if values[i] != v {
			continue
		}
		if f, ok := docPlaceholders[v]; ok {
			values[i] = f
		} else if isPlaceholder(v) {
			return "", fmt.Errorf("placeholder %q has no fixture: add one to docPlaceholders", v)
		}
	}
	return strings.Join(values, ","), nil
}

// isPlaceholder reports whether a word stands for something the reader
// fills in: an ellipsis, or a part in capitals (FILE, DIR/runs.jsonl,
// cifar10:DIR, A.jsonl).
func isPlaceholder(w string) bool {
	if strings.Contains(w, "…") || strings.Contains(w, "...") {
		return true
	}
	for _, part := range strings.FieldsFunc(w, func(r rune) bool { return r == '/' || r == ':' || r == '=' }) {
		stem, _, _ := strings.Cut(part, ".")
		if stem != "" && strings.ToUpper(stem) == stem && strings.ContainsAny(stem, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
			return true
		}
	}
	return false
}

// checkWork fails if a command wrote into the working directory rather
// than where the test sent its outputs, and removes what it wrote.
func (e *docEnv) checkWork() error {
	entries, err := os.ReadDir(e.work)
	if err != nil {
		return err
	}
	var stray []string
	for _, d := range entries {
		if d.Type()&os.ModeSymlink == 0 {
			stray = append(stray, d.Name())
			_ = os.RemoveAll(filepath.Join(e.work, d.Name()))
		}
	}
	if len(stray) > 0 {
		return errors.New("wrote " + strings.Join(stray, ", ") + " into the repository root: send its flag to the temporary directory (docOutputFlags)")
	}
	return nil
}
