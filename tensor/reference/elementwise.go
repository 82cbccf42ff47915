package reference

import "fmt"

// Scale returns alpha·x.
func Scale(x []float64, alpha float64) []float64 {
	y := make([]float64, len(x))
	for i := range x {
		y[i] = alpha * x[i]
	}
	return y
}

// Add returns a + b.
func Add(a, b []float64) []float64 {
	lensAgree("add", len(a), len(b))
	y := make([]float64, len(a))
	for i := range a {
		y[i] = a[i] + b[i]
	}
	return y
}

// Axpy returns y + alpha·x, leaving y unchanged.
func Axpy(alpha float64, x, y []float64) []float64 {
	lensAgree("axpy", len(x), len(y))
	out := make([]float64, len(y))
	for i := range y {
		out[i] = y[i] + alpha*x[i]
	}
	return out
}

// lensAgree panics unless two operands have as many elements.
func lensAgree(op string, a, b int) {
	if a != b {
		panic(fmt.Sprintf("reference: %s: %d elements against %d", op, a, b))
	}
}
