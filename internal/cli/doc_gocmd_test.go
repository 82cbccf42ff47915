package cli

import (
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// goValueFlags are the flags of go build, run and test that take the
// next word as their value; any other flag is a boolean (-v, -race) or
// written -name=value.
var goValueFlags = map[string]bool{
	"C": true, "o": true, "p": true, "tags": true, "ldflags": true, "gcflags": true, "asmflags": true, "mod": true,
	"modfile": true, "overlay": true, "pgo": true, "pkgdir": true, "toolexec": true, "exec": true, "covermode": true,
	"coverpkg": true, "vet": true, "run": true, "bench": true, "benchtime": true, "count": true, "cpu": true,
	"fuzz": true, "fuzztime": true, "fuzzminimizetime": true, "list": true, "parallel": true, "shuffle": true,
	"skip": true, "timeout": true, "outputdir": true, "coverprofile": true, "cpuprofile": true, "memprofile": true,
	"memprofilerate": true, "blockprofile": true, "blockprofilerate": true, "mutexprofile": true,
	"mutexprofilefraction": true, "trace": true,
}

// docGoSkipped are the go commands the test does not check, and why.
var docGoSkipped = map[string]string{
	"mod":     "changes go.mod and go.sum",
	"get":     "changes go.mod and go.sum (the network)",
	"env":     "prints the toolchain's settings",
	"version": "prints the toolchain's version",
	"clean":   "removes build outputs",
}

// goArgs splits a go command's arguments into its flags and the rest:
// the packages (for run, the package and the program's arguments).
func goArgs(args []string, stopAtPackage bool) (flags map[string]string, rest []string) {
	flags = map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-args" || a == "--" || !strings.HasPrefix(a, "-") {
			if !strings.HasPrefix(a, "-") {
				rest = append(rest, a)
				if stopAtPackage {
					return flags, append(rest, args[i+1:]...)
				}
				continue
			}
			return flags, rest // the test binary's arguments
		}
		name, value, eq := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !eq && goValueFlags[name] && i+1 < len(args) {
			value, i = args[i+1], i+1
		}
		flags[name] = value
	}
	return flags, rest
}

// checkGo checks a go command: go run ./cmd/pipecast runs as pipecast,
// and every other build, run, vet, generate or test must name packages
// that exist under its build tags, a test's patterns matching some test.
func (e *docEnv) checkGo(seg shellSegment, args []string) (string, error) {
	if len(args) == 0 {
		return "", errors.New("go runs no command")
	}
	sub := args[0]
	if why, ok := docGoSkipped[sub]; ok {
		return "skipped: " + why, nil
	}
	switch sub {
	case "run":
		flags, rest := goArgs(args[1:], true)
		if len(rest) == 0 {
			return "", errors.New("go run runs no package")
		}
		if p := filepath.ToSlash(filepath.Clean(rest[0])); p == "cmd/pipecast" || p == "github.com/pipecast/pipecast/cmd/pipecast" {
			return e.runPipecast(seg, rest[1:])
		}
		pkgs, err := goPackages(e.root, rest[:1], flags["tags"])
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("checked: package %s exists; not run (a program other than pipecast)", pkgs[0]), nil
	case "build", "install", "vet", "generate", "list":
		flags, rest := goArgs(args[1:], false)
		pkgs, err := goPackages(e.root, rest, flags["tags"])
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("checked: %d packages exist; not run", len(pkgs)), nil
	case "test":
		flags, rest := goArgs(args[1:], false)
		return checkGoTest(e.root, flags, rest)
	}
	return "", fmt.Errorf("go %s: unknown go command: check it in docEnv.checkGo, or add it to docGoSkipped with the reason", sub)
}

