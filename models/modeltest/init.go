package modeltest

import (
	"fmt"
	"math"
	"testing"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/tensor"
)

// Dist is a distribution a tensor's initial values are drawn from: its
// mean and standard deviation, and bounds every value lies within.
type Dist struct {
	Mean, Std float64 // Std 0: every value is Mean
	Lo, Hi    float64
}

// Const is the constant v (torch's nn.init.constant_).
func Const(v float64) Dist { return Dist{Mean: v, Lo: v, Hi: v} }

// Normal is N(mean, std²) (nn.init.normal_, kaiming_normal_).
func Normal(mean, std float64) Dist {
	return Dist{Mean: mean, Std: std, Lo: math.Inf(-1), Hi: math.Inf(1)}
}

// Uniform is U(lo, hi) (nn.init.uniform_, kaiming_uniform_).
func Uniform(lo, hi float64) Dist {
	return Dist{Mean: (lo + hi) / 2, Std: (hi - lo) / math.Sqrt(12), Lo: lo, Hi: hi}
}

// TruncNormal is N(mean, std²) conditioned on [a, b]
// (nn.init.trunc_normal_).
func TruncNormal(mean, std, a, b float64) Dist {
	m, s := TruncNormalMoments(mean, std, a, b)
	return Dist{Mean: m, Std: s, Lo: a, Hi: b}
}

// TorchDefault is torch's default initialisation of a convolution's or
// linear layer's weight and bias, kaiming_uniform_ with a = √5 and its
// bias rule: both U(±1/√fan_in).
func TorchDefault(fanIn int) Dist {
	b := 1 / math.Sqrt(float64(fanIn))
	return Uniform(-b, b)
}

// check returns why v is not a sample of d, or nil. Bounds are compared
// in float32, where the drawn values were rounded (a draw just inside a
// bound may round onto the bound's float32 value, never beyond it).
func (d Dist) check(v []float32) error {
	lo, hi := float32(d.Lo), float32(d.Hi)
	for i, e := range v {
		if d.Std == 0 && float64(e) != d.Mean {
			return fmt.Errorf("element %d is %v, want %v", i, e, d.Mean)
		}
		if e < lo || e > hi || e != e {
			return fmt.Errorf("element %d is %v, outside [%v, %v]", i, e, d.Lo, d.Hi)
		}
	}
	if d.Std == 0 {
		return nil
	}
	return MomentErr(v, d.Mean, d.Std)
}

// torchBatchNorm is torch's default batch norm: γ = 1, β = 0.
func torchBatchNorm(_ string, l models.Layer, param string) (Dist, bool) {
	if _, ok := l.(*models.BatchNorm2D); !ok {
		return Dist{}, false
	}
	return map[string]Dist{"weight": Const(1), "bias": Const(0)}[param], true
}

// testInit checks every parameter against the distribution c.Init.Rule
// gives, on its own and pooled with the others drawn from the same one,
// and every batch norm's running statistics: mean 0, variance 1, no
// batches tracked. A tied parameter is checked once, at its first use.
func testInit(t *testing.T, c *Case) {
	dev := NewDevice(t)
	m, err := models.Build(dev, c.Model, or(c.Init.Config, c.Config), NewRand(4))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		m.Release()
		CheckNoLeak(t, dev)
	}()
	pooled := map[Dist][]float32{}
	tensors := map[Dist]int{}
	checked := 0
	seen := map[*models.Param]bool{}
	models.Walk(m.Net, func(path string, l models.Layer) {
		for _, p := range l.Params() {
			if seen[p] {
				continue
			}
			seen[p] = true
			name := path + "." + p.Name
			d, ok := Dist{}, false
			if c.Init.Rule != nil {
				d, ok = c.Init.Rule(path, l, p.Name)
			}
			if !ok {
				d, ok = torchBatchNorm(path, l, p.Name)
			}
			if !ok {
				t.Errorf("%s: no initialisation rule for a %T's %s", name, l, p.Name)
				continue
			}
			checked++
			v := tensor.ToHost(p.Value)
			if err := d.check(v); err != nil {
				t.Errorf("%s (%+v): %v", name, d, err)
			}
			pooled[d] = append(pooled[d], v...)
			tensors[d]++
		}
		for _, b := range l.Buffers() {
			name := path + "." + b.Name
			switch {
			case b.Count != nil:
				if *b.Count != 0 {
					t.Errorf("%s: got %d, want 0", name, *b.Count)
				}
			case b.Name == "running_mean":
				EqualValues(t, name, Host(b.Value), make([]float64, b.Value.Len()))
			case b.Name == "running_var":
				if err := Const(1).check(tensor.ToHost(b.Value)); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
		}
	})
	if want := len(models.Params(m.Net)); checked != want {
		t.Errorf("checked %d parameters, want %d", checked, want)
	}
	// Together, tensors drawn alike give a sample large enough to tell
	// a rule off by a few per cent.
	for d, v := range pooled {
		if tensors[d] > 1 && d.Std > 0 {
			if err := MomentErr(v, d.Mean, d.Std); err != nil {
				t.Errorf("the %d tensors drawn from %+v together: %v", tensors[d], d, err)
			}
		}
	}
}
