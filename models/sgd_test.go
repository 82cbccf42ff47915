package models

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// bareDevice is a device with its optional capabilities hidden, so that
// package tensor composes the optimizer's step from Kernels on it.
type bareDevice struct{ tensor.Device }

// sgdDevices are the devices the SGD tests run on: the CPU backend, with
// its SGD kernels, and the same backend without them.
func sgdDevices(t *testing.T) []struct {
	name string
	dev  tensor.Device
} {
	dev := newDevice(t)
	return []struct {
		name string
		dev  tensor.Device
	}{{"cpu", dev}, {"composed", bareDevice{dev}}}
}

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
//
// It does so with the device's SGD kernel and with the step composed
// from Kernels.
func TestSGDAgainstTorch(t *testing.T) {
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
	for _, tc := range sgdDevices(t) {
		t.Run(tc.name, func(t *testing.T) {
			dev := tc.dev
			p := &Param{Name: "weight", Value: tensor.FromHost(dev, tensor.Weights, tensor.Shape{3}, []float32{1, -2, 0.5})}
			frozen := &Param{Name: "bias", Value: tensor.FromHost(dev, tensor.Weights, tensor.Shape{2}, []float32{3, 4})}
			params := []NamedParam{{"fc.weight", p}, {"fc.bias", frozen}}
			opt := NewSGD(tensor.SGDParams{LR: 0.1, Momentum: 0.9, WeightDecay: 1e-4})
			for step, g := range grads {
				dev.Upload(p.GradFor(dev), g)
				opt.Step(dev, params)
				compare(t, "weight after step "+fmt.Sprint(step+1), host(p.Value), wantW[step], 0, sgdTol)
				if len(p.State) != 1 {
					t.Fatalf("after step %d: got %d state slots, want 1", step+1, len(p.State))
				}
				compare(t, "momentum after step "+fmt.Sprint(step+1), host(p.State[0]), wantBuf[step], 0, sgdTol)
			}
			if got := opt.Steps(); got != 3 {
				t.Errorf("Steps: got %d, want 3", got)
			}
			// A parameter without a gradient is skipped, as torch skips
			// .grad None: no update, no momentum buffer.
			equalValues(t, "parameter without a gradient", host(frozen.Value), []float64{3, 4})
			if frozen.State != nil {
				t.Error("parameter without a gradient: a momentum buffer was allocated")
			}
			checkLive(t, dev, "momentum buffers", tensor.Optimizer, 3*tensor.BytesPerElement)
			p.Release()
			frozen.Release()
			checkNoLeak(t, dev)
		})
	}
}

// TestSGDWithoutMomentum checks plain SGD, w −= lr·(g + wd·w), keeps no
// state.
func TestSGDWithoutMomentum(t *testing.T) {
	for _, tc := range sgdDevices(t) {
		t.Run(tc.name, func(t *testing.T) {
			dev := tc.dev
			p := &Param{Name: "weight", Value: tensor.FromHost(dev, tensor.Weights, tensor.Shape{2}, []float32{1, -2})}
			dev.Upload(p.GradFor(dev), []float32{0.5, 0.25})
			opt := NewSGD(tensor.SGDParams{LR: 0.1, WeightDecay: 0.01})
			for range 2 {
				opt.Step(dev, []NamedParam{{"weight", p}})
			}
			// w1 = [1 − 0.1·0.51, −2 − 0.1·(0.25 − 0.02)] = [0.949, −2.023];
			// w2 = [0.949 − 0.1·(0.5 + 0.00949), −2.023 − 0.1·(0.25 − 0.02023)].
			compare(t, "weight", host(p.Value), []float64{0.949 - 0.050949, -2.023 - 0.022977}, 0, sgdTol)
			equalValues(t, "gradient", host(p.Grad), []float64{0.5, 0.25})
			if p.State != nil {
				t.Error("a momentum buffer was allocated without momentum")
			}
			checkLive(t, dev, "optimizer state", tensor.Optimizer, 0)
			p.Release()
			checkNoLeak(t, dev)
		})
	}
}

// TestSGDFirstStepSkipsDampening checks the first step's special case,
// visible only with dampening: torch sets the new buffer to d itself,
// not to (1 − dampening)·d.
func TestSGDFirstStepSkipsDampening(t *testing.T) {
	for _, tc := range sgdDevices(t) {
		t.Run(tc.name, func(t *testing.T) {
			dev := tc.dev
			p := &Param{Name: "weight", Value: tensor.FromHost(dev, tensor.Weights, tensor.Shape{1}, []float32{1})}
			dev.Upload(p.GradFor(dev), []float32{1})
			opt := NewSGD(tensor.SGDParams{LR: 1, Momentum: 0.5, Dampening: 0.5})
			opt.Step(dev, []NamedParam{{"weight", p}})
			// buf = d = 1; w = 1 − 1 = 0 (a dampened first step would
			// give 0.5).
			equalValues(t, "weight after step 1", host(p.Value), []float64{0})
			opt.Step(dev, []NamedParam{{"weight", p}})
			// buf = 0.5·1 + 0.5·1 = 1; w = 0 − 1.
			equalValues(t, "weight after step 2", host(p.Value), []float64{-1})
			p.Release()
			checkNoLeak(t, dev)
		})
	}
}

