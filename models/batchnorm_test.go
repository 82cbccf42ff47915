package models

import (
	"math"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// channelStats returns the mean, biased variance and unbiased variance of
// each channel of x [n, c, hw], computed here directly so that the test
// does not lean on the reference it checks against.
func channelStats(x []float64, n, c, hw int) (mean, biased, unbiased []float64) {
	m := float64(n * hw)
	mean, biased, unbiased = make([]float64, c), make([]float64, c), make([]float64, c)
	for ch := 0; ch < c; ch++ {
		var s, sq float64
		for i := 0; i < n; i++ {
			for _, v := range x[(i*c+ch)*hw : (i*c+ch+1)*hw] {
				s += v
			}
		}
		mean[ch] = s / m
		for i := 0; i < n; i++ {
			for _, v := range x[(i*c+ch)*hw : (i*c+ch+1)*hw] {
				sq += (v - mean[ch]) * (v - mean[ch])
			}
		}
		biased[ch], unbiased[ch] = sq/m, sq/(m-1)
	}
	return mean, biased, unbiased
}

// TestBatchNormRunningStats checks torch's bookkeeping: each training
// forward blends the batch mean and the unbiased variance into the
// running statistics with the momentum and counts itself in
// num_batches_tracked; a FreezeStats forward normalises with the batch's
// statistics but changes neither; evaluation normalises with the running
// statistics.
func TestBatchNormRunningStats(t *testing.T) {
	dev := newDevice(t)
	rng := newRand(7)
	const n, c, h, w = 3, 2, 2, 3 // 18 values per channel: unbiased = 18/17 × biased
	bn := NewBatchNorm2D(dev, c, tensor.BatchNormParams{Momentum: 0.25, Eps: 1e-5})
	Uniform(dev, bn.Weight.Value, 0.5, 1.5, rng)
	Uniform(dev, bn.Bias.Value, -1, 1, rng)
	gamma, beta := host(bn.Weight.Value), host(bn.Bias.Value)
	train := &Pass{Dev: dev, Train: true}

	wantMean, wantVar := []float64{0, 0}, []float64{1, 1}
	var lastY []float64
	var lastX *tensor.Tensor
	for step := 1; step <= 2; step++ {
		x, xv := uploadRand(dev, tensor.Boundary, rng, n, c, h, w)
		// Shift channel 1 so that its mean is far from 0.
		for i := 0; i < n; i++ {
			for k := (i*c + 1) * h * w; k < (i*c+2)*h*w; k++ {
				xv[k] += 3
			}
		}
		dev.Upload(x, toFloat32(xv))
		y, _ := bn.Forward(train, x)
		mean, biased, unbiased := channelStats(xv, n, c, h*w)
		for ch := 0; ch < c; ch++ {
			wantMean[ch] = 0.75*wantMean[ch] + 0.25*mean[ch]
			wantVar[ch] = 0.75*wantVar[ch] + 0.25*unbiased[ch]
		}
		compare(t, "running_mean", host(bn.RunningMean.Value), wantMean, layerRTol, layerATol)
		compare(t, "running_var (unbiased)", host(bn.RunningVar.Value), wantVar, layerRTol, layerATol)
		if got := *bn.NumBatchesTracked.Count; got != int64(step) {
			t.Errorf("num_batches_tracked after %d forwards: got %d, want %d", step, got, step)
		}
		lastY = make([]float64, len(xv))
		for i := range xv {
			ch := (i / (h * w)) % c
			lastY[i] = (xv[i]-mean[ch])/math.Sqrt(biased[ch]+1e-5)*gamma[ch] + beta[ch]
		}
		compare(t, "y (batch statistics, biased variance)", host(y), lastY, layerRTol, layerATol)
		y.Release()
		lastX.Release()
		lastX = x
	}

	runMean, runVar := host(bn.RunningMean.Value), host(bn.RunningVar.Value)
	frozen := &Pass{Dev: dev, Train: true, FreezeStats: true}
	y, _ := bn.Forward(frozen, lastX)
	compare(t, "y with frozen statistics", host(y), lastY, layerRTol, layerATol)
	y.Release()
	equalValues(t, "running_mean after a FreezeStats forward", host(bn.RunningMean.Value), runMean)
	equalValues(t, "running_var after a FreezeStats forward", host(bn.RunningVar.Value), runVar)
	if got := *bn.NumBatchesTracked.Count; got != 2 {
		t.Errorf("num_batches_tracked after a FreezeStats forward: got %d, want 2", got)
	}

	y, _ = bn.Forward(&Pass{Dev: dev}, lastX)
	xv := host(lastX)
	want := make([]float64, len(xv))
	for i := range xv {
		ch := (i / (h * w)) % c
		want[i] = (xv[i]-runMean[ch])/math.Sqrt(runVar[ch]+1e-5)*gamma[ch] + beta[ch]
	}
	got := host(y)
	compare(t, "y in evaluation (running statistics)", got, want, layerRTol, layerATol)
	if maxAbs(sub(got, lastY)) < 0.1 {
		t.Error("evaluation output equals the training output: running statistics unused")
	}
	y.Release()
	equalValues(t, "running_mean after an evaluation forward", host(bn.RunningMean.Value), runMean)
	if got := *bn.NumBatchesTracked.Count; got != 2 {
		t.Errorf("num_batches_tracked after an evaluation forward: got %d, want 2", got)
	}
	ReleaseLayer(bn)
	lastX.Release()
	checkNoLeak(t, dev)
}

// TestBatchNormSingleValuePanics checks that a training forward on one
// value per channel panics, as torch raises, rather than dividing by zero
// in the unbiased variance.
func TestBatchNormSingleValuePanics(t *testing.T) {
	dev := newDevice(t)
	bn := NewBatchNorm2D(dev, 3, tensor.DefaultBatchNorm())
	for _, shape := range []tensor.Shape{{1, 3}, {1, 3, 1, 1}} {
		x := dev.Alloc(tensor.Boundary, shape...)
		mustPanic(t, "batch norm of "+shape.String()+" in training", "more than 1 value per channel", func() {
			bn.Forward(&Pass{Dev: dev, Train: true}, x)
		})
		x.Release()
	}
	if got := *bn.NumBatchesTracked.Count; got != 0 {
		t.Errorf("num_batches_tracked after failed forwards: got %d, want 0", got)
	}
	ReleaseLayer(bn)
	checkNoLeak(t, dev)
}

func toFloat32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, e := range v {
		out[i] = float32(e)
	}
	return out
}

func sub(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] - b[i]
	}
	return out
}
