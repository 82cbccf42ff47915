package models_test

import (
	"math"
	"testing"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/models/modeltest"
	"github.com/pipecast/pipecast/tensor"
)

func TestInitialisers(t *testing.T) {
	dev := modeltest.NewDevice(t)
	conv := tensor.Shape{64, 32, 3, 3} // fan_in 288, fan_out 576
	tm1, ts1 := modeltest.TruncNormalMoments(0.2, 1, -0.5, 1)
	tm2, ts2 := modeltest.TruncNormalMoments(0, 1, 1, 3)
	tests := []struct {
		name      string
		shape     tensor.Shape
		fill      func(t *tensor.Tensor, seed uint64)
		mean, std float64
		lo, hi    float64 // every value must lie in [lo, hi]
	}{
		{"uniform", tensor.Shape{100, 200}, func(x *tensor.Tensor, s uint64) { models.Uniform(dev, x, -0.3, 0.7, modeltest.NewRand(s)) },
			0.2, 1 / math.Sqrt(12), -0.3, 0.7},
		{"normal", tensor.Shape{20000}, func(x *tensor.Tensor, s uint64) { models.Normal(dev, x, 0.5, 2, modeltest.NewRand(s)) },
			0.5, 2, math.Inf(-1), math.Inf(1)},
		{"truncated normal, asymmetric bounds", tensor.Shape{20000}, func(x *tensor.Tensor, s uint64) {
			models.TruncatedNormal(dev, x, 0.2, 1, -0.5, 1, modeltest.NewRand(s))
		},
			tm1, ts1, -0.5, 1},
		{"truncated normal, a tail", tensor.Shape{20000}, func(x *tensor.Tensor, s uint64) { models.TruncatedNormal(dev, x, 0, 1, 1, 3, modeltest.NewRand(s)) },
			tm2, ts2, 1, 3},
		{"truncated normal, inception's std 0.1 on [-2, 2]", tensor.Shape{20000}, func(x *tensor.Tensor, s uint64) { models.TruncatedNormal(dev, x, 0, 0.1, -2, 2, modeltest.NewRand(s)) },
			0, 0.1, -2, 2},
		{"kaiming uniform, a=√5, fan_in (torch's layer default)", conv, func(x *tensor.Tensor, s uint64) {
			models.KaimingUniform(dev, x, math.Sqrt(5), models.FanIn, modeltest.NewRand(s))
		},
			0, 1 / math.Sqrt(288) / math.Sqrt(3), -1 / math.Sqrt(288), 1 / math.Sqrt(288)},
		{"kaiming uniform, a=0, fan_out", conv, func(x *tensor.Tensor, s uint64) {
			models.KaimingUniform(dev, x, 0, models.FanOut, modeltest.NewRand(s))
		},
			0, math.Sqrt(2) / math.Sqrt(576), -math.Sqrt(6.0 / 576), math.Sqrt(6.0 / 576)},
		{"kaiming normal, relu, fan_out (torchvision's resnet)", conv, func(x *tensor.Tensor, s uint64) { models.KaimingNormal(dev, x, 0, models.FanOut, modeltest.NewRand(s)) },
			0, math.Sqrt(2) / math.Sqrt(576), math.Inf(-1), math.Inf(1)},
		{"kaiming normal, relu, fan_in", conv, func(x *tensor.Tensor, s uint64) { models.KaimingNormal(dev, x, 0, models.FanIn, modeltest.NewRand(s)) },
			0, math.Sqrt(2) / math.Sqrt(288), math.Inf(-1), math.Inf(1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := dev.Alloc(tensor.Weights, tc.shape...)
			defer x.Release()
			tc.fill(x, 1)
			v := tensor.ToHost(x)
			if err := modeltest.MomentErr(v, tc.mean, tc.std); err != nil {
				t.Error(err)
			}
			for i, e := range v {
				if float64(e) < tc.lo || float64(e) > tc.hi || math.IsNaN(float64(e)) {
					t.Fatalf("value %d: got %v, want it in [%v, %v]", i, e, tc.lo, tc.hi)
				}
			}
			tc.fill(x, 1)
			modeltest.EqualValues(t, "the same seed again", modeltest.Widen(tensor.ToHost(x)), modeltest.Widen(v))
			tc.fill(x, 2)
			if w := tensor.ToHost(x); w[0] == v[0] && w[1] == v[1] {
				t.Errorf("another seed: got the same first values %v, %v", w[0], w[1])
			}
		})
	}
	modeltest.CheckNoLeak(t, dev)
}

func TestConstant(t *testing.T) {
	dev := modeltest.NewDevice(t)
	x := dev.Alloc(tensor.Weights, 3, 4)
	defer x.Release()
	models.Constant(dev, x, 0.25)
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
			in, out := models.Fans(tc.shape)
			if in != tc.fanIn || out != tc.fanOut {
				t.Errorf("Fans(%v): got %d, %d, want %d, %d", tc.shape, in, out, tc.fanIn, tc.fanOut)
			}
			if got := models.Fan(tc.shape, models.FanOut); got != tc.fanOut {
				t.Errorf("Fan(%v, FanOut): got %d, want %d", tc.shape, got, tc.fanOut)
			}
		})
	}
	modeltest.MustPanic(t, "Fans of a vector", "fewer than 2 dimensions", func() { models.Fans(tensor.Shape{5}) })
}

// TestLayerDefaultInit checks that layers start as torch's: weights and
// biases uniform in ±1/√fan_in, filling that range, and batch norm at
// γ = 1, β = 0 with unit running variance.
func TestLayerDefaultInit(t *testing.T) {
	dev := modeltest.NewDevice(t)
	rng := modeltest.NewRand(4)
	tests := []struct {
		name  string
		layer models.Layer
		fanIn int
	}{
		{"conv2d", models.NewConv2D(dev, models.Conv2DConfig{In: 12, Out: 64, KH: 3, KW: 5, StrideH: 1, StrideW: 1, Bias: true}, rng), 180},
		{"linear", models.NewLinear(dev, 300, 64, true, rng), 300},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer models.ReleaseLayer(tc.layer)
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
					if err := modeltest.MomentErr(v, 0, bound/math.Sqrt(3)); err != nil {
						t.Errorf("%s: %v", p.Name, err)
					}
				}
			}
		})
	}
	bn := models.NewBatchNorm2D(dev, 5, tensor.DefaultBatchNorm())
	defer models.ReleaseLayer(bn)
	for _, c := range []struct {
		name string
		t    *tensor.Tensor
		want float64
	}{
		{"weight", bn.Weight.Value, 1}, {"bias", bn.Bias.Value, 0},
		{"running_mean", bn.RunningMean.Value, 0}, {"running_var", bn.RunningVar.Value, 1},
	} {
		modeltest.EqualValues(t, "batchnorm "+c.name, modeltest.Host(c.t), []float64{c.want, c.want, c.want, c.want, c.want})
	}
	if *bn.NumBatchesTracked.Count != 0 {
		t.Errorf("num_batches_tracked: got %d, want 0", *bn.NumBatchesTracked.Count)
	}
}
