package reference

import (
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

func TestDropoutBackward(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 1))
	key := tensor.DropoutKey{Seed: 7, Step: 3, Layer: 2, Sample: 5}
	tests := []struct {
		name string
		n    int
		row  int
		p    float32
	}{
		{"half", 3, 20, 0.5},
		{"light", 2, 30, 0.1},
		{"none", 2, 5, 0},
		{"all", 2, 5, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := uniform(rng, tc.n*tc.row, -(1), 1)
			r := uniform(rng, len(x), -(1), 1)
			got := DropoutBackward(r, tc.n, tc.p, key)
			want := numericGrad(func(x []float64) float64 {
				return dot(DropoutForward(x, tc.n, tc.p, key), r)
			}, x, centralDiffStep)
			closeTo(t, "dx", got, want, centralDiffRTol, centralDiffATol)
		})
	}
}

func TestDropoutForwardMask(t *testing.T) {
	key := tensor.DropoutKey{Seed: 1, Step: 2, Layer: 3, Sample: 4}
	const n, row, p = 3, 50, 0.3
	x := make([]float64, n*row)
	for i := range x {
		x[i] = float64(i + 1)
	}
	y := DropoutForward(x, n, p, key)
	kept := 0
	for i := range y {
		keep := tensor.DropoutKeep(key, key.Sample+i/row, i%row, p)
		want := 0.0
		if keep {
			want = x[i] / (1 - float64(float32(p)))
			kept++
		}
		if y[i] != want {
			t.Fatalf("y[%d]: got %v, want %v", i, y[i], want)
		}
	}
	if kept == 0 || kept == len(y) {
		t.Errorf("kept %d of %d elements at p = %v", kept, len(y), p)
	}
}
