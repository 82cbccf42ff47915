package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/reference"
)

// groupedConvCase is a convolution whose lowering groups samples, with the
// plan it must get on 2 threads (so that the cases keep covering every
// mode if the policy's constants change).
type groupedConvCase struct {
	name      string
	x, w      tensor.Shape
	p         tensor.Conv2DParams
	perThread bool // on 2 threads, forward pass
	group     int  // likewise
}

var (
	convSame3 = tensor.Conv2DParams{StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}
	convUnit  = tensor.Conv2DParams{StrideH: 1, StrideW: 1}
)

var groupedConvCases = []groupedConvCase{
	// P = 4: all 6 samples in one product on the whole pool.
	{"3x3 P=4", tensor.Shape{6, 8, 2, 2}, tensor.Shape{5, 8, 3, 3}, convSame3, false, 6},
	// P = 64: two threads take 5 samples each; one or three threads run
	// groups of 8 and 2 on the whole pool.
	{"3x3 P=64", tensor.Shape{10, 3, 8, 8}, tensor.Shape{6, 3, 3, 3}, convSame3, true, 5},
	// P = 256: each thread takes groups of 2 and 1, the 7th sample runs on
	// the whole pool.
	{"3x3 P=256", tensor.Shape{7, 3, 16, 16}, tensor.Shape{4, 3, 3, 3}, convSame3, true, 2},
	{"1x1 direct P=256", tensor.Shape{7, 4, 16, 16}, tensor.Shape{5, 4, 1, 1}, convUnit, true, 2},
	{"1x1 direct P=4", tensor.Shape{5, 6, 2, 2}, tensor.Shape{7, 6, 1, 1}, convUnit, false, 5},
	{"1x1 stride 2", tensor.Shape{6, 8, 4, 4}, tensor.Shape{5, 8, 1, 1}, tensor.Conv2DParams{StrideH: 2, StrideW: 2}, false, 6},
	{"3x3 stride 2 P=4", tensor.Shape{5, 4, 4, 4}, tensor.Shape{6, 4, 3, 3}, tensor.Conv2DParams{StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}, false, 5},
	{"1x7 P=34", tensor.Shape{9, 3, 2, 17}, tensor.Shape{4, 3, 1, 7}, tensor.Conv2DParams{StrideH: 1, StrideW: 1, PadW: 3}, false, 9},
	// Wide rows (copied, not gathered through a tap table), P = 512:
	// one sample per product.
	{"3x3 P=512", tensor.Shape{5, 2, 16, 32}, tensor.Shape{3, 2, 3, 3}, convSame3, true, 1},
}

// TestConvGroupedAgainstReference runs the three passes of convolutions
// whose samples are grouped into shared products against the float64
// reference, on 1, 2 and 3 threads.
func TestConvGroupedAgainstReference(t *testing.T) {
	for _, tc := range groupedConvCases {
		g := convShapesGeom(tc.x, tc.w, tc.p)
		if pl := newConvPlan(ConvForward, g, 2, false); pl.perThread != tc.perThread || pl.group != tc.group {
			t.Errorf("%s: plan on 2 threads runs groups of %d, per thread %v; the case wants %d, %v",
				tc.name, pl.group, pl.perThread, tc.group, tc.perThread)
		}
		for _, threads := range []int{1, 2, 3} {
			t.Run(fmt.Sprintf("%s/threads=%d", tc.name, threads), func(t *testing.T) {
				d := New(tensor.Options{Threads: threads})
				defer d.Close()
				convCheckReference(t, d, tc.x, tc.w, tc.p, uint64(threads))
			})
		}
	}
}

// TestConvOwnThreads checks that a device whose products bring their own
// threads gets no products from the pool's threads: they would run at the
// same time.
func TestConvOwnThreads(t *testing.T) {
	var running, overlaps, calls atomic.Int32
	d := New(tensor.Options{Threads: 3})
	defer d.Close()
	d.extGemm = func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
		calls.Add(1)
		if running.Add(1) > 1 {
			overlaps.Add(1)
		}
		defer running.Add(-1)
		gemmRegion(make([]float32, gemmPackElems(m, n, k)), transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}
	for _, tc := range groupedConvCases {
		t.Run(tc.name, func(t *testing.T) { convCheckReference(t, d, tc.x, tc.w, tc.p, 7) })
	}
	if calls.Load() == 0 || overlaps.Load() > 0 {
		t.Errorf("%d products, %d of them while another ran; want some and none", calls.Load(), overlaps.Load())
	}
}

