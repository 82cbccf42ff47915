package models

import (
	"math"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cpu"
)

// unfusedDevice is a CPU device that hides tensor.BatchNormReLUKernels,
// so that layers on it run batch norm and ReLU apart.
type unfusedDevice struct{ tensor.Device }

// TestBatchNormReLUFusedMatchesUnfused trains a bottleneck (batch norms
// followed by ReLUs, and one that is not) one step on the CPU backend,
// where Sequential fuses the pairs, and on the same backend with fusion
// hidden: output, input gradient, parameter gradients and running
// statistics agree bit for bit, and the fused step's activation peak is
// no higher.
func TestBatchNormReLUFusedMatchesUnfused(t *testing.T) {
	type result struct {
		vals [][]float32
		peak int64
	}
	run := func(fuse bool) result {
		base := cpu.New(tensor.Options{Threads: 2})
		defer base.Close()
		var dev tensor.Device = base
		if !fuse {
			dev = unfusedDevice{base}
		}
		if _, ok := dev.(tensor.BatchNormReLUKernels); ok != fuse {
			t.Fatalf("fuse %v: device fuses %v", fuse, ok)
		}
		rng := newRand(5)
		bnp := tensor.DefaultBatchNorm()
		l := NewResidual(Child{"", NewSequential(
			Child{"conv1", convNoBias(dev, rng, 16, 8, 1, 1, 1, 0, 0)},
			Child{"bn1", NewBatchNorm2D(dev, 8, bnp)},
			Child{"relu", NewReLU()},
			Child{"conv2", convNoBias(dev, rng, 8, 8, 3, 3, 1, 1, 1)},
			Child{"bn2", NewBatchNorm2D(dev, 8, bnp)},
			Child{"", NewReLU()},
			Child{"conv3", convNoBias(dev, rng, 8, 16, 1, 1, 1, 0, 0)},
			Child{"bn3", NewBatchNorm2D(dev, 16, bnp)},
		)}, Child{}, NewReLU())
		defer ReleaseLayer(l)
		x, _ := uploadRand(dev, tensor.Boundary, rng, 4, 16, 6, 6)
		dy, _ := uploadRand(dev, tensor.Boundary, rng, 4, 16, 6, 6)
		defer x.Release()
		defer dy.Release()
		base.ResetPeak()
		p := &Pass{Dev: dev, Train: true, Grad: true}
		y, ctx := l.Forward(p, x)
		dx := l.Backward(p, ctx, dy)
		r := result{vals: [][]float32{tensor.ToHost(y), tensor.ToHost(dx)}, peak: base.Memory().PeakBytes[tensor.Activations]}
		y.Release()
		dx.Release()
		for _, np := range Params(l) {
			r.vals = append(r.vals, tensor.ToHost(np.Param.Grad))
		}
		for _, b := range Buffers(l) {
			if b.Buffer.Value != nil {
				r.vals = append(r.vals, tensor.ToHost(b.Buffer.Value))
			}
		}
		return r
	}
	want, got := run(false), run(true)
	if len(got.vals) != len(want.vals) {
		t.Fatalf("%d results fused, %d unfused", len(got.vals), len(want.vals))
	}
	for i := range want.vals {
		for j, w := range want.vals[i] {
			if g := got.vals[i][j]; math.Float32bits(g) != math.Float32bits(w) {
				t.Fatalf("result %d element %d: fused %v, unfused %v", i, j, g, w)
			}
		}
	}
	if got.peak > want.peak {
		t.Errorf("fused activation peak %d bytes, above the unfused %d", got.peak, want.peak)
	}
	t.Logf("activation peaks: fused %d bytes, unfused %d", got.peak, want.peak)
}
