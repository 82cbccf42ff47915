package tensortest

import (
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/reference"
)

// testBatchNormReLU checks tensor.BatchNormReLUTrain and
// tensor.BatchNormReLUBackward along each route (capability.go): the
// device's fused kernels where it has them, and always the two kernels
// apart.
func testBatchNormReLU(t *testing.T, dev tensor.Device) {
	tests := []struct {
		name    string
		shape   tensor.Shape
		running bool // update running statistics
	}{
		{"batch 1 spatial 5x7", tensor.Shape{1, 3, 5, 7}, true},
		{"batch 3 odd sizes", tensor.Shape{3, 5, 7, 3}, true},
		{"[N,C] input", tensor.Shape{6, 11}, true},
		{"nil running stats", tensor.Shape{4, 3, 3, 5}, false},
		{"channels split across threads", tensor.Shape{2, 9, 32, 32}, true},
		{"[N,C] blocks split across threads", tensor.Shape{64, 300}, true},
	}
	_, fused := dev.(tensor.BatchNormReLUKernels)
	for _, r := range routes(dev, fused) {
		for _, tc := range tests {
			t.Run(r.name+"/"+tc.name, func(t *testing.T) {
				testBatchNormReLUCase(t, r.dev, tc.shape, tc.running)
			})
		}
	}
}

// testBatchNormReLUCase runs a fused training forward and its backward
// on one shape against the float64 references of batch norm and ReLU.
func testBatchNormReLUCase(t *testing.T, dev tensor.Device, shape tensor.Shape, running bool) {
	rng := newRand(uint64(shape.Numel()) + 17)
	p := tensor.DefaultBatchNorm()
	n, c := shape[0], shape[1]
	hw := shape.Numel() / (n * c)
	xs := randSlice(rng, shape.Numel())
	gs, bs := randSlice(rng, c), randSlice(rng, c)
	x := upload(dev, tensor.Activations, shape, xs)
	gamma := upload(dev, tensor.Weights, tensor.Shape{c}, gs)
	beta := upload(dev, tensor.Weights, tensor.Shape{c}, bs)
	defer x.Release()
	defer gamma.Release()
	defer beta.Release()

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
		rm0, rv0 := randSlice(rng, c), randSlice(rng, c)
		for i := range rv0 {
			rv0[i] = 1 + rv0[i]/2 // a variance, in [0.5, 1.5)
		}
		runMean = newGuarded(dev, tensor.Weights, tensor.Shape{c}, rm0)
		runVar = newGuarded(dev, tensor.Weights, tensor.Shape{c}, rv0)
		defer runMean.release()
		defer runVar.release()
		rmT, rvT = runMean.T, runVar.T
		rm64, rv64 = widen(rm0), widen(rv0)
	}
	tensor.BatchNormReLUTrain(dev, x, gamma, beta, y.T, rmT, rvT, mean.T, inv.T, p)
	want := reference.BatchNormTrain(widen(xs), n, c, hw, widen(gs), widen(bs), rm64, rv64, p)
	gotY := y.check(t, "y")
	compare(t, "y", gotY, reference.ReLU(want.Y), reductionRTol, reductionATol)
	savedMean, savedInv := mean.check(t, "saveMean"), inv.check(t, "saveInvStd")
	compare(t, "saveMean", savedMean, want.Mean, reductionRTol, reductionATol)
	compare(t, "saveInvStd", savedInv, want.InvStd, reductionRTol, reductionATol)
	if running {
		compare(t, "runMean", runMean.check(t, "runMean"), want.RunMean, reductionRTol, reductionATol)
		compare(t, "runVar", runVar.check(t, "runVar"), want.RunVar, reductionRTol, reductionATol)
	}

	// Backward through the forward's output, accumulating into non-zero
	// parameter gradients. The reference masks with the device's own y,
	// so that a value rounded to the other side of 0 than the float64
	// one does not count as an error of the backward.
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
	tensor.BatchNormReLUBackward(dev, x, y.T, dy, gamma, mean.T, inv.T, dx.T, dgamma.T, dbeta.T)
	dr := reference.ReLUBackward(widen(gotY), widen(dys))
	wdx, wdg, wdb := reference.BatchNormBackward(widen(xs), dr, n, c, hw, widen(gs), widen(savedMean), widen(savedInv))
	for i := range wdg {
		wdg[i] += float64(dg0[i])
		wdb[i] += float64(db0[i])
	}
	compare(t, "dx", dx.check(t, "dx"), wdx, reductionRTol, reductionATol)
	compare(t, "dgamma", dgamma.check(t, "dgamma"), wdg, reductionRTol, reductionATol)
	compare(t, "dbeta", dbeta.check(t, "dbeta"), wdb, reductionRTol, reductionATol)
	sameBits(t, "y after the backward", tensor.ToHost(y.T), gotY)
}