// TestConvGemmShapes checks ConvGemmShapes against the products the
// kernels run, and that they add up to the convolution's multiply-adds.
func TestConvGemmShapes(t *testing.T) {
	var mu sync.Mutex
	var seen []GemmShape
	convGemmHook = func(s GemmShape) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, s)
	}
	defer func() { convGemmHook = nil }()

	cases := []struct {
		x, w tensor.Shape
		p    tensor.Conv2DParams
	}{
		{tensor.Shape{1, 3, 9, 9}, tensor.Shape{5, 3, 3, 3}, convSame3},
		{tensor.Shape{3, 8, 4, 4}, tensor.Shape{64, 8, 3, 3}, convSame3},
		{tensor.Shape{8, 4, 8, 8}, tensor.Shape{300, 4, 3, 3}, convSame3},
	}
	for _, tc := range groupedConvCases {
		cases = append(cases, struct {
			x, w tensor.Shape
			p    tensor.Conv2DParams
		}{tc.x, tc.w, tc.p})
	}
	for _, threads := range []int{1, 2, 3} {
		d := New(tensor.Options{Threads: threads})
		for _, tc := range cases {
			oh, ow := tc.p.OutSize(tc.x[2], tc.x[3], tc.w[2], tc.w[3])
			yShape := tensor.Shape{tc.x[0], tc.w[0], oh, ow}
			x, w, y := d.Alloc(tensor.Activations, tc.x...), d.Alloc(tensor.Weights, tc.w...), d.Alloc(tensor.Activations, yShape...)
			macs := tc.x[0] * tc.w.Numel() * oh * ow
			for _, pass := range []ConvPass{ConvForward, ConvBackwardData, ConvBackwardFilter} {
				seen = seen[:0]
				convRunPass(d, pass, x, w, y, tc.p)
				got := convCountShapes(seen)
				want := ConvGemmShapes(pass, tc.x, tc.w, yShape, tc.p, threads)
				sum := 0
				for _, s := range want {
					sum += s.M * s.N * s.K * s.Count
				}
				if !slices.Equal(got, convSortShapes(want)) || sum != macs {
					t.Errorf("%v%v threads=%d pass %d: kernel ran %v, ConvGemmShapes says %v (%d multiply-adds, want %d)",
						tc.x, tc.w, threads, pass, got, want, sum, macs)
				}
			}
			x.Release()
			w.Release()
			y.Release()
		}
		d.Close()
	}
}

// convRunPass runs one pass of a convolution on d, with y (or dy) as
// the output's tensor.
func convRunPass(d *Device, pass ConvPass, x, w, y *tensor.Tensor, p tensor.Conv2DParams) {
	switch pass {
	case ConvForward:
		d.Conv2DForward(x, w, nil, y, p)
	case ConvBackwardData:
		d.Conv2DBackwardData(y, w, x, p)
	case ConvBackwardFilter:
		d.Conv2DBackwardFilter(x, y, w, nil, p)
	}
}

// convCountShapes merges a list of products (Count 1 each) into distinct
// shapes with counts, in convSortShapes' order.
func convCountShapes(list []GemmShape) []GemmShape {
	var out []GemmShape
	for _, s := range list {
		i := slices.IndexFunc(out, func(o GemmShape) bool { o.Count = s.Count; return o == s })
		if i < 0 {
			out = append(out, s)
			continue
		}
		out[i].Count += s.Count
	}
	return convSortShapes(out)
}

