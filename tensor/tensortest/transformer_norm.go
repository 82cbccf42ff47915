package tensortest

import (
	"fmt"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/reference"
)

// normCase is one shape of a normalisation test: x [rows…, d].
type normCase struct {
	name   string
	shape  tensor.Shape // of x; the last dimension is d
	offset float32      // added to every input, to expose unstable variances
}

// normCases are the shapes the norms are tested at: odd widths and row
// counts, a width of 1 (LayerNorm's variance is then 0), a 3-D input, a
// large offset, and one a device shares out over its threads by rows and
// by columns.
var normCases = []normCase{
	{"one value", tensor.Shape{1, 1}, 0},
	{"width 1", tensor.Shape{5, 1}, 0},
	{"one row of 17", tensor.Shape{1, 17}, 0},
	{"odd rows and width", tensor.Shape{17, 3}, 0},
	{"[B, S, D] input", tensor.Shape{3, 5, 7}, 0},
	{"offset 100", tensor.Shape{4, 33}, 100},
	{"split across threads", tensor.Shape{64, 771}, 0},
}

// normEps is GPT-2's layer_norm_epsilon and TinyLlama's rms_norm_eps;
// normEps64 is the float32 value the kernels add, for the references.
const (
	normEps   = 1e-5
	normEps64 = float64(float32(normEps))
)

// testLayerNorm checks LayerNormForward and LayerNormBackward against the
// float64 reference: the backward from the statistics the forward saved,
// accumulating into parameter gradients that hold values, then again
// without dx, which must add the same gradients once more.
func testLayerNorm(t *testing.T, dev tensor.Device) {
	for _, r := range rowsRoutes(dev) {
		for _, tc := range normCases {
			t.Run(r.name+"/"+tc.name, func(t *testing.T) { testLayerNormCase(t, r, tc) })
		}
		t.Run(r.name+"/bad arguments panic", func(t *testing.T) { testNormPanics(t, r, true) })
	}
}

func testLayerNormCase(t *testing.T, r rowsRoute, tc normCase) {
	rng := newRand(uint64(tc.shape.Numel()) + 31)
	d := tc.shape[len(tc.shape)-1]
	n := tc.shape.Numel() / d
	xs := randSlice(rng, tc.shape.Numel())
	for i := range xs {
		xs[i] += tc.offset
	}
	gs, bs := randSlice(rng, d), randSlice(rng, d)
	x := upload(r.dev, tensor.Activations, tc.shape, xs)
	gamma := upload(r.dev, tensor.Weights, tensor.Shape{d}, gs)
	beta := upload(r.dev, tensor.Weights, tensor.Shape{d}, bs)
	defer x.Release()
	defer gamma.Release()
	defer beta.Release()
	y := newGuarded(r.dev, tensor.Activations, tc.shape, nil)
	mean := newGuarded(r.dev, tensor.Activations, tensor.Shape{n}, nil)
	rstd := newGuarded(r.dev, tensor.Activations, tensor.Shape{n}, nil)
	defer y.release()
	defer mean.release()
	defer rstd.release()
	r.k.LayerNormForward(x, gamma, beta, y.T, mean.T, rstd.T, normEps)
	want := reference.LayerNorm(widen(xs), widen(gs), widen(bs), normEps64)
	compare(t, "y", y.check(t, "y"), want.Y, reductionRTol, reductionATol)
	savedMean, savedRstd := mean.check(t, "mean"), rstd.check(t, "rstd")
	compare(t, "mean", savedMean, want.Mean, reductionRTol, reductionATol)
	compare(t, "rstd", savedRstd, want.Rstd, reductionRTol, reductionATol)

	dys, dg0, db0 := randSlice(rng, len(xs)), randSlice(rng, d), randSlice(rng, d)
	dy := upload(r.dev, tensor.Activations, tc.shape, dys)
	defer dy.Release()
	dx := newGuarded(r.dev, tensor.Activations, tc.shape, nil)
	dgamma := newGuarded(r.dev, tensor.Gradients, tensor.Shape{d}, dg0)
	dbeta := newGuarded(r.dev, tensor.Gradients, tensor.Shape{d}, db0)
	defer dx.release()
	defer dgamma.release()
	defer dbeta.release()
	wdx, wdg, wdb := reference.LayerNormBackward(widen(xs), widen(dys), widen(gs), widen(savedMean), widen(savedRstd))
	for pass := 1; pass <= 2; pass++ {
		dxT := dx.T
		if pass == 2 {
			dxT = nil
		}
		r.k.LayerNormBackward(x, dy, gamma, mean.T, rstd.T, dxT, dgamma.T, dbeta.T)
		compare(t, "dx", dx.check(t, "dx"), wdx, reductionRTol, reductionATol)
		what := fmt.Sprintf("after %d backwards", pass)
		compare(t, "dgamma "+what, dgamma.check(t, "dgamma"), accumulated(dg0, wdg, pass), reductionRTol, reductionATol)
		compare(t, "dbeta "+what, dbeta.check(t, "dbeta"), accumulated(db0, wdb, pass), reductionRTol, reductionATol)
	}
}

