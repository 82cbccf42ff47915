package models

import (
	"fmt"
	"math"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// momentSE is how many standard errors a sample mean or variance may lie
// from its expected value: a correct initialiser fails a 5-SE check with
// probability about 6e-7 per statistic, while the tests' sample sizes
// (≥ 1e4) put a 5 % error in the scale at tens of standard errors.
const momentSE = 5

// momentErr reports whether the sample v has mean and standard deviation
// consistent with want. The mean's standard error is std/√n; the
// variance's is √((m4 − s⁴)/n) with the sample's fourth central moment
// m4, the asymptotic standard error of a sample variance of any
// distribution.
func momentErr(v []float32, mean, std float64) error {
	n := float64(len(v))
	var m float64
	for _, x := range v {
		m += float64(x)
	}
	m /= n
	var s2, m4 float64
	for _, x := range v {
		d := float64(x) - m
		s2 += d * d
		m4 += d * d * d * d
	}
	s2 /= n
	m4 /= n
	if se := std / math.Sqrt(n); math.Abs(m-mean) > momentSE*se {
		return fmt.Errorf("mean %.6g, want %.6g ± %.3g", m, mean, momentSE*se)
	}
	if se := math.Sqrt((m4 - s2*s2) / n); math.Abs(s2-std*std) > momentSE*se {
		return fmt.Errorf("std %.6g, want %.6g (variance %.6g, want %.6g ± %.3g)", math.Sqrt(s2), std, s2, std*std, momentSE*se)
	}
	return nil
}

// truncNormalMoments returns the mean and standard deviation of N(mean,
// std²) conditioned on [a, b] (Johnson, Kotz and Balakrishnan,
// "Continuous Univariate Distributions", vol. 1, §10.1).
func truncNormalMoments(mean, std, a, b float64) (float64, float64) {
	phi := func(z float64) float64 { return math.Exp(-z*z/2) / math.Sqrt(2*math.Pi) }
	cdf := func(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }
	al, be := (a-mean)/std, (b-mean)/std
	z := cdf(be) - cdf(al)
	d := (phi(al) - phi(be)) / z
	v := 1 + (al*phi(al)-be*phi(be))/z - d*d
	return mean + std*d, std * math.Sqrt(v)
}

func TestInitialisers(t *testing.T) {
	dev := newDevice(t)
	conv := tensor.Shape{64, 32, 3, 3} // fan_in 288, fan_out 576
	tm1, ts1 := truncNormalMoments(0.2, 1, -0.5, 1)
	tm2, ts2 := truncNormalMoments(0, 1, 1, 3)
	tests := []struct {
		name      string
		shape     tensor.Shape
		fill      func(t *tensor.Tensor, seed uint64)
		mean, std float64
		lo, hi    float64 // every value must lie in [lo, hi]
	}{
		{"uniform", tensor.Shape{100, 200}, func(x *tensor.Tensor, s uint64) { Uniform(dev, x, -0.3, 0.7, newRand(s)) },
			0.2, 1 / math.Sqrt(12), -0.3, 0.7},
		{"normal", tensor.Shape{20000}, func(x *tensor.Tensor, s uint64) { Normal(dev, x, 0.5, 2, newRand(s)) },
			0.5, 2, math.Inf(-1), math.Inf(1)},
		{"truncated normal, asymmetric bounds", tensor.Shape{20000}, func(x *tensor.Tensor, s uint64) { TruncatedNormal(dev, x, 0.2, 1, -0.5, 1, newRand(s)) },
			tm1, ts1, -0.5, 1},
		{"truncated normal, a tail", tensor.Shape{20000}, func(x *tensor.Tensor, s uint64) { TruncatedNormal(dev, x, 0, 1, 1, 3, newRand(s)) },
			tm2, ts2, 1, 3},
		{"truncated normal, inception's std 0.1 on [-2, 2]", tensor.Shape{20000}, func(x *tensor.Tensor, s uint64) { TruncatedNormal(dev, x, 0, 0.1, -2, 2, newRand(s)) },
			0, 0.1, -2, 2},
		{"kaiming uniform, a=√5, fan_in (torch's layer default)", conv, func(x *tensor.Tensor, s uint64) { KaimingUniform(dev, x, math.Sqrt(5), FanIn, newRand(s)) },
			0, 1 / math.Sqrt(288) / math.Sqrt(3), -1 / math.Sqrt(288), 1 / math.Sqrt(288)},
		{"kaiming uniform, a=0, fan_out", conv, func(x *tensor.Tensor, s uint64) { KaimingUniform(dev, x, 0, FanOut, newRand(s)) },
			0, math.Sqrt(2) / math.Sqrt(576), -math.Sqrt(6.0 / 576), math.Sqrt(6.0 / 576)},
		{"kaiming normal, relu, fan_out (torchvision's resnet)", conv, func(x *tensor.Tensor, s uint64) { KaimingNormal(dev, x, 0, FanOut, newRand(s)) },
			0, math.Sqrt(2) / math.Sqrt(576), math.Inf(-1), math.Inf(1)},
		{"kaiming normal, relu, fan_in", conv, func(x *tensor.Tensor, s uint64) { KaimingNormal(dev, x, 0, FanIn, newRand(s)) },
			0, math.Sqrt(2) / math.Sqrt(288), math.Inf(-1), math.Inf(1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := dev.Alloc(tensor.Weights, tc.shape...)
			defer x.Release()
			tc.fill(x, 1)
			v := tensor.ToHost(x)
			if err := momentErr(v, tc.mean, tc.std); err != nil {
				t.Error(err)
			}
			for i, e := range v {
				if float64(e) < tc.lo || float64(e) > tc.hi || math.IsNaN(float64(e)) {
					t.Fatalf("value %d: got %v, want it in [%v, %v]", i, e, tc.lo, tc.hi)
				}
			}
			tc.fill(x, 1)
			equalValues(t, "the same seed again", widen(tensor.ToHost(x)), widen(v))
			tc.fill(x, 2)
			if w := tensor.ToHost(x); w[0] == v[0] && w[1] == v[1] {
				t.Errorf("another seed: got the same first values %v, %v", w[0], w[1])
			}
		})
	}
	checkNoLeak(t, dev)
}

// TestMomentErrHasPower checks that the moment test rejects samples whose
// scale is 5 % off or whose mean is shifted by a tenth of a standard
// deviation, so that the initialiser tests can fail.
func TestMomentErrHasPower(t *testing.T) {
	rng := newRand(3)
	v := make([]float32, 20000)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	if err := momentErr(v, 0, 1); err != nil {
		t.Errorf("N(0, 1) against itself: %v", err)
	}
	if momentErr(v, 0, 1.05) == nil {
		t.Error("N(0, 1) against std 1.05: no error")
	}
	if momentErr(v, 0.1, 1) == nil {
		t.Error("N(0, 1) against mean 0.1: no error")
	}
}

func TestConstant(t *testing.T) {
	dev := newDevice(t)
	x := dev.Alloc(tensor.Weights, 3, 4)
	defer x.Release()
	Constant(dev, x, 0.25)
	for i, v := range tensor.ToHost(x) {
		if v != 0.25 {
			t.Fatalf("element %d: got %v, want 0.25", i, v)
		}
	}
}

func TestFans(t *testing.T) {
	tests := []struct {
		name          string
		shape         tensor.Shape
		fanIn, fanOut int
	}{
		{"conv weight", tensor.Shape{8, 3, 5, 7}, 105, 280},
		{"linear weight", tensor.Shape{10, 20}, 20, 10},
		{"conv1d weight", tensor.Shape{4, 6, 9}, 54, 36},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, out := Fans(tc.shape)
			if in != tc.fanIn || out != tc.fanOut {
				t.Errorf("Fans(%v): got %d, %d, want %d, %d", tc.shape, in, out, tc.fanIn, tc.fanOut)
			}
			if got := Fan(tc.shape, FanOut); got != tc.fanOut {
				t.Errorf("Fan(%v, FanOut): got %d, want %d", tc.shape, got, tc.fanOut)
			}
		})
	}
	mustPanic(t, "Fans of a vector", "fewer than 2 dimensions", func() { Fans(tensor.Shape{5}) })
}

