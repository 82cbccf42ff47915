package models

import (
	"math"
	"slices"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// TestNoGradInput checks a forward told that its input needs no gradient
// (Pass.NoGradInput) against one not told: every parameter gradient must
// be the same bit for bit; the zoo's networks, convolutions and linear
// layers must return no input gradient, and every other layer either none
// (a container that reaches one of those first) or the same one as
// before, never part of it.
func TestNoGradInput(t *testing.T) {
	skips := map[string]bool{"mlp": true, "vgg16": true, "vgg16bn": true, "resnet50": true, "inceptionv3": true}
	cases := slices.Concat(splitLayerCases(), splitZooCases(), decoderSplitCases())
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dev := newDevice(t)
			seed := uint64(700 + i)
			rng := newRand(seed + 1)
			x := tc.input(dev, rng)
			defer x.Release()
			var dxs [2]*tensor.Tensor
			var grads [2][][]float32
			var dy *tensor.Tensor
			for k, noGrad := range []bool{false, true} {
				l := buildSplit(dev, tc, seed)
				p := tc.pass
				p.Dev, p.Grad = dev, true
				if noGrad {
					p.NoGradInput = x
				}
				y, ctx := l.Forward(&p, x)
				if dy == nil {
					dy, _ = uploadRand(dev, tensor.Gradients, rng, y.Shape()...)
					defer dy.Release()
				}
				y.Release()
				dxs[k] = l.Backward(&p, ctx, dy)
				for _, np := range Params(l) {
					if np.Param.Grad != nil {
						grads[k] = append(grads[k], tensor.ToHost(np.Param.Grad))
					}
				}
			}
			defer dxs[0].Release()
			defer dxs[1].Release()
			switch {
			case skips[tc.name] || skipsInputGrad(buildSplit(dev, tc, seed)):
				if dxs[1] != nil {
					t.Errorf("input gradient %v, want none", dxs[1].Shape())
				}
			case dxs[1] == nil:
				// A container whose first layer reads the input: it
				// must return none rather than part of one.
			default:
				sameValues(t, "input gradient", tensor.ToHost(dxs[1]), tensor.ToHost(dxs[0]))
			}
			if len(grads[0]) != len(grads[1]) {
				t.Fatalf("%d parameter gradients, want %d", len(grads[1]), len(grads[0]))
			}
			for j := range grads[0] {
				sameValues(t, "parameter gradient", grads[1][j], grads[0][j])
			}
		})
	}
}

// skipsInputGrad reports whether l is a convolution or linear layer, the
// layers that skip an unwanted input gradient, or a decoder's layer that
// reads its input through linear layers alone (or, an embedding, has no
// input gradient at all).
func skipsInputGrad(l Layer) bool {
	switch l.(type) {
	case *Conv2D, *Linear, *PerToken, *Attention, *GatedMLP, *Embedding:
		return true
	}
	return false
}

// sameValues fails t unless got and want hold the same values bit for
// bit.
func sameValues(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}
