package tensortest

import (
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/reference"
)

// convCase is one convolution the backend is compared on.
type convCase struct {
	name          string
	n, c, h, w, o int
	kh, kw        int
	p             tensor.Conv2DParams
	bias          bool
}

// convParams builds Conv2DParams tersely.
func convParams(sh, sw, ph, pw int) tensor.Conv2DParams {
	return tensor.Conv2DParams{StrideH: sh, StrideW: sw, PadH: ph, PadW: pw}
}

// convCases cover the convolutions of VGG, ResNet and Inception on small
// images, at batch 4 (several samples lowered into one product, as the CPU
// backend does with small images) and batch 1. How a backend spreads
// samples over its threads is its own business: the CPU backend's
// per-thread paths are tested in its package (conv_shapes_test.go).
var convCases = []convCase{
	{name: "3x3 s1 p1", n: 4, c: 3, h: 6, w: 5, o: 5, kh: 3, kw: 3, p: convParams(1, 1, 1, 1), bias: true},
	{name: "3x3 s1 p1 batch 1 no bias", n: 1, c: 5, h: 5, w: 6, o: 3, kh: 3, kw: 3, p: convParams(1, 1, 1, 1)},
	{name: "3x3 s2 p1", n: 4, c: 5, h: 8, w: 7, o: 3, kh: 3, kw: 3, p: convParams(2, 2, 1, 1)},
	{name: "3x3 s2 p0 odd input", n: 1, c: 3, h: 7, w: 9, o: 5, kh: 3, kw: 3, p: convParams(2, 2, 0, 0), bias: true},
	{name: "1x1 s1 direct", n: 4, c: 5, h: 5, w: 6, o: 3, kh: 1, kw: 1, p: convParams(1, 1, 0, 0), bias: true},
	{name: "1x1 s1 direct batch 1", n: 1, c: 3, h: 4, w: 3, o: 5, kh: 1, kw: 1, p: convParams(1, 1, 0, 0)},
	{name: "1x1 s1 direct O > OH·OW", n: 3, c: 5, h: 2, w: 2, o: 7, kh: 1, kw: 1, p: convParams(1, 1, 0, 0), bias: true},
	{name: "1x1 s2 downsample", n: 3, c: 4, h: 7, w: 7, o: 5, kh: 1, kw: 1, p: convParams(2, 2, 0, 0)},
	{name: "1x7 p(0,3)", n: 4, c: 3, h: 5, w: 9, o: 5, kh: 1, kw: 7, p: convParams(1, 1, 0, 3)},
	{name: "7x1 p(3,0)", n: 1, c: 5, h: 9, w: 5, o: 3, kh: 7, kw: 1, p: convParams(1, 1, 3, 0), bias: true},
	{name: "5x5 p2", n: 3, c: 3, h: 8, w: 8, o: 5, kh: 5, kw: 5, p: convParams(1, 1, 2, 2)},
	{name: "7x7 s2 p3 stem", n: 4, c: 3, h: 11, w: 12, o: 5, kh: 7, kw: 7, p: convParams(2, 2, 3, 3), bias: true},
	{name: "3x3 s(1,2) p(0,1)", n: 4, c: 3, h: 6, w: 7, o: 5, kh: 3, kw: 3, p: convParams(1, 2, 0, 1), bias: true},
	{name: "3x3 s2 p1 O > OH·OW", n: 4, c: 3, h: 4, w: 4, o: 11, kh: 3, kw: 3, p: convParams(2, 2, 1, 1), bias: true},
	// Large enough that im2col, col2im and the GEMM tiles of a single
	// sample are spread over the threads.
	{name: "3x3 s1 p1 batch 1 32x32", n: 1, c: 8, h: 32, w: 32, o: 12, kh: 3, kw: 3, p: convParams(1, 1, 1, 1), bias: true},
	// Deep enough (N·OH·OW = 1058) that a GPU backend splits the filter
	// gradient's depth into parts, the last one shorter, over two row
	// tiles of 64 (O = 70); stride 2 with padding gives the backward data
	// inputs of four different tap sets.
	{name: "3x3 s2 p1 O > 64 deep", n: 2, c: 3, h: 45, w: 45, o: 70, kh: 3, kw: 3, p: convParams(2, 2, 1, 1), bias: true},
}

func testConv2D(t *testing.T, dev tensor.Device) {
	for i, tc := range convCases {
		t.Run(tc.name, func(t *testing.T) { convCompare(t, dev, tc, uint64(40+i)) })
	}
	t.Run("bad shapes panic", func(t *testing.T) { testConv2DPanics(t, dev) })
}

