package models

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/meta"
	"github.com/pipecast/pipecast/tensor/reference"
)

// TestAdamWAgainstReference runs three steps of AdamW on two parameters,
// one of which has no gradient at the first step and so counts its own
// steps from the second (its bias corrections are those of steps 1 and
// 2), and a third that never has one, and compares with the float64
// reference. It does so with the device's AdamW kernel and with the
// fallback on host copies.
func TestAdamWAgainstReference(t *testing.T) {
	h := tensor.AdamWParams{LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1}
	for _, tc := range sgdDevices(t) {
		t.Run(tc.name, func(t *testing.T) {
			dev := tc.dev
			rng := newRand(31)
			sizes := []int{3, 1000}
			var params []NamedParam
			var wantW, wantM, wantV [][]float64
			for i, n := range sizes {
				v, w := uploadRand(dev, tensor.Weights, rng, n)
				params = append(params, NamedParam{fmt.Sprintf("fc%d.weight", i), &Param{Name: "weight", Value: v}})
				wantW, wantM, wantV = append(wantW, w), append(wantM, make([]float64, n)), append(wantV, make([]float64, n))
			}
			frozen := &Param{Name: "bias", Value: tensor.FromHost(dev, tensor.Weights, tensor.Shape{2}, []float32{3, 4})}
			params = append(params, NamedParam{"fc.bias", frozen})
			opt := NewAdamW(h)
			counts := make([]int, len(sizes))
			for step := range 3 {
				for i, n := range sizes {
					if step < i { // parameter i has no gradient before step i
						continue
					}
					g := randSlice(rng, n)
					dev.Upload(params[i].Param.GradFor(dev), g)
					counts[i]++
					reference.AdamWStep(wantW[i], widen(g), wantM[i], wantV[i], h, counts[i])
				}
				opt.Step(dev, params)
				for i := range sizes {
					p := params[i].Param
					what := fmt.Sprintf("step %d, parameter %d", step+1, i)
					if step < i {
						if p.State != nil {
							t.Fatalf("%s: moments allocated before the parameter had a gradient", what)
						}
						continue
					}
					if len(p.State) != 2 {
						t.Fatalf("%s: got %d state slots, want 2", what, len(p.State))
					}
					compare(t, what+": weight", host(p.Value), wantW[i], adamwTol, adamwTol)
					compare(t, what+": exp_avg", host(p.State[0]), wantM[i], adamwTol, adamwTol)
					compare(t, what+": exp_avg_sq", host(p.State[1]), wantV[i], adamwTol, 0)
				}
			}
			if got := opt.Steps(); got != 3 {
				t.Errorf("Steps: got %d, want 3", got)
			}
			equalValues(t, "parameter without a gradient", host(frozen.Value), []float64{3, 4})
			if frozen.State != nil {
				t.Error("parameter without a gradient: moments were allocated")
			}
			checkLive(t, dev, "moments", tensor.Optimizer, 2*int64(3+1000)*tensor.BytesPerElement)
			for _, np := range params {
				np.Param.Release()
			}
			checkNoLeak(t, dev)
		})
	}
}

// TestAdamWStepsTiedParameterOnce checks that a parameter listed under
// two names, as a tied one is, is stepped once a call and counts one step.
func TestAdamWStepsTiedParameterOnce(t *testing.T) {
	dev := newDevice(t)
	rng := newRand(37)
	v, w := uploadRand(dev, tensor.Weights, rng, 5)
	p := &Param{Name: "weight", Value: v}
	params := []NamedParam{{"wte.weight", p}, {"lm_head.weight", p}}
	h := tensor.DefaultAdamW()
	opt := NewAdamW(h)
	m, vv := make([]float64, 5), make([]float64, 5)
	for step := 1; step <= 2; step++ {
		g := randSlice(rng, 5)
		dev.Upload(p.GradFor(dev), g)
		opt.Update(dev, params)
		reference.AdamWStep(w, widen(g), m, vv, h, step)
		compare(t, fmt.Sprintf("weight after step %d", step), host(p.Value), w, adamwTol, adamwTol)
	}
	p.Release()
	checkNoLeak(t, dev)
}

