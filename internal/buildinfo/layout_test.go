package buildinfo

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The repository's root and its table of packages, from this package's
// directory.
const (
	repoRoot  = "../.."
	layoutDoc = "../../docs/layout.md"
)

// layoutRows returns the package paths of docs/layout.md's table, the
// first cell of each row of the first table, in order. A first cell must
// be one path in backquotes.
func layoutRows(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(layoutDoc)
	if err != nil {
		t.Fatal(err)
	}
	cell := regexp.MustCompile("^`([a-z0-9_./-]+)`$")
	var rows []string
	inTable := false
	for line := range strings.Lines(string(doc)) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break // the first table ended
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		first := strings.TrimSpace(cells[0])
		if !inTable { // the header row
			inTable = true
			continue
		}
		if strings.Trim(first, "-: ") == "" { // the separator row
			continue
		}
		m := cell.FindStringSubmatch(first)
		if m == nil {
			t.Errorf("%s: row %q: the first cell is not one package path in backquotes", layoutDoc, line)
			continue
		}
		rows = append(rows, m[1])
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no table of packages", layoutDoc)
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

// TestLayoutDocumented keeps docs/layout.md in step with the code: every
// directory of Go files (build-tagged ones included) has a row of its
// own, and every row names such a directory, once.
func TestLayoutDocumented(t *testing.T) {
	rows := layoutRows(t)
	dirs := packageDirs(t, repoRoot)
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r] {
			t.Errorf("%s: package %s has more than one row", layoutDoc, r)
		}
		seen[r] = true
		if !slices.Contains(dirs, r) {
			t.Errorf("%s: package %s has a row but no Go files", layoutDoc, r)
		}
	}
	for _, d := range dirs {
		if !seen[d] {
			t.Errorf("%s: package %s has no row: add it to the table with what it owns", layoutDoc, d)
		}
	}
}
