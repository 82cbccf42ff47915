package predictor

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/pipecast/pipecast/profiler"
)

// fitLine fits t = a + b·x with a, b ≥ 0 to pts. It first reduces the
// points to one typical time at each distinct x (see typical), which
// shrugs off runs slowed by a competing process and weighs every x alike
// however often it was run; then it minimises the relative residuals Σ((a + b·x − t)/t)² over
// those typical times by NNLS. Times t ≤ 0 carry no relative information and
// are skipped. With a single distinct x the line is not determined; it is
// taken through the origin, t = b·x, because time proportional to the
// work is the better guess away from the one size measured.
//
// The line's Points counts the measurements; its RMSE and MaxRelErr are
// the residuals of the typical times it was fitted to.
func fitLine(pts *points) (Line, error) {
	xs, ts := typicalByX(pts)
	if len(ts) == 0 {
		return Line{}, fmt.Errorf("no positive times among %d points", pts.len())
	}
	l := Line{Points: pointsPositive(pts)}
	if len(ts) == 1 || xs[0] == xs[len(xs)-1] {
		if xs[0] > 0 {
			l.Slope = ts[0] / xs[0]
		} else {
			l.Intercept = ts[0]
		}
	} else {
		a := make([]float64, 0, 2*len(ts))
		rhs := make([]float64, len(ts))
		for i, t := range ts {
			a = append(a, 1/t, xs[i]/t)
			rhs[i] = 1
		}
		x, _, err := nnls(a, len(ts), 2, rhs)
		if err != nil {
			return Line{}, err
		}
		l.Intercept, l.Slope = x[0], x[1]
	}
	l.RMSE, l.MaxRelErr = residuals(l, pts)
	return l, nil
}

// residuals returns the root mean square and the largest relative
// residual of l on the typical times at each x of pts.
func residuals(l Line, pts *points) (rmse, maxRel float64) {
	xs, ts := typicalByX(pts)
	if len(ts) == 0 {
		return 0, 0
	}
	var ss float64
	for i, t := range ts {
		e := l.At(xs[i]) - t
		ss += e * e
		maxRel = math.Max(maxRel, math.Abs(e)/t)
	}
	return math.Sqrt(ss / float64(len(ts))), maxRel
}

// typicalByX returns the distinct x of pts with a positive time, in
// increasing order, and the typical positive time at each.
func typicalByX(pts *points) (xs, ts []float64) {
	idx := make([]int, 0, pts.len())
	for i, t := range pts.t {
		if t > 0 {
			idx = append(idx, i)
		}
	}
	sort.Slice(idx, func(i, j int) bool { return pts.x[idx[i]] < pts.x[idx[j]] })
	var run []float64
	for i, k := range idx {
		run = append(run, pts.t[k])
		if i+1 == len(idx) || pts.x[idx[i+1]] != pts.x[k] {
			xs = append(xs, pts.x[k])
			ts = append(ts, typical(run))
			run = run[:0]
		}
	}
	return xs, ts
}

// pointsPositive counts the points with a positive time.
func pointsPositive(pts *points) int {
	n := 0
	for _, t := range pts.t {
		if t > 0 {
			n++
		}
	}
	return n
}

// relRMS returns the root mean square relative residual of l on the
// typical times at each x of pts, the points it was fitted to.
func relRMS(l Line, pts *points) float64 {
	xs, ts := typicalByX(pts)
	if len(ts) == 0 {
		return 0
	}
	var ss float64
	for i, t := range ts {
		e := (l.At(xs[i]) - t) / t
		ss += e * e
	}
	return math.Sqrt(ss / float64(len(ts)))
}

// typical returns the median of the densest half of v: of the shortest
// interval that holds ⌈n/2⌉ of the n values (at least 2 when there are
// two; the most central of equally short ones), the shorth of D. F. Andrews et al., "Robust Estimates of
// Location" (1972). Contention on a shared machine only slows a run, and
// whole runs at once, so the slowed runs scatter above a tight cluster
// of unslowed ones; the shorth finds that cluster even when half of the
// runs at one size were slowed, where the median would land between the
// two. With symmetric noise it agrees with the median. v is reordered.
func typical(v []float64) float64 {
	n := len(v)
	if n <= 2 {
		return profiler.Median(v)
	}
	sort.Float64s(v)
	h := (n + 1) / 2
	// Among windows of equal width the most central wins, so that evenly
	// spread values give the median.
	best, mid := 0, float64(n-h)/2
	for i := 1; i+h <= n; i++ {
		w, bw := v[i+h-1]-v[i], v[best+h-1]-v[best]
		if w < bw || w == bw && math.Abs(float64(i)-mid) < math.Abs(float64(best)-mid) {
			best = i
		}
	}
	return profiler.Median(v[best : best+h])
}

// sortedKeys returns the keys of set in increasing order.
func sortedKeys(set map[int]bool) []int {
	out := make([]int, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// overheadOps are the op kinds OpOverhead measures: the compute ops made
// of blocks, and send.
var overheadOps = append(slices.Clone(blockOps), "send")
