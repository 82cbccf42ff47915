package reference

import "fmt"

// Linear returns y = x·wᵀ + bias, torch's nn.Linear: x [n, in], w [out,
// in], bias [out] or nil, y [n, out].
func Linear(x []float64, n, in int, w []float64, out int, bias []float64) []float64 {
	linearCheck("linear", "x", x, n*in, "w", w, out*in)
	if bias != nil && len(bias) != out {
		panic(fmt.Sprintf("reference: linear: bias of %d values, want %d", len(bias), out))
	}
	y := make([]float64, n*out)
	for i := 0; i < n; i++ {
		for j := 0; j < out; j++ {
			s := 0.0
			if bias != nil {
				s = bias[j]
			}
			for l := 0; l < in; l++ {
				s += x[i*in+l] * w[j*in+l]
			}
			y[i*out+j] = s
		}
	}
	return y
}

// LinearBackwardData returns dx = dy·w, the gradient of Linear with
// respect to x: dy [n, out], w [out, in], dx [n, in].
func LinearBackwardData(dy []float64, n, out int, w []float64, in int) []float64 {
	linearCheck("linear backward data", "dy", dy, n*out, "w", w, out*in)
	dx := make([]float64, n*in)
	for i := 0; i < n; i++ {
		for l := 0; l < in; l++ {
			s := 0.0
			for j := 0; j < out; j++ {
				s += dy[i*out+j] * w[j*in+l]
			}
			dx[i*in+l] = s
		}
	}
	return dx
}

// LinearBackwardParams returns the gradients of Linear with respect to
// its weights, dw = dyᵀ·x [out, in], and bias, the column sums of dy [out]:
// x [n, in], dy [n, out]. Backends accumulate them; this returns them
// alone.
func LinearBackwardParams(x []float64, n, in int, dy []float64, out int) (dw, dbias []float64) {
	linearCheck("linear backward params", "x", x, n*in, "dy", dy, n*out)
	dw = make([]float64, out*in)
	dbias = make([]float64, out)
	for i := 0; i < n; i++ {
		for j := 0; j < out; j++ {
			g := dy[i*out+j]
			dbias[j] += g
			for l := 0; l < in; l++ {
				dw[j*in+l] += g * x[i*in+l]
			}
		}
	}
	return dw, dbias
}

// linearCheck panics unless a holds na values and b nb.
func linearCheck(op, nameA string, a []float64, na int, nameB string, b []float64, nb int) {
	if len(a) != na || len(b) != nb {
		panic(fmt.Sprintf("reference: %s: %s of %d values, want %d; %s of %d values, want %d",
			op, nameA, len(a), na, nameB, len(b), nb))
	}
}
