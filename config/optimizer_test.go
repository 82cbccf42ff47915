package config

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/tensor"
)

// TestSweepOptimizerHyper checks how a sweep's hyper-parameters reach
// the optimizer it names, what the record says of them, and that
// FromRecord reads them back: an optimizer named alone has its own
// defaults (torch's, for AdamW), and values for another optimizer's
// hyper-parameters are ignored.
func TestSweepOptimizerHyper(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	tests := []struct {
		name      string
		change    func(s *Sweep)
		wantSGD   tensor.SGDParams
		wantAdamW tensor.AdamWParams
		// wantRecord is the record's optimizer fields.
		wantRecord string
	}{
		{"default", func(s *Sweep) {}, DefaultSGD(), tensor.DefaultAdamW(),
			`{"lr":0.01,"momentum":0.9,"weight_decay":0.0001}`},
		{"sgd with lr and weight decay", func(s *Sweep) { s.Optimizer, s.LR, s.WeightDecay = "sgd", 0.1, f(0) },
			tensor.SGDParams{LR: 0.1, Momentum: 0.9}, tensor.DefaultAdamW(),
			`{"lr":0.1,"momentum":0.9,"weight_decay":0}`},
		{"sgd ignores betas and eps", func(s *Sweep) { s.Betas, s.Eps = []float64{0.8, 0.9}, f(1e-3) },
			DefaultSGD(), tensor.DefaultAdamW(),
			`{"lr":0.01,"momentum":0.9,"weight_decay":0.0001}`},
		{"adamw alone", func(s *Sweep) { s.Optimizer = "adamw" }, DefaultSGD(), tensor.DefaultAdamW(),
			`{"optimizer":"adamw","lr":0.001,"momentum":0,"weight_decay":0.01,"betas":[0.9,0.999],"eps":1e-8}`},
		{"adamw with every value", func(s *Sweep) {
			s.Optimizer, s.LR, s.WeightDecay, s.Betas, s.Eps = "adamw", 3e-4, f(0.1), []float64{0.9, 0.95}, f(1e-6)
		}, DefaultSGD(), tensor.AdamWParams{LR: 3e-4, Beta1: 0.9, Beta2: 0.95, Eps: 1e-6, WeightDecay: 0.1},
			`{"optimizer":"adamw","lr":0.0003,"momentum":0,"weight_decay":0.1,"betas":[0.9,0.95],"eps":0.000001}`},
		{"adamw without weight decay", func(s *Sweep) { s.Optimizer, s.WeightDecay = "adamw", f(0) },
			DefaultSGD(), tensor.AdamWParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8},
			`{"optimizer":"adamw","lr":0.001,"momentum":0,"weight_decay":0,"betas":[0.9,0.999],"eps":1e-8}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Sweep{
				Models: []string{"mlp"}, Batches: []int{4}, Devices: []int{1}, Micro: []int{1},
				Schedules: []string{"gpipe"}, Balance: BalanceMACs, Backend: "cpu",
				SizeVariants: models.SizeVariants{Images: []int{0}, Classes: []int{0}, Widths: []float64{1}},
			}
			tc.change(&s)
			if err := s.Check(); err != nil {
				t.Fatal(err)
			}
			cfgs, _, err := s.Expand()
			if err != nil {
				t.Fatal(err)
			}
			c := cfgs[0]
			if c.SGD != tc.wantSGD || c.AdamW != tc.wantAdamW {
				t.Errorf("got SGD %+v, AdamW %+v; want %+v, %+v", c.SGD, c.AdamW, tc.wantSGD, tc.wantAdamW)
			}
			m, err := c.Describe()
			if err != nil {
				t.Fatal(err)
			}
			rc := c.RecordConfig(m.Config, 1, 0)
			got, err := json.Marshal(rc.OptimizerRecord)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.wantRecord {
				t.Errorf("record: got %s, want %s", got, tc.wantRecord)
			}
			back, err := FromRecord(&profiler.Record{ID: "r", Config: rc, Env: profiler.Environment{Backend: "cpu"}})
			if err != nil {
				t.Fatal(err)
			}
			if back.Optimizer != c.Optimizer || back.SGD != c.SGD || back.AdamW != c.AdamW {
				t.Errorf("read back %q %+v %+v, want %q %+v %+v", back.Optimizer, back.SGD, back.AdamW, c.Optimizer, c.SGD, c.AdamW)
			}
		})
	}
}

// TestSweepHyperChecks checks that a sweep refuses hyper-parameters
// torch.optim refuses.
func TestSweepHyperChecks(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	tests := []struct {
		name   string
		change func(s *Sweep)
		field  string
		reason string
	}{
		{"negative lr", func(s *Sweep) { s.LR = -1 }, "lr", "positive"},
		{"negative weight decay", func(s *Sweep) { s.WeightDecay = f(-0.1) }, "weight-decay", "at least 0"},
		{"eps of NaN", func(s *Sweep) { s.Eps = f(math.NaN()) }, "eps", "at least 0"},
		{"one beta", func(s *Sweep) { s.Betas = []float64{0.9} }, "betas", "two values"},
		{"beta of 1", func(s *Sweep) { s.Betas = []float64{0.9, 1} }, "betas", "[0, 1)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Sweep{
				Models: []string{"mlp"}, Batches: []int{4}, Devices: []int{1}, Micro: []int{1},
				Schedules: []string{"gpipe"}, Balance: BalanceMACs, Backend: "cpu", Optimizer: "adamw",
			}
			tc.change(&s)
			var fe *FieldError
			if err := s.Check(); !errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(fe.Reason, tc.reason) {
				t.Errorf("got %v, want a FieldError on %s saying %q", err, tc.field, tc.reason)
			}
		})
	}
}
