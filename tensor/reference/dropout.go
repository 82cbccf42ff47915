package reference

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// DropoutForward returns x·keep/(1 − p) for x holding n samples (rows) of
// len(x)/n elements, keep being tensor.DropoutKeep of sample key.Sample +
// i and the element's index within the row. p = 1 gives zeros.
func DropoutForward(x []float64, n int, p float32, key tensor.DropoutKey) []float64 {
	if !(p >= 0 && p <= 1) {
		panic(fmt.Sprintf("reference: dropout: probability %v outside [0, 1]", p))
	}
	if n <= 0 || len(x)%n != 0 {
		panic(fmt.Sprintf("reference: dropout: %d values in %d samples", len(x), n))
	}
	row := len(x) / n
	y := make([]float64, len(x))
	if p == 1 {
		return y
	}
	for i := 0; i < n; i++ {
		for e := 0; e < row; e++ {
			if tensor.DropoutKeep(key, key.Sample+i, e, p) {
				y[i*row+e] = x[i*row+e] / (1 - float64(p))
			}
		}
	}
	return y
}

// DropoutBackward returns dx = dy·keep/(1 − p): dropout is linear and
// diagonal, so its backward applies the forward's mask and scale.
func DropoutBackward(dy []float64, n int, p float32, key tensor.DropoutKey) []float64 {
	return DropoutForward(dy, n, p, key)
}
