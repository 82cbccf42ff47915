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
// A language model's block times (points with sequence lengths, x their
// tokens m·S) are reduced at each distinct (x, S) alike. Measured at two
// sequence lengths or more, those of a block with attention (quad set;
// see quadBlocks) may grow faster than the tokens: attention's scores and
// context cost m·S² (Vaswani et al., "Attention Is All You Need", 2017,
// table 1: O(n²·d) per self-attention layer, against O(n·d²) for the
// projections). fitLine then fits t = a + b·m·S + c·m·S², a, b, c ≥ 0,
// beside the line, and keeps c only where validation supports it: where
// the quadratic forecasts held-out typical times (a sequence length's,
// or with two lengths a point's) better than the line (see quadHelps). The loss, whose softmax costs the
// same per token, the blocks without attention and the blocks of one
// sequence length (where m·S and m·S² are proportional) get the line.
//
// The line's Points counts the measurements; its RMSE and MaxRelErr are
// the residuals of the typical times it was fitted to.
func fitLine(pts *points, quad bool) (Line, error) {
	xs, ss, ts := typicalByX(pts)
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
		fit, err := nnlsLine(xs, nil, ts)
		if err != nil {
			return Line{}, err
		}
		l.Intercept, l.Slope = fit.Intercept, fit.Slope
		if quad && seqQuad && distinct(ss) >= 2 {
			quad, err := nnlsLine(xs, ss, ts)
			if err != nil {
				return Line{}, err
			}
			if quad.Quad > 0 && quadHelps(xs, ss, ts) {
				l.Intercept, l.Slope, l.Quad = quad.Intercept, quad.Slope, quad.Quad
			}
		}
	}
	l.RMSE, l.MaxRelErr = residuals(l, pts)
	return l, nil
}

// seqQuad says whether fitLine may keep the m·S² term: always, but for
// the test that measures on held-out sequence lengths what the term
// buys (TestAccuracyTransformerSeqTerm).
var seqQuad = true

// nnlsLine fits t = a + b·x, and with ss (not nil) + c·x·s, with every
// coefficient ≥ 0, to the typical times ts by NNLS of the relative
// residuals.
func nnlsLine(xs, ss, ts []float64) (Line, error) {
	cols := 2
	if ss != nil {
		cols = 3
	}
	a := make([]float64, 0, cols*len(ts))
	rhs := make([]float64, len(ts))
	for i, t := range ts {
		a = append(a, 1/t, xs[i]/t)
		if ss != nil {
			a = append(a, xs[i]*ss[i]/t)
		}
		rhs[i] = 1
	}
	x, _, err := nnls(a, len(ts), cols, rhs)
	if err != nil {
		return Line{}, err
	}
	l := Line{Intercept: x[0], Slope: x[1]}
	if ss != nil {
		l.Quad = x[2]
	}
	return l, nil
}

// quadHelps says whether the m·S² term forecasts the typical times
// better than the line does, each fitted without the points it
// forecasts, by the root mean square of the relative errors over all of
// them: with three sequence lengths or more, the points of each length
// held out in turn (what a forecast at a length never run asks of the
// term); with two, each point in turn (a length held out would leave one,
// at which the term is the line's slope times a constant). With a
// handful of sizes and lengths a third coefficient fits noise as readily
// as attention; points it forecasts worse than the line does say it was
// noise.
func quadHelps(xs, ss, ts []float64) bool {
	if len(ts) < 4 {
		return false // three coefficients from three points forecast nothing held out
	}
	held := func(i, j int) bool { return i == j } // point j held out in fold i
	folds := len(ts)
	var seqs []float64
	if distinct(ss) >= 3 {
		for _, s := range ss {
			if !slices.Contains(seqs, s) {
				seqs = append(seqs, s)
			}
		}
		held = func(i, j int) bool { return ss[j] == seqs[i] }
		folds = len(seqs)
	}
	var lin, quad float64
	for i := range folds {
		var rx, rs, rt []float64
		for j := range ts {
			if !held(i, j) {
				rx, rs, rt = append(rx, xs[j]), append(rs, ss[j]), append(rt, ts[j])
			}
		}
		l, err := nnlsLine(rx, nil, rt)
		if err != nil {
			return false
		}
		q, err := nnlsLine(rx, rs, rt)
		if err != nil {
			return false
		}
		for j := range ts {
			if held(i, j) {
				el, eq := (l.AtSeq(xs[j], ss[j])-ts[j])/ts[j], (q.AtSeq(xs[j], ss[j])-ts[j])/ts[j]
				lin += el * el
				quad += eq * eq
			}
		}
	}
	return quad < lin
}

// distinct counts the distinct values of v.
func distinct(v []float64) int {
	seen := map[float64]bool{}
	for _, x := range v {
		seen[x] = true
	}
	return len(seen)
}

// residuals returns the root mean square and the largest relative
// residual of l on the typical times at each x of pts.
func residuals(l Line, pts *points) (rmse, maxRel float64) {
	xs, ss, ts := typicalByX(pts)
	if len(ts) == 0 {
		return 0, 0
	}
	var ss2 float64
	for i, t := range ts {
		e := l.AtSeq(xs[i], ss[i]) - t
		ss2 += e * e
		maxRel = math.Max(maxRel, math.Abs(e)/t)
	}
	return math.Sqrt(ss2 / float64(len(ts))), maxRel
}

// typicalByX returns the distinct x of pts with a positive time, in
// increasing order, and the typical positive time at each; of points
// with sequence lengths, the distinct (x, s) in increasing order of x,
// then s, their sequence lengths in ss (0 for points without).
func typicalByX(pts *points) (xs, ss, ts []float64) {
	idx := make([]int, 0, pts.len())
	for i, t := range pts.t {
		if t > 0 {
			idx = append(idx, i)
		}
	}
	sort.Slice(idx, func(i, j int) bool {
		a, b := idx[i], idx[j]
		return pts.x[a] < pts.x[b] || pts.x[a] == pts.x[b] && pts.seqAt(a) < pts.seqAt(b)
	})
	var run []float64
	for i, k := range idx {
		run = append(run, pts.t[k])
		if i+1 == len(idx) || pts.x[idx[i+1]] != pts.x[k] || pts.seqAt(idx[i+1]) != pts.seqAt(k) {
			xs = append(xs, pts.x[k])
			ss = append(ss, pts.seqAt(k))
			ts = append(ts, typical(run))
			run = run[:0]
		}
	}
	return xs, ss, ts
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
	xs, ss, ts := typicalByX(pts)
	if len(ts) == 0 {
		return 0
	}
	var sum float64
	for i, t := range ts {
		e := (l.AtSeq(xs[i], ss[i]) - t) / t
		sum += e * e
	}
	return math.Sqrt(sum / float64(len(ts)))
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