// convSortShapes orders shapes by every field, so that two lists compare.
func convSortShapes(s []GemmShape) []GemmShape {
	s = slices.Clone(s)
	slices.SortFunc(s, func(a, b GemmShape) int {
		return slices.Compare([]int{a.M, a.N, a.K, convB(a.TransA), convB(a.TransB), a.Count},
			[]int{b.M, b.N, b.K, convB(b.TransA), convB(b.TransB), b.Count})
	})
	return s
}

func convB(b bool) int {
	if b {
		return 1
	}
	return 0
}

// convShapesGeom is the geometry of input x and weights w under p.
func convShapesGeom(x, w tensor.Shape, p tensor.Conv2DParams) convGeom {
	oh, ow := p.OutSize(x[2], x[3], w[2], w[3])
	return shapeGeom(x, w, tensor.Shape{x[0], w[0], oh, ow}, p)
}

// convCheckReference runs the forward (with bias), backward-data and
// backward-filter (adding onto nonzero gradients) passes of one
// convolution on d and compares them with the float64 reference.
func convCheckReference(t *testing.T, d *Device, xs, ws tensor.Shape, p tensor.Conv2DParams, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0xc0))
	g := convShapesGeom(xs, ws, p)
	ys := tensor.Shape{g.n, g.o, g.oh, g.ow}
	rnd := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(rng.Float64()*2 - 1)
		}
		return s
	}
	wide := func(s []float32) []float64 {
		out := make([]float64, len(s))
		for i, v := range s {
			out[i] = float64(v)
		}
		return out
	}
	xh, wh, bh, dyh, dw0, db0 := rnd(xs.Numel()), rnd(ws.Numel()), rnd(g.o), rnd(ys.Numel()), rnd(ws.Numel()), rnd(g.o)
	x, w, b := tensor.FromHost(d, tensor.Activations, xs, xh), tensor.FromHost(d, tensor.Weights, ws, wh), tensor.FromHost(d, tensor.Weights, tensor.Shape{g.o}, bh)
	dy, dw, db := tensor.FromHost(d, tensor.Activations, ys, dyh), tensor.FromHost(d, tensor.Gradients, ws, dw0), tensor.FromHost(d, tensor.Gradients, tensor.Shape{g.o}, db0)
	y, dx := d.Alloc(tensor.Activations, ys...), d.Alloc(tensor.Activations, xs...)
	for _, v := range []*tensor.Tensor{x, w, b, dy, dw, db, y, dx} {
		defer v.Release()
	}
	// NaN in the outputs catches an element a kernel fails to set.
	for _, v := range []*tensor.Tensor{y, dx} {
		d.Fill(v, float32(math.NaN()))
	}

	d.Conv2DForward(x, w, b, y, p)
	convCompare(t, "y", Data(y), reference.Conv2D(wide(xh), g.n, g.c, g.h, g.w, wide(wh), g.o, g.kh, g.kw, wide(bh), p))
	d.Conv2DBackwardData(dy, w, dx, p)
	convCompare(t, "dx", Data(dx), reference.Conv2DBackwardData(wide(dyh), g.n, g.c, g.h, g.w, wide(wh), g.o, g.kh, g.kw, p))
	d.Conv2DBackwardFilter(x, dy, dw, db, p)
	wantDW, wantDB := reference.Conv2DBackwardFilter(wide(xh), g.n, g.c, g.h, g.w, wide(dyh), g.o, g.kh, g.kw, p)
	for i := range wantDW {
		wantDW[i] += float64(dw0[i])
	}
	for i := range wantDB {
		wantDB[i] += float64(db0[i])
	}
	convCompare(t, "dw", Data(dw), wantDW)
	convCompare(t, "dbias", Data(db), wantDB)
}

// convCompare checks got against the float64 reference within the
// tolerance of a float32 sum of a few hundred terms of magnitude ≤ 1
// (relative 1e-4, absolute 1e-5).
func convCompare(t *testing.T, what string, got []float32, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	bad := 0
	for i, v := range got {
		if d := math.Abs(float64(v) - want[i]); !(d <= 1e-5+1e-4*math.Abs(want[i])) {
			if bad < 5 {
				t.Errorf("%s[%d] = %v, want %v", what, i, v, want[i])
			}
			bad++
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d values out of tolerance in all", what, bad)
	}
}
