package models

import (
	"fmt"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// TestSGDAgainstTorch runs three steps of SGD(lr=0.1, momentum=0.9,
// weight_decay=1e-4) on a three-element parameter and compares with the
// sequence torch.optim.SGD produces, worked out exactly by hand:
//
//	step 1: d = g + 1e-4·w = [0.5001, −0.2502, 0.00005]; buf = d (first
//	        step); w −= 0.1·buf → [0.94999, −1.97498, 0.499995]
//	step 2: d = [0.100094999, 0.199802502, −0.2999500005];
//	        buf = 0.9·buf + d = [0.550184999, −0.025377498, −0.2999050005];
//	        w → [0.8949715001, −1.9724422502, 0.52998550005]
//	step 3: d = [−0.39991050284999, −0.00019724422502, 0.050052998550005];
//	        buf = [0.09525599625001, −0.02303699242502, −0.219861501899995];
//	        w → [0.885445900474999, −1.970138550957498, 0.5519716502399995]
func TestSGDAgainstTorch(t *testing.T) {
	dev := newDevice(t)
	grads := [][]float32{{0.5, -0.25, 0}, {0.1, 0.2, -0.3}, {-0.4, 0, 0.05}}
	wantW := [][]float64{
		{0.94999, -1.97498, 0.499995},
		{0.8949715001, -1.9724422502, 0.52998550005},
		{0.885445900474999, -1.970138550957498, 0.5519716502399995},
	}
	wantBuf := [][]float64{
		{0.5001, -0.2502, 5e-05},
		{0.550184999, -0.025377498, -0.2999050005},
		{0.09525599625001, -0.02303699242502, -0.219861501899995},
	}
	p := &Param{Name: "weight", Value: tensor.FromHost(dev, tensor.Weights, tensor.Shape{3}, []float32{1, -2, 0.5})}
	frozen := &Param{Name: "bias", Value: tensor.FromHost(dev, tensor.Weights, tensor.Shape{2}, []float32{3, 4})}
	params := []NamedParam{{"fc.weight", p}, {"fc.bias", frozen}}
	opt := NewSGD(tensor.SGDParams{LR: 0.1, Momentum: 0.9, WeightDecay: 1e-4})
	for step, g := range grads {
		dev.Upload(p.GradFor(dev), g)
		opt.Step(dev, params)
		compare(t, "weight after step "+fmt.Sprint(step+1), host(p.Value), wantW[step], 0, sgdTol)
		compare(t, "momentum after step "+fmt.Sprint(step+1), host(p.Momentum), wantBuf[step], 0, sgdTol)
	}
	if opt.Steps != 3 {
		t.Errorf("Steps: got %d, want 3", opt.Steps)
	}
	// A parameter without a gradient is skipped, as torch skips .grad
	// None: no update, no momentum buffer.
	equalValues(t, "parameter without a gradient", host(frozen.Value), []float64{3, 4})
	if frozen.Momentum != nil {
		t.Error("parameter without a gradient: a momentum buffer was allocated")
	}
	checkLive(t, dev, "momentum buffers", tensor.Optimizer, 3*tensor.BytesPerElement)
	p.Release()
	frozen.Release()
	checkNoLeak(t, dev)
}

// TestSGDWithoutMomentum checks plain SGD, w −= lr·(g + wd·w), keeps no
// state.
func TestSGDWithoutMomentum(t *testing.T) {
	dev := newDevice(t)
	p := &Param{Name: "weight", Value: tensor.FromHost(dev, tensor.Weights, tensor.Shape{2}, []float32{1, -2})}
	dev.Upload(p.GradFor(dev), []float32{0.5, 0.25})
	opt := NewSGD(tensor.SGDParams{LR: 0.1, WeightDecay: 0.01})
	for range 2 {
		opt.Step(dev, []NamedParam{{"weight", p}})
	}
	// w1 = [1 − 0.1·0.51, −2 − 0.1·(0.25 − 0.02)] = [0.949, −2.023];
	// w2 = [0.949 − 0.1·(0.5 + 0.00949), −2.023 − 0.1·(0.25 − 0.02023)].
	compare(t, "weight", host(p.Value), []float64{0.949 - 0.050949, -2.023 - 0.022977}, 0, sgdTol)
	if p.Momentum != nil {
		t.Error("a momentum buffer was allocated without momentum")
	}
	checkLive(t, dev, "optimizer state", tensor.Optimizer, 0)
	p.Release()
	checkNoLeak(t, dev)
}

// TestSGDFirstStepSkipsDampening checks the first step's special case,
// visible only with dampening: torch sets the new buffer to d itself,
// not to (1 − dampening)·d.
func TestSGDFirstStepSkipsDampening(t *testing.T) {
	dev := newDevice(t)
	p := &Param{Name: "weight", Value: tensor.FromHost(dev, tensor.Weights, tensor.Shape{1}, []float32{1})}
	dev.Upload(p.GradFor(dev), []float32{1})
	opt := NewSGD(tensor.SGDParams{LR: 1, Momentum: 0.5, Dampening: 0.5})
	opt.Step(dev, []NamedParam{{"weight", p}})
	// buf = d = 1; w = 1 − 1 = 0 (a dampened first step would give 0.5).
	equalValues(t, "weight after step 1", host(p.Value), []float64{0})
	opt.Step(dev, []NamedParam{{"weight", p}})
	// buf = 0.5·1 + 0.5·1 = 1; w = 0 − 1.
	equalValues(t, "weight after step 2", host(p.Value), []float64{-1})
	p.Release()
	checkNoLeak(t, dev)
}