// TestLayerDefaultInit checks that layers start as torch's: weights and
// biases uniform in ±1/√fan_in, filling that range, and batch norm at
// γ = 1, β = 0 with unit running variance.
func TestLayerDefaultInit(t *testing.T) {
	dev := newDevice(t)
	rng := newRand(4)
	tests := []struct {
		name  string
		layer Layer
		fanIn int
	}{
		{"conv2d", NewConv2D(dev, Conv2DConfig{In: 12, Out: 64, KH: 3, KW: 5, StrideH: 1, StrideW: 1, Bias: true}, rng), 180},
		{"linear", NewLinear(dev, 300, 64, true, rng), 300},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer ReleaseLayer(tc.layer)
			bound := 1 / math.Sqrt(float64(tc.fanIn))
			for _, p := range tc.layer.Params() {
				v := tensor.ToHost(p.Value)
				largest := 0.0
				for _, e := range v {
					largest = max(largest, math.Abs(float64(e)))
				}
				// Float32 rounding may land a draw just below the
				// bound on it; never beyond.
				if largest > float64(float32(bound)) {
					t.Errorf("%s: largest magnitude %v, want ≤ %v", p.Name, largest, bound)
				}
				// 64 draws all below 0.8 of the bound has probability
				// 0.8^64 ≈ 6e-7.
				if largest < 0.8*bound {
					t.Errorf("%s: largest magnitude %v, want near %v", p.Name, largest, bound)
				}
				if p.Name == "weight" {
					if err := momentErr(v, 0, bound/math.Sqrt(3)); err != nil {
						t.Errorf("%s: %v", p.Name, err)
					}
				}
			}
		})
	}
	bn := NewBatchNorm2D(dev, 5, tensor.DefaultBatchNorm())
	defer ReleaseLayer(bn)
	for _, c := range []struct {
		name string
		t    *tensor.Tensor
		want float64
	}{
		{"weight", bn.Weight.Value, 1}, {"bias", bn.Bias.Value, 0},
		{"running_mean", bn.RunningMean.Value, 0}, {"running_var", bn.RunningVar.Value, 1},
	} {
		equalValues(t, "batchnorm "+c.name, host(c.t), []float64{c.want, c.want, c.want, c.want, c.want})
	}
	if *bn.NumBatchesTracked.Count != 0 {
		t.Errorf("num_batches_tracked: got %d, want 0", *bn.NumBatchesTracked.Count)
	}
}
