package cpu

import (
	"math"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// TestFirstNonFinite checks the parallel screen against the serial one:
// the first bad value wins wherever the threads' runs split, including
// several bad values in different runs.
func TestFirstNonFinite(t *testing.T) {
	for _, threads := range []int{1, 2, 3} {
		d := New(tensor.Options{Threads: threads})
		n := 3*finiteGrain*tensor.FiniteChunk + 17
		x := d.Alloc(tensor.Gradients, n)
		vals := Data(x)
		if got := d.FirstNonFinite(x); got != -1 {
			t.Errorf("threads %d, all zero: got %d", threads, got)
		}
		for _, bad := range [][]int{{n - 1}, {0}, {finiteGrain*tensor.FiniteChunk + 5, 2*finiteGrain*tensor.FiniteChunk + 1}, {2*finiteGrain*tensor.FiniteChunk + 3, 7}} {
			for _, i := range bad {
				vals[i] = float32(math.Inf(1))
			}
			want := tensor.FirstNonFiniteIn(vals)
			if got := d.FirstNonFinite(x); got != want {
				t.Errorf("threads %d, bad at %v: got %d, want %d", threads, bad, got, want)
			}
			for _, i := range bad {
				vals[i] = 0
			}
		}
		x.Release()
		d.Close()
	}
}
