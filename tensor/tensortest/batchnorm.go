package tensortest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/reference"
)

func testBatchNorm(t *testing.T, dev tensor.Device) {
	torchDefault := tensor.DefaultBatchNorm()
	inception := tensor.BatchNormParams{Momentum: 0.3, Eps: 1e-3}
	tests := []struct {
		name    string
		shape   tensor.Shape
		p       tensor.BatchNormParams
		offset  float32 // added to every input, to expose unstable variances
		running bool    // update running statistics
	}{
		{"batch 1 spatial 5x7", tensor.Shape{1, 3, 5, 7}, torchDefault, 0, true},
		{"batch 3 odd sizes", tensor.Shape{3, 5, 7, 3}, inception, 0, true},
		{"[N,C] input", tensor.Shape{6, 11}, torchDefault, 0, true},
		{"[N,C] batch 2", tensor.Shape{2, 5}, inception, 0, true},
		{"nil running stats", tensor.Shape{4, 3, 3, 5}, torchDefault, 0, false},
		{"offset 100", tensor.Shape{4, 5, 15, 15}, torchDefault, 100, true},
		{"offset 100 [N,C]", tensor.Shape{64, 7}, inception, 100, true},
		{"channels split across threads", tensor.Shape{2, 9, 64, 64}, torchDefault, 0, true},
		{"[N,C] 3 channel blocks", tensor.Shape{5, 150}, inception, 0, true},
		{"[N,C] blocks split across threads", tensor.Shape{64, 1000}, torchDefault, 100, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			testBatchNormCase(t, dev, tc.shape, tc.p, tc.offset, tc.running)
		})
	}
	t.Run("single value per channel panics", func(t *testing.T) {
		for _, shape := range []tensor.Shape{{1, 4}, {1, 3, 1, 1}} {
			x := dev.Alloc(tensor.Activations, shape...)
			y := dev.Alloc(tensor.Activations, shape...)
			c := shape[1]
			gamma, beta := dev.Alloc(tensor.Weights, c), dev.Alloc(tensor.Weights, c)
			mean, inv := dev.Alloc(tensor.Activations, c), dev.Alloc(tensor.Activations, c)
			msg := normPoolPanics(func() {
				dev.BatchNormTrain(x, gamma, beta, y, nil, nil, mean, inv, tensor.DefaultBatchNorm())
			})
			if !strings.Contains(msg, "more than 1 value per channel") {
				t.Errorf("x %v: got panic %q, want one saying a channel needs more than 1 value", shape, msg)
			}
			for _, tt := range []*tensor.Tensor{x, y, gamma, beta, mean, inv} {
				tt.Release()
			}
		}
	})
	t.Run("bad arguments panic", func(t *testing.T) {
		x := dev.Alloc(tensor.Activations, 2, 2, 3)
		x4 := dev.Alloc(tensor.Activations, 2, 2, 3, 3)
		c2, c3 := dev.Alloc(tensor.Weights, 2), dev.Alloc(tensor.Weights, 3)
		p := tensor.DefaultBatchNorm()
		if normPoolPanics(func() { dev.BatchNormEval(x, c2, c2, c2, c2, x, p) }) == "" {
			t.Error("3-D input: no panic")
		}
		if normPoolPanics(func() { dev.BatchNormTrain(x4, c3, c2, x4, nil, nil, c2, c2, p) }) == "" {
			t.Error("gamma of 3 values for 2 channels: no panic")
		}
		if normPoolPanics(func() { dev.BatchNormBackward(x4, x4, c2, c2, c2, x, c2, c2) }) == "" {
			t.Error("dx of another shape: no panic")
		}
		for _, tt := range []*tensor.Tensor{x, x4, c2, c3} {
			tt.Release()
		}
	})
}