// goPackages returns the directories of the packages that patterns name
// (./x, ./x/..., or import paths of this module; "." when none) under the
// build tags tags, refusing a pattern that names none. It reads the
// sources, as go list would, without building anything.
func goPackages(root string, patterns []string, tags string) ([]string, error) {
	ctx := build.Default
	ctx.CgoEnabled = true // the tags that need cgo (cuda, mpi, openblas) are built with it
	ctx.BuildTags = strings.FieldsFunc(tags, func(r rune) bool { return r == ',' || r == ' ' })
	isPackage := func(dir string) bool {
		_, err := ctx.ImportDir(dir, 0)
		return err == nil
	}
	if len(patterns) == 0 {
		patterns = []string{"."}
	}
	var dirs []string
	for _, pat := range patterns {
		rel := strings.TrimPrefix(pat, "github.com/pipecast/pipecast")
		if rel == pat && !strings.HasPrefix(pat, ".") {
			return nil, fmt.Errorf("%s: not a package of this module", pat)
		}
		rel = strings.TrimPrefix(rel, "/")
		base, all := strings.CutSuffix(filepath.ToSlash(filepath.Clean(rel)), "/...")
		if base == "..." {
			base, all = ".", true
		}
		dir := filepath.Join(root, base)
		if !all {
			if !isPackage(dir) {
				return nil, fmt.Errorf("%s: no Go package there (tags %q)", pat, tags)
			}
			dirs = append(dirs, dir)
			continue
		}
		n := len(dirs)
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if d.IsDir() && p != dir && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if d.IsDir() && isPackage(p) {
				dirs = append(dirs, p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", pat, err)
		}
		if len(dirs) == n {
			return nil, fmt.Errorf("%s: matches no packages (tags %q)", pat, tags)
		}
	}
	return dirs, nil
}

// checkGoTest checks a go test command without running it: its packages
// exist, -run matches a test, example or fuzz target of theirs (unless
// -bench is given, whose -run '^$' runs none on purpose), -bench a
// benchmark and -fuzz a fuzz target.
func checkGoTest(root string, flags map[string]string, patterns []string) (string, error) {
	dirs, err := goPackages(root, patterns, flags["tags"])
	if err != nil {
		return "", err
	}
	result := fmt.Sprintf("checked: %d packages", len(dirs))
	checks := []struct {
		flag     string
		prefixes []string
		optional bool
	}{
		{"run", []string{"Test", "Example", "Fuzz"}, flags["bench"] != ""},
		{"bench", []string{"Benchmark"}, false},
		{"fuzz", []string{"Fuzz"}, false},
	}
	var names []string
	for _, c := range checks {
		pattern, ok := flags[c.flag]
		if !ok {
			continue
		}
		if names == nil {
			if names, err = testFuncs(dirs, flags["tags"]); err != nil {
				return "", err
			}
		}
		top, _, _ := strings.Cut(pattern, "/") // a subtest's pattern follows the first /
		re, err := regexp.Compile(top)
		if err != nil {
			return "", fmt.Errorf("-%s %q: %v", c.flag, pattern, err)
		}
		var matched []string
		for _, n := range names {
			if slices.ContainsFunc(c.prefixes, func(p string) bool { return isTestFunc(n, p) }) && re.MatchString(n) {
				matched = append(matched, n)
			}
		}
		if exact, ok := exactNames(top); ok && !c.optional {
			// A pattern that lists names must name tests that exist: a
			// renamed test would otherwise leave the rest to match.
			for _, n := range exact {
				if !slices.Contains(matched, n) {
					return "", fmt.Errorf("-%s %q names %s, which is no %s in %s", c.flag, pattern, n, strings.Join(c.prefixes, ", "), strings.Join(patterns, " "))
				}
			}
		}
		switch {
		case len(matched) == 0 && !c.optional:
			return "", fmt.Errorf("-%s %q matches no %s in %s", c.flag, pattern, strings.Join(c.prefixes, ", "), strings.Join(patterns, " "))
		case len(matched) > 3:
			matched = append(matched[:3], "…")
		}
		result += fmt.Sprintf("; -%s %q matches %v", c.flag, pattern, matched)
	}
	return result + "; not run", nil
}

// testFuncs returns the names of the top-level functions of the test
// files of the packages in dirs, under the build tags.
func testFuncs(dirs []string, tags string) ([]string, error) {
	ctx := build.Default
	ctx.CgoEnabled = true
	ctx.BuildTags = strings.FieldsFunc(tags, func(r rune) bool { return r == ',' || r == ' ' })
	fset := token.NewFileSet()
	var names []string
	for _, dir := range dirs {
		pkg, err := ctx.ImportDir(dir, 0)
		if err != nil {
			return nil, err
		}
		for _, f := range append(pkg.TestGoFiles, pkg.XTestGoFiles...) {
			file, err := parser.ParseFile(fset, filepath.Join(dir, f), nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, err
			}
			for _, d := range file.Decls {
				if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil {
					names = append(names, fn.Name.Name)
				}
			}
		}
	}
	return names, nil
}

// isTestFunc reports whether name is a prefix function as go test finds
// them: TestX, Test_x or Test, but not Testx.
func isTestFunc(name, prefix string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return false
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return rest == "" || !unicode.IsLower(r)
}

// exactNames returns the names an anchored pattern of literals and
// alternations matches, as docs name the tests to run (^TestA$,
// ^(TestA|TestB)$, ^TestX(A|B)$), and false for any other pattern.
func exactNames(pattern string) ([]string, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, false
	}
	re = re.Simplify()
	if re.Op != syntax.OpConcat || len(re.Sub) < 3 ||
		re.Sub[0].Op != syntax.OpBeginText || re.Sub[len(re.Sub)-1].Op != syntax.OpEndText {
		return nil, false
	}
	return literalStrings(&syntax.Regexp{Op: syntax.OpConcat, Sub: re.Sub[1 : len(re.Sub)-1]})
}

