package cpu

import "github.com/pipecast/pipecast/tensor"

// s1Sums describes stride-1 window sums from a plane of srcH×srcW values
// to one of dstH×dstW: output (i, j) sums the kh×kw window whose top left
// is (i−ph, j−pw), clipped to the source. Average pooling's forward is
// such a sum over x; its backward, with stride 1, is such a sum over
// dy/div with the window mirrored (padding k−1−pad), since input (r, c)
// collects the outputs (i, j) with i ∈ [r+pad−k+1, r+pad].
//
// Every sum is added as the generic kernels add it: from +0, rows in
// order and within a row columns in order, one addition at a time, so
// that the results agree bit for bit.
type s1Sums struct{ srcH, srcW, dstH, dstW, kh, kw, ph, pw int }

// avgForwardS1 returns the sums of an average pooling's forward with
// stride 1 in both axes.
func avgForwardS1(g poolGeom, p tensor.Pool2DParams) s1Sums {
	return s1Sums{g.h, g.w, g.oh, g.ow, p.KH, p.KW, p.PadH, p.PadW}
}

// avgBackwardS1 returns the sums of an average pooling's backward with
// stride 1 in both axes, over the outputs' gradients divided by KH·KW.
func avgBackwardS1(g poolGeom, p tensor.Pool2DParams) s1Sums {
	return s1Sums{g.oh, g.ow, g.h, g.w, p.KH, p.KW, p.KH - 1 - p.PadH, p.KW - 1 - p.PadW}
}

// s1ZeroRow stands for the rows of a 3×3 window that lie outside a
// source at most 512 wide. Adding its zeros changes no sum: a sum from
// +0 is never −0, and x + 0 is then x, bit for bit (a NaN stays a NaN;
// which payload a sum of two NaNs keeps, Go leaves to the compiler).
var s1ZeroRow [512]float32

// plane sets dst to the window sums of src, each divided by div unless
// div is 0.
func (s s1Sums) plane(dst, src []float32, div float32) {
	if s.kh == 3 && s.kw == 3 && s.srcW <= len(s1ZeroRow) {
		s.plane3x3(dst, src, div)
		return
	}
	for i := range s.dstH {
		drow := dst[i*s.dstW : (i+1)*s.dstW]
		clear(drow)
		for r := max(i-s.ph, 0); r < min(i-s.ph+s.kh, s.srcH); r++ {
			addRowS1(drow, src[r*s.srcW:(r+1)*s.srcW], s.kw, s.pw)
		}
		divideRow(drow, div)
	}
}

// plane3x3 is plane for 3×3 windows: each output row sums its three
// source rows at once, s1ZeroRow standing for those outside the source.
func (s s1Sums) plane3x3(dst, src []float32, div float32) {
	for i := range s.dstH {
		r := i - s.ph
		drow := dst[i*s.dstW : (i+1)*s.dstW]
		sum3Rows3(drow, s.row(src, r), s.row(src, r+1), s.row(src, r+2), s.pw)
		divideRow(drow, div)
	}
}

// row returns source row r of src, or s1ZeroRow's start if r lies
// outside the source.
func (s s1Sums) row(src []float32, r int) []float32 {
	if r < 0 || r >= s.srcH {
		return s1ZeroRow[:s.srcW]
	}
	return src[r*s.srcW : (r+1)*s.srcW]
}

// divideRow divides d by div unless div is 0.
func divideRow(d []float32, div float32) {
	if div == 0 {
		return
	}
	for j, v := range d {
		d[j] = v / div
	}
}

// interiorS1 returns the outputs [lo, hi) of a row of n whose stride-1
// windows of k, padded by pad, lie wholly inside a source row of w; the
// window of lo starts at the source row's first element.
func interiorS1(n, w, k, pad int) (lo, hi int) {
	lo = min(pad, n)
	hi = max(lo, min(n, w-k+1+pad))
	return lo, hi
}

// addRowS1 adds to d[j] the sum of x over [j−pw, j−pw+kw) clipped to x,
// for each j, in the order of x.
func addRowS1(d, x []float32, kw, pw int) {
	lo, hi := interiorS1(len(d), len(x), kw, pw)
	addEdgesS1(d, x, kw, pw, 0, lo)
	addEdgesS1(d, x, kw, pw, hi, len(d))
	di := d[lo:hi]
	if kw != 3 {
		for j := range di {
			s := di[j]
			for _, v := range x[j : j+kw] {
				s += v
			}
			di[j] = s
		}
		return
	}
	n := len(di)
	if n == 0 {
		return
	}
	x0, x1, x2 := x[0:n], x[1:n+1], x[2:n+2]
	for j := range di {
		di[j] = di[j] + x0[j] + x1[j] + x2[j]
	}
}

// addEdgesS1 is addRowS1 for the outputs [lo, hi), with the windows
// clipped.
func addEdgesS1(d, x []float32, kw, pw, lo, hi int) {
	for j := lo; j < hi; j++ {
		s := d[j]
		for _, v := range x[max(j-pw, 0):min(j-pw+kw, len(x))] {
			s += v
		}
		d[j] = s
	}
}

// sum3Rows3 sets d[j] to the sum of the 3×3 window over rows a, b and c
// whose columns start at j−pw, clipped to the rows: from +0, a's three
// values, then b's, then c's.
func sum3Rows3(d, a, b, c []float32, pw int) {
	lo, hi := interiorS1(len(d), len(a), 3, pw)
	if pw == 1 && lo == 1 && hi == len(d)-1 && len(a) == len(d) {
		sumEdges3Rows1(d, a, b, c)
	} else {
		sumEdges3Rows(d, a, b, c, pw, 0, lo)
		sumEdges3Rows(d, a, b, c, pw, hi, len(d))
	}
	di := d[lo:hi]
	n := len(di)
	if n == 0 {
		return
	}
	a0, a1, a2 := a[0:n], a[1:n+1], a[2:n+2]
	b0, b1, b2 := b[0:n], b[1:n+1], b[2:n+2]
	c0, c1, c2 := c[0:n], c[1:n+1], c[2:n+2]
	for j := range di {
		s := float32(0) + a0[j] + a1[j] + a2[j]
		s = s + b0[j] + b1[j] + b2[j]
		di[j] = s + c0[j] + c1[j] + c2[j]
	}
}

// sumEdges3Rows1 is sum3Rows3's first and last outputs when the padding
// is 1 and d is as long as the rows (at least 2): each window holds the
// two columns at its end of the rows.
func sumEdges3Rows1(d, a, b, c []float32) {
	n := len(d)
	a, b, c = a[:n], b[:n], c[:n]
	s := float32(0) + a[0] + a[1]
	s = s + b[0] + b[1]
	d[0] = s + c[0] + c[1]
	s = float32(0) + a[n-2] + a[n-1]
	s = s + b[n-2] + b[n-1]
	d[n-1] = s + c[n-2] + c[n-1]
}

// sumEdges3Rows is sum3Rows3 for the outputs [lo, hi), with the windows
// clipped.
func sumEdges3Rows(d, a, b, c []float32, pw, lo, hi int) {
	for j := lo; j < hi; j++ {
		c0, c1 := max(j-pw, 0), min(j-pw+3, len(a))
		var s float32
		for _, v := range a[c0:c1] {
			s += v
		}
		for _, v := range b[c0:c1] {
			s += v
		}
		for _, v := range c[c0:c1] {
			s += v
		}
		d[j] = s
	}
}
