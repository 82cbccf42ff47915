package reference

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Tolerances of a float64 backward against central differences of its
// forward with step centralDiffStep: the truncation error is O(h²) ≈ 1e-8
// times the third derivative, the round-off O(ε/h) ≈ 1e-12 times the
// function's size, so 1e-6 leaves room for both.
const (
	centralDiffStep = 1e-4
	centralDiffRTol = 1e-6
	centralDiffATol = 1e-7
)

func TestSoftmaxCrossEntropyGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 1))
	tests := []struct {
		name       string
		n, classes int
		magnitude  float64
		scale      float64
	}{
		{"one class", 3, 1, 1, 1},
		{"two classes", 2, 2, 1, 0.5},
		{"ten classes", 5, 10, 3, 0.2},
		{"large logits", 2, 10, 80, 1},
		{"batch one", 1, 7, 2, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			logits := uniform(rng, tc.n*tc.classes, -(tc.magnitude), tc.magnitude)
			labels := make([]int32, tc.n)
			for i := range labels {
				labels[i] = int32(rng.IntN(tc.classes))
			}
			_, got := SoftmaxCrossEntropy(logits, tc.n, tc.classes, labels, tc.scale)
			want := numericGrad(func(x []float64) float64 {
				l, _ := SoftmaxCrossEntropy(x, tc.n, tc.classes, labels, tc.scale)
				return l
			}, logits, centralDiffStep)
			closeTo(t, "dlogits", got, want, centralDiffRTol, centralDiffATol)
		})
	}
}

func TestSoftmaxCrossEntropyValues(t *testing.T) {
	tests := []struct {
		name   string
		logits []float64
		labels []int32
		scale  float64
		want   float64
	}{
		{"uniform", []float64{0, 0, 0, 0}, []int32{2}, 1, math.Log(4)},
		{"one class", []float64{5, -3}, []int32{0, 0}, 1, 0},
		{"mean of two rows", []float64{0, 0, 1000, 0}, []int32{0, 1}, 0.5, 0.5 * (math.Log(2) + 1000)},
		{"overflowing logits", []float64{1000, 1000}, []int32{1}, 1, math.Log(2)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := len(tc.labels)
			got, _ := SoftmaxCrossEntropy(tc.logits, n, len(tc.logits)/n, tc.labels, tc.scale)
			if math.Abs(got-tc.want) > 1e-12*max(1, math.Abs(tc.want)) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func ExampleSoftmaxCrossEntropy() {
	loss, d := SoftmaxCrossEntropy([]float64{0, 0}, 1, 2, []int32{1}, 1)
	fmt.Printf("%.4f %.2f\n", loss, d)
	// Output: 0.6931 [0.50 -0.50]
}
