package modeltest

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/models"
)

// testStateDict checks the state_dict at the reference configuration:
// names unique, Params and Buffers in StateDict's order, the counts, the
// golden file and the slices of c.Names.
func testStateDict(t *testing.T, c *Case) {
	m, err := models.Describe(c.Model, models.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var params, buffers, entries, fromEntries []string
	for _, p := range models.Params(m.Net) {
		params = append(params, p.Name)
	}
	for _, b := range models.Buffers(m.Net) {
		buffers = append(buffers, b.Name)
	}
	sd := models.StateDict(m.Net)
	for _, e := range sd {
		entries = append(entries, e.Name)
		if e.Param != nil {
			fromEntries = append(fromEntries, e.Name)
		}
	}
	for _, e := range sd {
		if e.Buffer != nil {
			fromEntries = append(fromEntries, e.Name)
		}
	}
	n := c.Names
	if len(params) != n.Params || len(buffers) != n.Buffers {
		t.Errorf("got %d parameters and %d buffers, want %d and %d", len(params), len(buffers), n.Params, n.Buffers)
	}
	// The state_dict interleaves each module's parameters and buffers;
	// taken apart, they are Params and Buffers in order.
	if !slices.Equal(fromEntries, slices.Concat(params, buffers)) {
		t.Errorf("state_dict's parameters and buffers are not Params and Buffers in order")
	}
	seen := map[string]bool{}
	for _, name := range entries {
		if name == "" || seen[name] {
			t.Errorf("state_dict name %q: empty or not unique", name)
		}
		seen[name] = true
	}
	if n.Golden != "" {
		checkGolden(t, n.Golden, sd)
	}
	lists := map[List][]string{ParamNames: params, BufferNames: buffers, StateDictNames: entries}
	for _, s := range n.Slices {
		t.Run(s.What, func(t *testing.T) {
			got := pick(lists[s.Of], s)
			if !slices.Equal(got, s.Want) {
				t.Errorf("got  %q\nwant %q", got, s.Want)
			}
		})
	}
}

// pick returns the names of list that s selects.
func pick(list []string, s Slice) []string {
	if s.Under != "" {
		var out []string
		for _, name := range list {
			if strings.HasPrefix(name, s.Under) {
				out = append(out, name)
			}
		}
		return out
	}
	at := s.At
	if at < 0 {
		at += len(list)
	}
	if at < 0 || at+len(s.Want) > len(list) {
		return nil
	}
	return list[at : at+len(s.Want)]
}

// checkGolden compares the state_dict with the one the reference
// library's own network has (torchvision's, Hugging Face's), entry for
// entry: names, order and shapes.
func checkGolden(t *testing.T, path string, sd []models.StateEntry) {
	t.Helper()
	want := readGolden(t, path)
	var got []string
	for _, e := range sd {
		got = append(got, fmt.Sprintf("%s %s", e.Name, pyShape(e.Shape)))
	}
	for i := 0; i < min(len(got), len(want)); i++ {
		if got[i] != want[i] {
			t.Fatalf("entry %d: got %q, want %q (%s)", i, got[i], want[i], path)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d (%s); first difference at %d", len(got), len(want), path, min(len(got), len(want)))
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
