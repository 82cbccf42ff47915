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
	as, scale := nnlsScaleColumns(a, rows, cols)
	st := newNNLSState(as, rows, cols, b)
	st.gradient()
	for iter := 0; ; iter++ {
		if iter > 3*cols+10 {
			return nil, 0, errNNLSIterations
		}
		t := st.entering()
		if t < 0 {
			break
		}
		st.free[t] = true
		if !solveFree(as, rows, cols, b, st.free, st.s) {
			// Column t adds nothing the free columns do not span.
			st.free[t] = false
			st.excluded[t] = true
			continue
		}
		if err := st.restoreFeasibility(); err != nil {
			return nil, 0, err
		}
		// New columns may become useful once others moved.
		clear(st.excluded)
		st.gradient()
	}
	st.gradient()
	x, resid = st.solution(scale)
	return x, resid, nil
}

// nnlsScaleColumns returns a copy of the row-major rows×cols matrix a
// with each nonzero column divided by its norm, and the norms.
func nnlsScaleColumns(a []float64, rows, cols int) (as, scale []float64) {
	scale = make([]float64, cols)
	as = make([]float64, len(a))
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
	return as, scale
}

// nnlsTolerance returns tol, the bound on the gradient entries and step
// sizes nnls treats as zero, for a rows×cols matrix of unit columns and
// the right-hand side b: round-off in Aᵀr is of order eps·rows·‖A‖·‖b‖.
func nnlsTolerance(b []float64, rows, cols int) float64 {
	var bnorm float64
	for _, v := range b {
		bnorm = math.Max(bnorm, math.Abs(v))
	}
	return 10 * 2.2e-16 * float64(max(rows, cols)) * math.Max(bnorm, 1) * math.Sqrt(float64(rows))
}

// nnlsState is the working state of one nnls solve on the scaled matrix.
type nnlsState struct {
	as         []float64 // A with unit columns, row-major
	rows, cols int
	b          []float64
	tol        float64 // see nnlsTolerance

	z        []float64 // the current iterate, scaled
	free     []bool    // the passive set P
	excluded []bool    // columns found dependent on the free ones
	w        []float64 // the gradient Aᵀr
	r        []float64 // the residual b − A·z
	s        []float64 // the least-squares solution over P
}

// newNNLSState returns the state of a solve starting from z = 0 with
// every column at its bound.
func newNNLSState(as []float64, rows, cols int, b []float64) *nnlsState {
	return &nnlsState{
		as: as, rows: rows, cols: cols, b: b,
		tol:      nnlsTolerance(b, rows, cols),
		z:        make([]float64, cols),
		free:     make([]bool, cols),
		excluded: make([]bool, cols),
		w:        make([]float64, cols),
		r:        make([]float64, rows),
		s:        make([]float64, cols),
	}
}

// gradient sets the residual r = b − A·z and the gradient w = Aᵀr
// (Lawson and Hanson, step 2).
func (st *nnlsState) gradient() {
	as, rows, cols, b, z, r, w := st.as, st.rows, st.cols, st.b, st.z, st.r, st.w
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

// entering returns the column to free next: the bound, not excluded
// column of largest gradient entry above tol, or -1 when none is, which
// ends the solve (Lawson and Hanson, steps 3 and 4).
func (st *nnlsState) entering() int {
	t := -1
	for j := range st.cols {
		if !st.free[j] && !st.excluded[j] && st.w[j] > st.tol && (t < 0 || st.w[j] > st.w[t]) {
			t = j
		}
	}
	return t
}

// restoreFeasibility is the inner loop (Lawson and Hanson, steps 7 to
// 11, back to 6): while the solution s over the free columns has an
// entry ≤ 0, it moves z towards s as far as z stays feasible, returns
// the columns that reach 0 to their bound and solves again; then it
// takes z = s.
func (st *nnlsState) restoreFeasibility() error {
	for inner := 0; ; inner++ {
		if inner > 3*st.cols+10 {
			return errNNLSIterations
		}
		alpha, feasible := st.maxStep()
		if feasible {
			copy(st.z, st.s)
			return nil
		}
		st.moveTowards(alpha)
		if !solveFree(st.as, st.rows, st.cols, st.b, st.free, st.s) {
			// Dropping columns cannot lose rank; a failure here
			// is round-off.
			return fmt.Errorf("nnls: singular subproblem")
		}
	}
}

// maxStep reports whether s is feasible (every free entry > 0) and,
// when not, the largest step alpha from z towards s that keeps z ≥ 0
// (Lawson and Hanson, steps 7 to 9).
func (st *nnlsState) maxStep() (alpha float64, feasible bool) {
	z, s := st.z, st.s
	feasible = true
	alpha = math.Inf(1)
	for j := range st.cols {
		if st.free[j] && s[j] <= 0 {
			feasible = false
			if d := z[j] - s[j]; d > 0 {
				alpha = math.Min(alpha, z[j]/d)
			} else {
				alpha = 0
			}
		}
	}
	return alpha, feasible
}

// moveTowards sets z = z + alpha·(s − z) over the free columns and
// returns those that fall to tol or below to their bound, at 0 (Lawson
// and Hanson, steps 10 and 11).
func (st *nnlsState) moveTowards(alpha float64) {
	z, s := st.z, st.s
	for j := range st.cols {
		if st.free[j] {
			z[j] += alpha * (s[j] - z[j])
			if z[j] <= st.tol {
				z[j] = 0
				st.free[j] = false
			}
		}
	}
}

// solution returns the unscaled solution x and the residual norm
// ‖A·x − b‖₂ of the last gradient call.
func (st *nnlsState) solution(scale []float64) (x []float64, resid float64) {
	x = make([]float64, st.cols)
	for j := range st.cols {
		if scale[j] > 0 {
			x[j] = st.z[j] / scale[j]
		}
	}
	for _, v := range st.r {
		resid += v * v
	}
	return x, math.Sqrt(resid)
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
