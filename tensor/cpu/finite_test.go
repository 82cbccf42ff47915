package cpu

import (
	"math"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// TestFirstNonFiniteOf checks the parallel screen of a set of tensors
// against screening them one after another: the first bad value of the
// first tensor that has one wins wherever the threads' stretches split,
// including several bad values in different stretches and tensors.
func TestFirstNonFiniteOf(t *testing.T) {
	big := finiteGrain * tensor.FiniteChunk
	sizes := []int{5, 3*big + 17, 1030, 2 * big, 1}
	for _, threads := range []int{1, 2, 3} {
		d := New(tensor.Options{Threads: threads})
		ts := make([]*tensor.Tensor, len(sizes))
		vals := make([][]float32, len(sizes))
		for k, n := range sizes {
			ts[k] = d.Alloc(tensor.Gradients, n)
			vals[k] = Data(ts[k])
		}
		if k, i := d.FirstNonFiniteOf(ts); k != -1 || i != -1 {
			t.Errorf("threads %d, all zero: got %d, %d", threads, k, i)
		}
		type at struct{ k, i int }
		for _, bad := range [][]at{
			{{1, 3*big + 16}}, {{0, 0}}, {{4, 0}}, {{3, big + 1}, {1, big + 5}},
			{{1, 2*big + 3}, {1, 7}}, {{2, 1029}, {3, 0}}, {{3, 2*big - 1}},
		} {
			for _, b := range bad {
				vals[b.k][b.i] = float32(math.NaN())
			}
			wantK, wantI := -1, -1
			for k := range vals {
				if i := tensor.FirstNonFiniteIn(vals[k]); i >= 0 {
					wantK, wantI = k, i
					break
				}
			}
			if k, i := d.FirstNonFiniteOf(ts); k != wantK || i != wantI {
				t.Errorf("threads %d, bad at %v: got tensor %d index %d, want %d, %d", threads, bad, k, i, wantK, wantI)
			}
			if i := tensor.FirstNonFinite(ts[wantK]); i != tensor.FirstNonFiniteIn(vals[wantK]) {
				t.Errorf("threads %d, bad at %v: FirstNonFinite of tensor %d = %d", threads, bad, wantK, i)
			}
			for _, b := range bad {
				vals[b.k][b.i] = 0
			}
		}
		for _, x := range ts {
			x.Release()
		}
		d.Close()
	}
}

// TestEachRun checks that eachRun cuts a run at its parts' bounds, empty
// parts included.
func TestEachRun(t *testing.T) {
	starts := []int{0, 3, 3, 7, 8, 8}
	type piece struct{ k, a, b int }
	var got []piece
	eachRun(starts, 2, 8, func(k, a, b int) { got = append(got, piece{k, a, b}) })
	want := []piece{{0, 2, 3}, {2, 0, 4}, {3, 0, 1}}
	if len(got) != len(want) {
		t.Fatalf("eachRun(%v, 2, 8) gave %v, want %v", starts, got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("eachRun(%v, 2, 8) gave %v, want %v", starts, got, want)
		}
	}
}
