package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestRunWithoutModels runs the command on one small square and checks
// its header and table.
func TestRunWithoutModels(t *testing.T) {
	for _, markdown := range []bool{false, true} {
		var out bytes.Buffer
		o := options{threads: 2, reps: 3, minTime: time.Millisecond, top: 2, squares: []int{48}, markdown: markdown}
		if err := run(&out, new(bytes.Buffer), o); err != nil {
			t.Fatal(err)
		}
		s := out.String()
		for _, want := range []string{"CPU:", "go:", "GEMM kernel", "2 threads", "square 48", "48×48×48"} {
			if !strings.Contains(s, want) {
				t.Errorf("markdown %v: output lacks %q:\n%s", markdown, want, s)
			}
		}
		if markdown != strings.Contains(s, "| square 48") {
			t.Errorf("markdown %v: table rows:\n%s", markdown, s)
		}
	}
}