// testBatchNormCase runs a training forward, its backward and an
// evaluation forward on one shape against the float64 reference.
func testBatchNormCase(t *testing.T, dev tensor.Device, shape tensor.Shape, p tensor.BatchNormParams, offset float32, running bool) {
	rng := newRand(uint64(shape.Numel()))
	n, c := shape[0], shape[1]
	hw := shape.Numel() / (n * c)
	xs := randSlice(rng, shape.Numel())
	for i := range xs {
		xs[i] += offset
	}
	gs, bs := randSlice(rng, c), randSlice(rng, c)
	rm0, rv0 := randSlice(rng, c), randSlice(rng, c)
	for i := range rv0 {
		rv0[i] = 1 + rv0[i]/2 // a variance, in [0.5, 1.5)
	}
	x := upload(dev, tensor.Activations, shape, xs)
	gamma := upload(dev, tensor.Weights, tensor.Shape{c}, gs)
	beta := upload(dev, tensor.Weights, tensor.Shape{c}, bs)
	defer x.Release()
	defer gamma.Release()
	defer beta.Release()

	// Training forward.
	y := newGuarded(dev, tensor.Activations, shape, nil)
	mean := newGuarded(dev, tensor.Activations, tensor.Shape{c}, nil)
	inv := newGuarded(dev, tensor.Activations, tensor.Shape{c}, nil)
	defer y.release()
	defer mean.release()
	defer inv.release()
	var runMean, runVar *guarded
	var rmT, rvT *tensor.Tensor
	var rm64, rv64 []float64
	if running {
		runMean = newGuarded(dev, tensor.Weights, tensor.Shape{c}, rm0)
		runVar = newGuarded(dev, tensor.Weights, tensor.Shape{c}, rv0)
		defer runMean.release()
		defer runVar.release()
		rmT, rvT = runMean.T, runVar.T
		rm64, rv64 = widen(rm0), widen(rv0)
	}
	dev.BatchNormTrain(x, gamma, beta, y.T, rmT, rvT, mean.T, inv.T, p)
	want := reference.BatchNormTrain(widen(xs), n, c, hw, widen(gs), widen(bs), rm64, rv64, p)
	compare(t, "train y", y.check(t, "train y"), want.Y, reductionRTol, reductionATol)
	savedMean, savedInv := mean.check(t, "saveMean"), inv.check(t, "saveInvStd")
	compare(t, "saveMean", savedMean, want.Mean, reductionRTol, reductionATol)
	compare(t, "saveInvStd", savedInv, want.InvStd, reductionRTol, reductionATol)
	if running {
		compare(t, "runMean", runMean.check(t, "runMean"), want.RunMean, reductionRTol, reductionATol)
		compare(t, "runVar", runVar.check(t, "runVar"), want.RunVar, reductionRTol, reductionATol)
	}

	// Backward from the statistics the forward saved, accumulating into
	// non-zero parameter gradients.
	dys := randSlice(rng, shape.Numel())
	dg0, db0 := randSlice(rng, c), randSlice(rng, c)
	dy := upload(dev, tensor.Activations, shape, dys)
	defer dy.Release()
	dx := newGuarded(dev, tensor.Activations, shape, nil)
	dgamma := newGuarded(dev, tensor.Gradients, tensor.Shape{c}, dg0)
	dbeta := newGuarded(dev, tensor.Gradients, tensor.Shape{c}, db0)
	defer dx.release()
	defer dgamma.release()
	defer dbeta.release()
	dev.BatchNormBackward(x, dy, gamma, mean.T, inv.T, dx.T, dgamma.T, dbeta.T)
	wdx, wdg, wdb := reference.BatchNormBackward(widen(xs), widen(dys), n, c, hw, widen(gs), widen(savedMean), widen(savedInv))
	for i := range wdg {
		wdg[i] += float64(dg0[i])
		wdb[i] += float64(db0[i])
	}
	compare(t, "dx", dx.check(t, "dx"), wdx, reductionRTol, reductionATol)
	compare(t, "dgamma", dgamma.check(t, "dgamma"), wdg, reductionRTol, reductionATol)
	compare(t, "dbeta", dbeta.check(t, "dbeta"), wdb, reductionRTol, reductionATol)

	// Evaluation with the initial running statistics.
	rm := upload(dev, tensor.Weights, tensor.Shape{c}, rm0)
	rv := upload(dev, tensor.Weights, tensor.Shape{c}, rv0)
	defer rm.Release()
	defer rv.Release()
	ye := newGuarded(dev, tensor.Activations, shape, nil)
	defer ye.release()
	dev.BatchNormEval(x, gamma, beta, rm, rv, ye.T, p)
	wantEval := reference.BatchNormEval(widen(xs), n, c, hw, widen(gs), widen(bs), widen(rm0), widen(rv0), p)
	compare(t, "eval y", ye.check(t, "eval y"), wantEval, reductionRTol, reductionATol)
	normPoolExact(t, "running mean after eval", tensor.ToHost(rm), widen(rm0))
	normPoolExact(t, "running var after eval", tensor.ToHost(rv), widen(rv0))
}

// normPoolPanics calls fn and returns the message it panicked with, or ""
// when it returned normally.
func normPoolPanics(fn func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
			if msg == "" {
				msg = "(empty panic)"
			}
		}
	}()
	fn()
	return ""
}