// literalStrings returns every string re matches, if re is literals,
// concatenations, alternations, groups and ? of a few names at most.
func literalStrings(re *syntax.Regexp) ([]string, bool) {
	const most = 64
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return nil, false
		}
		return []string{string(re.Rune)}, true
	case syntax.OpEmptyMatch:
		return []string{""}, true
	case syntax.OpCharClass: // the parser's form of A|B
		var out []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if out = append(out, string(r)); len(out) > most {
					return nil, false
				}
			}
		}
		return out, true
	case syntax.OpCapture:
		return literalStrings(re.Sub[0])
	case syntax.OpQuest:
		sub, ok := literalStrings(re.Sub[0])
		return append([]string{""}, sub...), ok
	case syntax.OpAlternate:
		var out []string
		for _, s := range re.Sub {
			sub, ok := literalStrings(s)
			if !ok || len(out)+len(sub) > most {
				return nil, false
			}
			out = append(out, sub...)
		}
		return out, true
	case syntax.OpConcat:
		out := []string{""}
		for _, s := range re.Sub {
			sub, ok := literalStrings(s)
			if !ok || len(out)*len(sub) > most {
				return nil, false
			}
			var next []string
			for _, a := range out {
				for _, b := range sub {
					next = append(next, a+b)
				}
			}
			out = next
		}
		return out, true
	}
	return nil, false
}

func TestExactNames(t *testing.T) {
	tests := []struct {
		pattern string
		want    []string // nil: not a list of names
	}{
		{"^TestA$", []string{"TestA"}},
		{"^(TestA|TestB)$", []string{"TestA", "TestB"}},
		{"^TestEquivalence(With|Without)BatchNorm$", []string{"TestEquivalenceWithBatchNorm", "TestEquivalenceWithoutBatchNorm"}},
		{"^BenchmarkStep(No)?Recording$", []string{"BenchmarkStepRecording", "BenchmarkStepNoRecording"}},
		{"^TestZBH1", nil},
		{"TestA", nil},
		{"^Test.*$", nil},
		{"^(?i)testa$", nil},
	}
	for _, tc := range tests {
		got, ok := exactNames(tc.pattern)
		slices.Sort(got)
		slices.Sort(tc.want)
		if ok != (tc.want != nil) || !slices.Equal(got, tc.want) {
			t.Errorf("%q: got %q, %v; want %q", tc.pattern, got, ok, tc.want)
		}
	}
}
