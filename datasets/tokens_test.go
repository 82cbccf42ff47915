package datasets

import (
	"slices"
	"testing"
)

func TestSyntheticTokensDeterministic(t *testing.T) {
	tests := []struct {
		name       string
		seq, vocab int
	}{
		{"one token", 1, 7},
		{"gpt2-like", 16, 50257},
		{"vocab of one", 5, 1},
		{"odd", 11, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := SyntheticTokens(tc.seq, tc.vocab, 100, 7)
			if got := a.Shape(); len(got) != 1 || got[0] != tc.seq || a.LabelsPerSample() != tc.seq || a.Classes() != tc.vocab || a.Len() != 100 {
				t.Fatalf("shape %v, %d labels a sample, %d classes, %d samples; want [%d], %d, %d, 100",
					got, a.LabelsPerSample(), a.Classes(), a.Len(), tc.seq, tc.seq, tc.vocab)
			}
			indices := []int{99, 3, 42, 3, 0}
			xa, la := readAll(t, a, indices)
			xb, lb := readAll(t, SyntheticTokens(tc.seq, tc.vocab, 100, 7), indices)
			if !slices.Equal(xa, xb) || !slices.Equal(la, lb) {
				t.Fatal("two sets with the same seed read different data")
			}
			s := tc.seq
			for i, idx := range indices {
				x1, l1 := readAll(t, a, []int{idx})
				if !slices.Equal(x1, xa[i*s:(i+1)*s]) || !slices.Equal(l1, la[i*s:(i+1)*s]) {
					t.Fatalf("sample %d read alone differs from sample %d read in a batch", idx, i)
				}
			}
			// Next-token prediction: a position's label is the next
			// position's token.
			for i := range indices {
				for p := 0; p+1 < s; p++ {
					if got, want := xa[i*s+p+1], float32(la[i*s+p]); got != want {
						t.Fatalf("sample %d position %d: token %v, want the label before it, %v", indices[i], p+1, got, want)
					}
				}
			}
			for k, v := range xa {
				if v != float32(int(v)) || v < 0 || int(v) >= tc.vocab {
					t.Fatalf("value %d is %v, not a token id of %d", k, v, tc.vocab)
				}
			}
			for k, l := range la {
				if l < 0 || int(l) >= tc.vocab {
					t.Fatalf("label %d is %d, not a token id of %d", k, l, tc.vocab)
				}
			}
			if tc.vocab > 1 {
				xc, _ := readAll(t, SyntheticTokens(tc.seq, tc.vocab, 100, 8), indices)
				if slices.Equal(xa, xc) {
					t.Fatal("seeds 7 and 8 give the same data")
				}
			}
		})
	}
}

// TestSyntheticTokensUniform checks that every id is about as frequent
// as every other.
func TestSyntheticTokensUniform(t *testing.T) {
	const seq, vocab, samples = 16, 8, 1000
	ds := SyntheticTokens(seq, vocab, samples, 3)
	_, labels := readAll(t, ds, span(0, samples))
	var counts [vocab]int
	for _, l := range labels {
		counts[l]++
	}
	// A count is binomial: mean n/V, standard deviation √(n·(1/V)·(1−1/V))
	// ≈ 42 for n = 16000; 6σ leaves a correct generator no chance to fail.
	n := float64(len(labels))
	mean, sd := n/vocab, 42.0
	for id, c := range counts {
		if d := float64(c) - mean; d > 6*sd || d < -6*sd {
			t.Errorf("id %d: %d times in %v, want %v ± %v", id, c, n, mean, 6*sd)
		}
	}
}

// TestSyntheticTokensValues pins the ids of a seed, so that the data of
// a recorded run stays the data a later build trains on.
func TestSyntheticTokensValues(t *testing.T) {
	x, labels := readAll(t, SyntheticTokens(4, 10, 3, 1), []int{0, 2})
	wantX := []float32{2, 2, 2, 0, 6, 4, 8, 9}
	wantLabels := []int32{2, 2, 0, 9, 4, 8, 9, 7}
	if !slices.Equal(x, wantX) || !slices.Equal(labels, wantLabels) {
		t.Errorf("got values %v, labels %v; want %v, %v", x, labels, wantX, wantLabels)
	}
}

func TestSyntheticTokensReadErrors(t *testing.T) {
	ds := SyntheticTokens(3, 5, 10, 0)
	tests := []struct {
		name    string
		indices []int
		x       int
		labels  int
	}{
		{"index past the end", []int{10}, 3, 3},
		{"negative index", []int{-1}, 3, 3},
		{"short x", []int{0, 1}, 5, 6},
		{"short labels", []int{0, 1}, 6, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := ds.Read(tc.indices, make([]float32, tc.x), make([]int32, tc.labels)); err == nil {
				t.Fatal("got no error")
			}
		})
	}
}

func TestSyntheticTokensPanics(t *testing.T) {
	tests := []struct {
		name                string
		seq, vocab, samples int
	}{
		{"no tokens", 0, 5, 2},
		{"no vocabulary", 3, 0, 2},
		{"vocabulary beyond float32", 3, MaxVocab + 1, 2},
		{"no samples", 3, 5, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			SyntheticTokens(tc.seq, tc.vocab, tc.samples, 0)
		})
	}
}
