package reference

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestConcatChannelsBackward(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 1))
	tests := []struct {
		name     string
		n        int
		channels []int
		inner    int
	}{
		{"one part", 2, []int{3}, 4},
		{"images", 2, []int{1, 3, 2}, 6},
		{"matrices", 3, []int{2, 5}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srcs := make([][]float64, len(tc.channels))
			var flat []float64
			for k, c := range tc.channels {
				srcs[k] = uniform(rng, tc.n*c*tc.inner, -(1), 1)
				flat = append(flat, srcs[k]...)
			}
			y := ConcatChannels(srcs, tc.n, tc.channels, tc.inner)
			r := uniform(rng, len(y), -(1), 1)
			grads := SplitChannels(r, tc.n, tc.channels, tc.inner)
			// f(srcs) = ⟨concat(srcs), r⟩ as a function of every source
			// value laid end to end.
			want := numericGrad(func(x []float64) float64 {
				parts, off := make([][]float64, len(srcs)), 0
				for k := range srcs {
					parts[k] = x[off : off+len(srcs[k])]
					off += len(srcs[k])
				}
				return dot(ConcatChannels(parts, tc.n, tc.channels, tc.inner), r)
			}, flat, centralDiffStep)
			closeTo(t, "dsrcs", slices.Concat(grads...), want, centralDiffRTol, centralDiffATol)
			back := SplitChannels(y, tc.n, tc.channels, tc.inner)
			for k := range srcs {
				if !slices.Equal(back[k], srcs[k]) {
					t.Errorf("split of the concatenation, part %d: got %v, want %v", k, back[k], srcs[k])
				}
			}
		})
	}
}

func TestConcatChannelsLayout(t *testing.T) {
	// Two samples; part a has one channel of two values, part b two.
	a := []float64{1, 2, 3, 4}
	b := []float64{10, 11, 12, 13, 20, 21, 22, 23}
	got := ConcatChannels([][]float64{a, b}, 2, []int{1, 2}, 2)
	want := []float64{1, 2, 10, 11, 12, 13, 3, 4, 20, 21, 22, 23}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
