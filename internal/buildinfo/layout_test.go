package buildinfo

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The repository's root and the page that describes its packages, from
// this package's directory.
const (
	repoRoot  = "../.."
	layoutDoc = "../../docs/architecture.md"
)

// layoutRows returns the package paths of docs/architecture.md, in
// order: each package is a paragraph that begins with its path, bold and
// in backquotes (**`runner/comm`** — …).
func layoutRows(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(layoutDoc)
	if err != nil {
		t.Fatal(err)
	}
	para := regexp.MustCompile("^\\*\\*`([a-z0-9_./-]+)`\\*\\*")
	var rows []string
	for line := range strings.Lines(string(doc)) {
		if m := para.FindStringSubmatch(line); m != nil {
			rows = append(rows, m[1])
		}
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no paragraph names a package (**`path`** — what it owns)", layoutDoc)
	}
	return rows
}

// packageDirs returns the directories under root that hold Go files, as
// slash-separated paths relative to root, leaving out what the go command
// leaves out of ./...: testdata, directories whose names begin with "."
// or "_", and nested modules.
func packageDirs(t *testing.T, root string) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root {
				if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
					return filepath.SkipDir
				}
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".go") {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			if rel = filepath.ToSlash(rel); !slices.Contains(dirs, rel) {
				dirs = append(dirs, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// TestLayoutDocumented keeps docs/architecture.md in step with the code:
// every directory of Go files (build-tagged ones included) has a
// paragraph of its own, every paragraph names such a directory, once, and
// every package `go list ./...` lists has one.
func TestLayoutDocumented(t *testing.T) {
	rows := layoutRows(t)
	dirs := packageDirs(t, repoRoot)
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r] {
			t.Errorf("%s: package %s has more than one paragraph", layoutDoc, r)
		}
		seen[r] = true
		if !slices.Contains(dirs, r) {
			t.Errorf("%s: package %s has a paragraph but no Go files", layoutDoc, r)
		}
	}
	for _, d := range dirs {
		if !seen[d] {
			t.Errorf("%s: package %s has no paragraph: add one saying what it owns", layoutDoc, d)
		}
	}
	for _, p := range listedPackages(t) {
		if !seen[p] {
			t.Errorf("%s: go list ./... lists %s, which has no paragraph", layoutDoc, p)
		}
	}
}

// listedPackages returns the packages `go list ./...` lists for this
// build, as paths relative to the module ("." for its root).
func listedPackages(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.Dir}}", "./...")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, filepath.ToSlash(rel))
	}
	if len(pkgs) == 0 {
		t.Fatal("go list ./... listed no package")
	}
	return pkgs
}
