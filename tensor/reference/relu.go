package reference

import "fmt"

// ReLU returns y = max(x, 0). A NaN stays NaN, as torch's relu propagates
// it.
func ReLU(x []float64) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		if v > 0 || v != v {
			y[i] = v
		}
	}
	return y
}

// ReLUBackward returns dx = dy where y > 0 and 0 elsewhere, from the
// forward's output y. Where y is NaN the gradient passes, as torch's
// threshold_backward zeroes it only where y ≤ 0.
func ReLUBackward(y, dy []float64) []float64 {
	if len(y) != len(dy) {
		panic(fmt.Sprintf("reference: relu backward: y of %d values, dy of %d", len(y), len(dy)))
	}
	dx := make([]float64, len(y))
	for i, v := range y {
		if !(v <= 0) {
			dx[i] = dy[i]
		}
	}
	return dx
}
