package profiler

import (
	"slices"
	"testing"
)

func TestMedian(t *testing.T) {
	floats := []struct {
		name string
		in   []float64
		want float64
	}{
		{"none", nil, 0},
		{"one", []float64{3}, 3},
		{"odd", []float64{5, 1, 3}, 3},
		{"even", []float64{4, 1, 3, 2}, 2.5},
	}
	for _, c := range floats {
		t.Run(c.name, func(t *testing.T) {
			in := slices.Clone(c.in)
			if got := Median(in); got != c.want {
				t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
			}
			if !slices.Equal(in, c.in) {
				t.Errorf("Median reordered its input: %v, was %v", in, c.in)
			}
		})
	}
	if got := Median([]int64{7, 1, 4, 2}); got != 3 {
		t.Errorf("Median of int64 {7, 1, 4, 2} = %d, want 3 (the mean of 2 and 4)", got)
	}
	if got := Median([]int64{1, 2}); got != 1 {
		t.Errorf("Median of int64 {1, 2} = %d, want 1 (1.5 rounded toward zero)", got)
	}
}