// testRMSNorm checks RMSNormForward and RMSNormBackward as testLayerNorm
// does LayerNorm's.
func testRMSNorm(t *testing.T, dev tensor.Device) {
	for _, r := range rowsRoutes(dev) {
		for _, tc := range normCases {
			t.Run(r.name+"/"+tc.name, func(t *testing.T) { testRMSNormCase(t, r, tc) })
		}
		t.Run(r.name+"/bad arguments panic", func(t *testing.T) { testNormPanics(t, r, false) })
	}
}

func testRMSNormCase(t *testing.T, r rowsRoute, tc normCase) {
	rng := newRand(uint64(tc.shape.Numel()) + 37)
	d := tc.shape[len(tc.shape)-1]
	n := tc.shape.Numel() / d
	xs := randSlice(rng, tc.shape.Numel())
	for i := range xs {
		xs[i] += tc.offset
	}
	gs := randSlice(rng, d)
	x := upload(r.dev, tensor.Activations, tc.shape, xs)
	gamma := upload(r.dev, tensor.Weights, tensor.Shape{d}, gs)
	defer x.Release()
	defer gamma.Release()
	y := newGuarded(r.dev, tensor.Activations, tc.shape, nil)
	rstd := newGuarded(r.dev, tensor.Activations, tensor.Shape{n}, nil)
	defer y.release()
	defer rstd.release()
	r.k.RMSNormForward(x, gamma, y.T, rstd.T, normEps)
	wantY, wantRstd := reference.RMSNorm(widen(xs), widen(gs), normEps64)
	compare(t, "y", y.check(t, "y"), wantY, reductionRTol, reductionATol)
	savedRstd := rstd.check(t, "rstd")
	compare(t, "rstd", savedRstd, wantRstd, reductionRTol, reductionATol)

	dys, dg0 := randSlice(rng, len(xs)), randSlice(rng, d)
	dy := upload(r.dev, tensor.Activations, tc.shape, dys)
	defer dy.Release()
	dx := newGuarded(r.dev, tensor.Activations, tc.shape, nil)
	dgamma := newGuarded(r.dev, tensor.Gradients, tensor.Shape{d}, dg0)
	defer dx.release()
	defer dgamma.release()
	wdx, wdg := reference.RMSNormBackward(widen(xs), widen(dys), widen(gs), widen(savedRstd))
	for pass := 1; pass <= 2; pass++ {
		dxT := dx.T
		if pass == 2 {
			dxT = nil
		}
		r.k.RMSNormBackward(x, dy, gamma, rstd.T, dxT, dgamma.T)
		compare(t, "dx", dx.check(t, "dx"), wdx, reductionRTol, reductionATol)
		compare(t, fmt.Sprintf("dgamma after %d backwards", pass), dgamma.check(t, "dgamma"), accumulated(dg0, wdg, pass), reductionRTol, reductionATol)
	}
}

// accumulated returns init + times·grad, a parameter gradient after
// times backwards that each add grad.
func accumulated(init []float32, grad []float64, times int) []float64 {
	out := make([]float64, len(init))
	for i := range out {
		out[i] = float64(init[i]) + float64(times)*grad[i]
	}
	return out
}

// testNormPanics checks that a norm's kernels panic on shapes that do not
// agree (layer for LayerNorm, else RMSNorm).
func testNormPanics(t *testing.T, r rowsRoute, layer bool) {
	a := func(shape ...int) *tensor.Tensor { return r.dev.Alloc(tensor.Activations, shape...) }
	x, y, g4, g5, s3, s2 := a(3, 4), a(3, 4), a(4), a(5), a(3), a(2)
	defer func() {
		for _, tt := range []*tensor.Tensor{x, y, g4, g5, s3, s2} {
			tt.Release()
		}
	}()
	if layer {
		checkKernelPanics(t, "LayerNormForward with gamma not dividing x", func() { r.k.LayerNormForward(x, g5, g5, y, s3, s3, normEps) })
		checkKernelPanics(t, "LayerNormForward with statistics of 2 rows", func() { r.k.LayerNormForward(x, g4, g4, y, s2, s3, normEps) })
		checkKernelPanics(t, "LayerNormBackward with dy of another shape", func() { r.k.LayerNormBackward(x, g4, g4, s3, s3, y, g4, g4) })
		return
	}
	checkKernelPanics(t, "RMSNormForward with gamma not dividing x", func() { r.k.RMSNormForward(x, g5, y, s3, normEps) })
	checkKernelPanics(t, "RMSNormForward with rstd of 2 rows", func() { r.k.RMSNormForward(x, g4, y, s2, normEps) })
	checkKernelPanics(t, "RMSNormBackward with dy of another shape", func() { r.k.RMSNormBackward(x, g4, g4, s3, y, g4) })
}