// TestSGDUpdateIsStepThenZeroGrads checks that Update gives the weights,
// buffers and zeroed gradients of Step followed by zeroing, bit for bit,
// on parameters that join the updates at different steps.
func TestSGDUpdateIsStepThenZeroGrads(t *testing.T) {
	for _, tc := range sgdDevices(t) {
		t.Run(tc.name, func(t *testing.T) {
			dev := tc.dev
			rng := newRand(21)
			sizes := []int{3, 1000, 7}
			newParams := func() []NamedParam {
				var ps []NamedParam
				for i, n := range sizes {
					v, _ := uploadRand(dev, tensor.Weights, rng, n)
					ps = append(ps, NamedParam{fmt.Sprint(i), &Param{Name: "weight", Value: v}})
				}
				return ps
			}
			updated, stepped := newParams(), newParams()
			for i := range sizes {
				dev.Copy(stepped[i].Param.Value, updated[i].Param.Value)
			}
			h := tensor.SGDParams{LR: 0.1, Momentum: 0.9, Dampening: 0.1, WeightDecay: 1e-4}
			byUpdate, byStep := NewSGD(h), NewSGD(h)
			for step := range 3 {
				for i, n := range sizes {
					if step < i { // parameter i has no gradient before step i
						continue
					}
					g := randSlice(rng, n)
					dev.Upload(updated[i].Param.GradFor(dev), g)
					dev.Upload(stepped[i].Param.GradFor(dev), g)
				}
				byUpdate.Update(dev, updated)
				byStep.Step(dev, stepped)
				for _, np := range stepped {
					if np.Param.Grad != nil {
						dev.Fill(np.Param.Grad, 0)
					}
				}
				for i := range sizes {
					u, s := updated[i].Param, stepped[i].Param
					what := fmt.Sprintf("step %d, parameter %d", step, i)
					sameValues(t, what+": weight", tensor.ToHost(u.Value), tensor.ToHost(s.Value))
					if (u.Grad == nil) != (s.Grad == nil) || (u.State == nil) != (s.State == nil) {
						t.Fatalf("%s: gradient or state allocated by one and not the other", what)
					}
					if u.Grad != nil {
						sameValues(t, what+": gradient", tensor.ToHost(u.Grad), tensor.ToHost(s.Grad))
						sameValues(t, what+": momentum", tensor.ToHost(u.State[0]), tensor.ToHost(s.State[0]))
					}
				}
			}
			if byUpdate.Steps() != 3 || byStep.Steps() != 3 {
				t.Errorf("Steps: got %d and %d, want 3", byUpdate.Steps(), byStep.Steps())
			}
			for _, ps := range [][]NamedParam{updated, stepped} {
				for _, np := range ps {
					np.Param.Release()
				}
			}
			checkNoLeak(t, dev)
		})
	}
}

func TestNewOptimizer(t *testing.T) {
	sgd := tensor.SGDParams{LR: 0.1, Momentum: 0.9}
	tests := []struct {
		name      string
		opt       string
		h         Hyper
		wantSlots int
		wantErr   string // "" for none
	}{
		{"sgd with momentum", "sgd", Hyper{SGD: sgd}, 1, ""},
		{"sgd without momentum", "sgd", Hyper{SGD: tensor.SGDParams{LR: 0.1}}, 0, ""},
		{"adamw", "adamw", Hyper{SGD: sgd, AdamW: tensor.DefaultAdamW()}, 2, ""},
		{"unknown", "lamb", Hyper{SGD: sgd}, 0, `optimizer "lamb": unknown, want one of adamw, sgd`},
		{"empty", "", Hyper{SGD: sgd}, 0, `optimizer "": unknown`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opt, err := NewOptimizer(tc.opt, tc.h)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := opt.Name(); got != tc.opt {
				t.Errorf("Name: got %q, want %q", got, tc.opt)
			}
			if got := opt.Slots(); got != tc.wantSlots {
				t.Errorf("Slots: got %d, want %d", got, tc.wantSlots)
			}
			switch o := opt.(type) {
			case *SGD:
				if o.SGDParams != tc.h.SGD {
					t.Errorf("got an SGD with %+v, want %+v", o.SGDParams, tc.h.SGD)
				}
			case *AdamW:
				if o.AdamWParams != tc.h.AdamW {
					t.Errorf("got an AdamW with %+v, want %+v", o.AdamWParams, tc.h.AdamW)
				}
			default:
				t.Errorf("got %#v, want an SGD or an AdamW", opt)
			}
		})
	}
}

// TestOptimizerNames checks that every name listed makes an optimizer
// that goes by it.
func TestOptimizerNames(t *testing.T) {
	names := OptimizerNames()
	if !slices.Contains(names, DefaultOptimizer) {
		t.Fatalf("got %q, want a list holding sgd", names)
	}
	for _, name := range names {
		opt, err := NewOptimizer(name, Hyper{})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if opt.Name() != name {
			t.Errorf("%s: got an optimizer named %q", name, opt.Name())
		}
	}
}