// TestAdamWUpdateIsStepThenZeroGrads checks that Update gives the
// weights, moments and zeroed gradients of Step followed by zeroing, bit
// for bit, on parameters that join the updates at different steps.
func TestAdamWUpdateIsStepThenZeroGrads(t *testing.T) {
	for _, tc := range sgdDevices(t) {
		t.Run(tc.name, func(t *testing.T) {
			dev := tc.dev
			rng := newRand(23)
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
			byUpdate, byStep := NewAdamW(tensor.DefaultAdamW()), NewAdamW(tensor.DefaultAdamW())
			for step := range 3 {
				for i, n := range sizes {
					if step < i {
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
						sameValues(t, what+": exp_avg", tensor.ToHost(u.State[0]), tensor.ToHost(s.State[0]))
						sameValues(t, what+": exp_avg_sq", tensor.ToHost(u.State[1]), tensor.ToHost(s.State[1]))
					}
				}
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

// TestAdamWMetaMemory checks that on the meta backend, whose replay of a
// step is how forecasts get their memory, AdamW's two moments per
// parameter are accounted as optimizer memory: twice the weights' bytes,
// once allocated and after further updates.
func TestAdamWMetaMemory(t *testing.T) {
	dev := meta.New()
	defer dev.Close()
	m, err := Build(dev, "mlp", Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	params := Params(m.Net)
	for _, np := range params {
		np.Param.GradFor(dev)
	}
	opt := NewAdamW(tensor.DefaultAdamW())
	weights := m.Params() * tensor.BytesPerElement
	if got := dev.Memory().LiveBytes[tensor.Weights]; got != weights {
		t.Fatalf("weights: %d live bytes, want %d (%d parameters)", got, weights, m.Params())
	}
	for step := range 2 {
		opt.Update(dev, params)
		if got := dev.Memory().LiveBytes[tensor.Optimizer]; got != 2*weights {
			t.Errorf("after update %d: %d optimizer bytes, want 2 × %d weight bytes", step+1, got, weights)
		}
	}
}

func TestOptimizerRecord(t *testing.T) {
	h := Hyper{
		SGD:   tensor.SGDParams{LR: 0.01, Momentum: 0.9, WeightDecay: 1e-4},
		AdamW: tensor.AdamWParams{LR: 3e-4, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1},
	}
	tests := []struct {
		name     string
		wantJSON string
	}{
		{"sgd", `{"lr":0.01,"momentum":0.9,"weight_decay":0.0001}`},
		{"adamw", `{"optimizer":"adamw","lr":0.0003,"momentum":0,"weight_decay":0.1,"betas":[0.9,0.95],"eps":1e-8}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := h.Record(tc.name)
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.wantJSON {
				t.Errorf("record: got %s, want %s", b, tc.wantJSON)
			}
			if err := r.Check(); err != nil {
				t.Errorf("Check: %v", err)
			}
			// Read back over an empty Hyper: the named optimizer's
			// hyper-parameters come back exactly, the other's stay zero.
			name, back := r.Hyper(Hyper{})
			want := Hyper{}
			switch tc.name {
			case "sgd":
				want.SGD = h.SGD
			case "adamw":
				want.AdamW = h.AdamW
			}
			if name != tc.name || back != want {
				t.Errorf("read back: got %q %+v, want %q %+v", name, back, tc.name, want)
			}
		})
	}
	// A record without betas keeps base's.
	base := Hyper{AdamW: tensor.DefaultAdamW()}
	if _, got := (OptimizerRecord{Optimizer: "adamw", LR: 0.1}).Hyper(base); got.AdamW.Beta1 != 0.9 || got.AdamW.Beta2 != 0.999 || got.AdamW.LR != 0.1 {
		t.Errorf("record without betas: got %+v, want base's betas and lr 0.1", got.AdamW)
	}
	if err := (OptimizerRecord{Betas: []float64{0.9}}).Check(); err == nil || !strings.Contains(err.Error(), "pair") {
		t.Errorf("one beta: got %v, want an error", err)
	}
}
