package predictor

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// errNNLSIterations reports that the active-set loop did not settle,
// which Lawson and Hanson prove cannot happen in exact arithmetic; it
// guards against round-off cycling.
var errNNLSIterations = errors.New("nnls: no convergence")

// nnls solves min ‖A·x − b‖₂ subject to x ≥ 0 for a rows×cols matrix A
// given row-major in a, by the active-set method of C. L. Lawson and R. J.
// Hanson, "Solving Least Squares Problems" (1974), chapter 23, algorithm
// NNLS. It returns x and the residual norm ‖A·x − b‖₂.
//
// Columns are scaled to unit norm first (a positive scaling keeps x ≥ 0
// the same constraint), so that columns of very different magnitude —
// a constant beside a byte count — are treated alike by the tolerances.
// A column that is zero, or linearly dependent on the columns already
// free, is kept at 0 rather than made free: the algorithm's pivot test
// (Lawson and Hanson, step 6) in the form of a rank check on the
// triangular factor. With proportional columns this picks the one that
// reduces the residual most.
func nnls(a []float64, rows, cols int, b []float64) (x []float64, resid float64, err error) {
	if len(a) != rows*cols || len(b) != rows {
		panic(fmt.Sprintf("predictor: nnls: %d×%d matrix with %d entries and %d right-hand sides", rows, cols, len(a), len(b)))
	}
	scale := make([]float64, cols)
	as := make([]float64, len(a))
	copy(as, a)
	for j := range cols {
		var s float64
		for i := range rows {
			s += a[i*cols+j] * a[i*cols+j]
		}
		s = math.Sqrt(s)
		scale[j] = s
		if s > 0 {
			for i := range rows {
				as[i*cols+j] /= s
			}
		}
	}
	var bnorm float64
	for _, v := range b {
		bnorm = math.Max(bnorm, math.Abs(v))
	}
	// tol bounds the gradient entries and step sizes treated as zero:
	// round-off in Aᵀr is of order eps·rows·‖A‖·‖b‖ with unit columns.
	tol := 10 * 2.2e-16 * float64(max(rows, cols)) * math.Max(bnorm, 1) * math.Sqrt(float64(rows))

	z := make([]float64, cols) // the current iterate, scaled
	free := make([]bool, cols) // the passive set P
	excluded := make([]bool, cols)
	w := make([]float64, cols)
	r := make([]float64, rows)
	s := make([]float64, cols)

	gradient := func() {
		for i := range rows {
			v := b[i]
			for j := range cols {
				v -= as[i*cols+j] * z[j]
			}
			r[i] = v
		}
		for j := range cols {
			var v float64
			for i := range rows {
				v += as[i*cols+j] * r[i]
			}
			w[j] = v
		}
	}

	gradient()
	for iter := 0; ; iter++ {
		if iter > 3*cols+10 {
			return nil, 0, errNNLSIterations
		}
		t := -1
		for j := range cols {
			if !free[j] && !excluded[j] && w[j] > tol && (t < 0 || w[j] > w[t]) {
				t = j
			}
		}
		if t < 0 {
			break
		}
		free[t] = true
		if !solveFree(as, rows, cols, b, free, s) {
			// Column t adds nothing the free columns do not span.
			free[t] = false
			excluded[t] = true
			continue
		}
		for inner := 0; ; inner++ {
			if inner > 3*cols+10 {
				return nil, 0, errNNLSIterations
			}
			feasible := true
			alpha := math.Inf(1)
			for j := range cols {
				if free[j] && s[j] <= 0 {
					feasible = false
					if d := z[j] - s[j]; d > 0 {
						alpha = math.Min(alpha, z[j]/d)
					} else {
						alpha = 0
					}
				}
			}
			if feasible {
				copy(z, s)
				break
			}
			for j := range cols {
				if free[j] {
					z[j] += alpha * (s[j] - z[j])
					if z[j] <= tol {
						z[j] = 0
						free[j] = false
					}
				}
			}
			if !solveFree(as, rows, cols, b, free, s) {
				// Dropping columns cannot lose rank; a failure here
				// is round-off.
				return nil, 0, fmt.Errorf("nnls: singular subproblem")
			}
		}
		// New columns may become useful once others moved.
		clear(excluded)
		gradient()
	}
	gradient()
	x = make([]float64, cols)
	for j := range cols {
		if scale[j] > 0 {
			x[j] = z[j] / scale[j]
		}
	}
	for _, v := range r {
		resid += v * v
	}
	return x, math.Sqrt(resid), nil
}

// solveFree sets s to the least-squares solution of A_P·s_P = b over the
// free columns P, with s = 0 elsewhere. It reports false when the free
// columns are (numerically) linearly dependent.
func solveFree(as []float64, rows, cols int, b []float64, free []bool, s []float64) bool {
	idx := make([]int, 0, cols)
	for j := range cols {
		if free[j] {
			idx = append(idx, j)
		}
		s[j] = 0
	}
	n := len(idx)
	if n == 0 {
		return true
	}
	if n > rows {
		return false
	}
	sub := mat.NewDense(rows, n, nil)
	for i := range rows {
		for k, j := range idx {
			sub.Set(i, k, as[i*cols+j])
		}
	}
	var qr mat.QR
	qr.Factorize(sub)
	var rf mat.Dense
	qr.RTo(&rf)
	// Columns have unit norm, so a diagonal entry of R is the norm of
	// what a column adds beyond the previous ones.
	for k := range n {
		if math.Abs(rf.At(k, k)) < 1e-10 {
			return false
		}
	}
	var sol mat.VecDense
	if err := qr.SolveVecTo(&sol, false, mat.NewVecDense(rows, append([]float64(nil), b...))); err != nil {
		return false
	}
	for k, j := range idx {
		s[j] = sol.AtVec(k)
	}
	return true
}