// convCompare runs the three kernels of one case against the float64
// reference.
func convCompare(t *testing.T, dev tensor.Device, tc convCase, seed uint64) {
	rng := newRand(seed)
	oh, ow := tc.p.OutSize(tc.h, tc.w, tc.kh, tc.kw)
	xShape := tensor.Shape{tc.n, tc.c, tc.h, tc.w}
	wShape := tensor.Shape{tc.o, tc.c, tc.kh, tc.kw}
	yShape := tensor.Shape{tc.n, tc.o, oh, ow}
	xh, wh, dyh := randSlice(rng, xShape.Numel()), randSlice(rng, wShape.Numel()), randSlice(rng, yShape.Numel())
	dw0, db0 := randSlice(rng, wShape.Numel()), randSlice(rng, tc.o)
	x := upload(dev, tensor.Activations, xShape, xh)
	w := upload(dev, tensor.Weights, wShape, wh)
	dy := upload(dev, tensor.Activations, yShape, dyh)
	defer x.Release()
	defer w.Release()
	defer dy.Release()
	var bias *tensor.Tensor
	var bRef []float64
	if tc.bias {
		b := randSlice(rng, tc.o)
		bias = upload(dev, tensor.Weights, tensor.Shape{tc.o}, b)
		defer bias.Release()
		bRef = widen(b)
	}

	y := newGuarded(dev, tensor.Activations, yShape, nil)
	defer y.release()
	dev.Conv2DForward(x, w, bias, y.T, tc.p)
	wantY := reference.Conv2D(widen(xh), tc.n, tc.c, tc.h, tc.w, widen(wh), tc.o, tc.kh, tc.kw, bRef, tc.p)
	compare(t, "y", y.check(t, "y"), wantY, reductionRTol, reductionATol)

	dx := newGuarded(dev, tensor.Activations, xShape, nil)
	defer dx.release()
	dev.Conv2DBackwardData(dy, w, dx.T, tc.p)
	wantDX := reference.Conv2DBackwardData(widen(dyh), tc.n, tc.c, tc.h, tc.w, widen(wh), tc.o, tc.kh, tc.kw, tc.p)
	compare(t, "dx", dx.check(t, "dx"), wantDX, reductionRTol, reductionATol)

	// Parameter gradients accumulate onto what is there.
	dw := newGuarded(dev, tensor.Gradients, wShape, dw0)
	defer dw.release()
	var dbias *tensor.Tensor
	var db *guarded
	if tc.bias {
		db = newGuarded(dev, tensor.Gradients, tensor.Shape{tc.o}, db0)
		defer db.release()
		dbias = db.T
	}
	dev.Conv2DBackwardFilter(x, dy, dw.T, dbias, tc.p)
	wantDW, wantDB := reference.Conv2DBackwardFilter(widen(xh), tc.n, tc.c, tc.h, tc.w, widen(dyh), tc.o, tc.kh, tc.kw, tc.p)
	compare(t, "dw", dw.check(t, "dw"), linearPlus(dw0, wantDW), reductionRTol, reductionATol)
	if db != nil {
		compare(t, "dbias", db.check(t, "dbias"), linearPlus(db0, wantDB), reductionRTol, reductionATol)
	}
}

func testConv2DPanics(t *testing.T, dev tensor.Device) {
	alloc := func(s ...int) *tensor.Tensor { return dev.Alloc(tensor.Activations, s...) }
	x, w, y := alloc(2, 3, 5, 5), alloc(4, 3, 3, 3), alloc(2, 4, 5, 5)
	w2, ySmall, bias3, x2 := alloc(4, 2, 3, 3), alloc(2, 4, 3, 3), alloc(3), alloc(2, 3, 2, 2)
	defer func() {
		for _, a := range []*tensor.Tensor{x, w, y, w2, ySmall, bias3, x2} {
			a.Release()
		}
	}()
	same := convParams(1, 1, 1, 1)
	tests := []struct {
		name string
		fn   func()
	}{
		{"forward weights of other channels", func() { dev.Conv2DForward(x, w2, nil, y, same) }},
		{"forward output of other size", func() { dev.Conv2DForward(x, w, nil, ySmall, same) }},
		{"forward bias of other length", func() { dev.Conv2DForward(x, w, bias3, y, same) }},
		{"forward zero stride", func() { dev.Conv2DForward(x, w, nil, y, convParams(0, 1, 1, 1)) }},
		{"forward kernel larger than input", func() { dev.Conv2DForward(x2, w, nil, y, convParams(1, 1, 0, 0)) }},
		{"backward data dy of other size", func() { dev.Conv2DBackwardData(ySmall, w, x, same) }},
		{"backward filter dw of other channels", func() { dev.Conv2DBackwardFilter(x, y, w2, nil, same) }},
		{"backward filter dbias of other length", func() { dev.Conv2DBackwardFilter(x, y, w, bias3, same) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { gemmMustPanic(t, "conv2d: "+tc.name, tc.fn) })
	}
}
