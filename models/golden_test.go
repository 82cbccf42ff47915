package models

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStateDictMatchesTorchvision compares every zoo network's state_dict
// at torchvision's configuration (1000 classes, the default input) with
// the one torchvision's own network has, entry for entry: names, order
// and shapes. The golden files come from scripts/torchvision_statedict.py.
func TestStateDictMatchesTorchvision(t *testing.T) {
	for _, model := range []string{"vgg16bn", "resnet50", "inceptionv3"} {
		t.Run(model, func(t *testing.T) {
			want := readGolden(t, filepath.Join("testdata", "statedict_"+model+".txt"))
			m, err := Describe(model, Config{Classes: 1000})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range StateDict(m.Net) {
				got = append(got, fmt.Sprintf("%s %s", e.Name, pyShape(e.Shape)))
			}
			for i := 0; i < min(len(got), len(want)); i++ {
				if got[i] != want[i] {
					t.Fatalf("entry %d: got %q, want %q (torchvision)", i, got[i], want[i])
				}
			}
			if len(got) != len(want) {
				t.Fatalf("got %d entries, want %d (torchvision); first difference at %d", len(got), len(want), min(len(got), len(want)))
			}
		})
	}
}

// readGolden returns the lines of a golden file without its comments.
func readGolden(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if l := s.Text(); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if len(lines) == 0 {
		t.Fatalf("%s: no entries", path)
	}
	return lines
}

// pyShape formats a shape as the golden files do: [64, 3, 3, 3], [].
func pyShape(s []int) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