// testRoPE checks RoPE and its inverse against the float64 reference,
// that the inverse undoes the forward, and the rotation in place (y =
// x).
func testRoPE(t *testing.T, dev tensor.Device) {
	tests := []struct {
		name string
		b    int
		p    tensor.RoPEParams
	}{
		{"one pair", 1, tensor.RoPEParams{Seq: 1, Heads: 1, HeadDim: 2, Theta: 10000}},
		{"odd sequence and heads", 2, tensor.RoPEParams{Seq: 5, Heads: 3, HeadDim: 6, Theta: 10000}},
		{"Llama 3 base", 3, tensor.RoPEParams{Seq: 17, Heads: 5, HeadDim: 2, Theta: 500000}},
		{"wide heads", 1, tensor.RoPEParams{Seq: 3, Heads: 2, HeadDim: 258, Theta: 10000}},
		{"split across threads", 3, tensor.RoPEParams{Seq: 33, Heads: 4, HeadDim: 64, Theta: 10000}},
		// A small base turns pair 1 by s·2^(−1/2) radians, up to 2898 at
		// position 4098: angles in float32 would be off by up to 1.2e-4.
		{"long sequence", 1, tensor.RoPEParams{Seq: 4099, Heads: 1, HeadDim: 4, Theta: 2}},
	}
	for _, r := range rowsRoutes(dev) {
		for _, tc := range tests {
			t.Run(r.name+"/"+tc.name, func(t *testing.T) { testRoPECase(t, r, tc.b, tc.p) })
		}
		t.Run(r.name+"/bad arguments panic", func(t *testing.T) {
			x := r.dev.Alloc(tensor.Activations, 2, 3, 4)
			y := r.dev.Alloc(tensor.Activations, 2, 3, 5)
			defer x.Release()
			defer y.Release()
			checkKernelPanics(t, "RoPE of an odd head width", func() { r.k.RoPE(x, x, tensor.RoPEParams{Seq: 2, Heads: 4, HeadDim: 3, Theta: 1}) })
			checkKernelPanics(t, "RoPE of a partial sequence", func() { r.k.RoPE(x, x, tensor.RoPEParams{Seq: 5, Heads: 3, HeadDim: 2, Theta: 1}) })
			checkKernelPanics(t, "RoPE into y of another length", func() { r.k.RoPE(x, y, tensor.RoPEParams{Seq: 2, Heads: 3, HeadDim: 4, Theta: 1}) })
		})
	}
}

func testRoPECase(t *testing.T, r rowsRoute, b int, p tensor.RoPEParams) {
	shape := tensor.Shape{b, p.Seq, p.Heads, p.HeadDim}
	xs := randSlice(newRand(uint64(shape.Numel())+41), shape.Numel())
	inv := p
	inv.Inverse = true
	x := upload(r.dev, tensor.Activations, shape, xs)
	defer x.Release()
	y := newGuarded(r.dev, tensor.Activations, shape, nil)
	defer y.release()
	r.k.RoPE(x, y.T, p)
	gotY := y.check(t, "y")
	compare(t, "y", gotY, reference.RoPE(widen(xs), p), ropeRTol, ropeATol)

	// The inverse, of the forward's output: the reference's inverse of
	// that output, and within a rounding of each of the two kernels of x.
	z := newGuarded(r.dev, tensor.Activations, shape, nil)
	defer z.release()
	r.k.RoPE(y.T, z.T, inv)
	gotZ := z.check(t, "inverse")
	compare(t, "inverse", gotZ, reference.RoPE(widen(gotY), inv), ropeRTol, ropeATol)
	compare(t, "inverse of the forward", gotZ, widen(xs), 2*ropeRTol, 2*ropeATol)

	// In place: y = x.
	w := newGuarded(r.dev, tensor.Activations, shape, xs)
	defer w.release()
	r.k.RoPE(w.T, w.T, p)
	compare(t, "in place", w.check(t, "in place"), reference.RoPE(widen(xs), p), ropeRTol, ropeATol)
}
