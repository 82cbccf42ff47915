package tensortest

import (
	"math"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/reference"
)

// Pooling windows of the zoo: VGG's 2×2 stride 2, ResNet's stem 3×3
// stride 2 padding 1, Inception's 3×3 stride 2 and 3×3 stride 1 padding 1.
var (
	poolVGG       = tensor.Pool2DParams{KH: 2, KW: 2, StrideH: 2, StrideW: 2}
	poolResNet    = tensor.Pool2DParams{KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}
	poolInception = tensor.Pool2DParams{KH: 3, KW: 3, StrideH: 2, StrideW: 2}
	poolSame3x3   = tensor.Pool2DParams{KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}
	poolOddWindow = tensor.Pool2DParams{KH: 3, KW: 2, StrideH: 1, StrideW: 2, PadH: 1, PadW: 1}
)

// poolInput returns n inputs of one of four kinds: uniform in [−1, 1),
// quantised to multiples of 1/2 (so that windows hold tied maxima), all
// negative (so that a padding counted as 0 instead of −∞ would win), or
// uniform with a NaN in every 7th place (torch's kernel makes a NaN the
// maximum and records the last NaN of a window).
func poolInput(seed uint64, n int, kind string) []float32 {
	xs := randSlice(newRand(seed), n)
	for i, v := range xs {
		switch kind {
		case "ties":
			xs[i] = float32(math.Round(float64(v)*2) / 2)
		case "negative":
			xs[i] = v/2 - 1.5
		case "nan":
			if i%7 == 3 {
				xs[i] = float32(math.NaN())
			}
		}
	}
	return xs
}

func testMaxPool2D(t *testing.T, dev tensor.Device) {
	tests := []struct {
		name  string
		shape tensor.Shape
		p     tensor.Pool2DParams
		input string
	}{
		{"VGG 2x2 stride 2", tensor.Shape{2, 3, 8, 8}, poolVGG, "uniform"},
		{"VGG 2x2 stride 2 odd input", tensor.Shape{1, 2, 7, 9}, poolVGG, "uniform"},
		{"VGG 2x2 stride 2 ties", tensor.Shape{2, 3, 6, 6}, poolVGG, "ties"},
		{"ResNet 3x3 stride 2 pad 1", tensor.Shape{2, 3, 11, 10}, poolResNet, "uniform"},
		{"ResNet 3x3 stride 2 pad 1 ties", tensor.Shape{2, 2, 9, 9}, poolResNet, "ties"},
		{"ResNet 3x3 stride 2 pad 1 negative", tensor.Shape{1, 2, 6, 7}, poolResNet, "negative"},
		{"Inception 3x3 stride 2 odd input", tensor.Shape{1, 4, 9, 13}, poolInception, "uniform"},
		{"Inception 3x3 stride 2 ties", tensor.Shape{3, 1, 7, 7}, poolInception, "ties"},
		{"3x2 stride 1x2 pad 1 ties", tensor.Shape{1, 3, 5, 6}, poolOddWindow, "ties"},
		{"ResNet 3x3 stride 2 pad 1 NaNs", tensor.Shape{1, 2, 7, 8}, poolResNet, "nan"},
		{"planes split across threads", tensor.Shape{2, 16, 32, 32}, poolResNet, "ties"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, c, h, w := tc.shape[0], tc.shape[1], tc.shape[2], tc.shape[3]
			oh, ow := tc.p.OutSize(h, w)
			outShape := tensor.Shape{n, c, oh, ow}
			xs := poolInput(uint64(tc.shape.Numel()), tc.shape.Numel(), tc.input)
			dys := randSlice(newRand(uint64(outShape.Numel())), outShape.Numel())

			x := upload(dev, tensor.Activations, tc.shape, xs)
			y := newGuarded(dev, tensor.Activations, outShape, nil)
			dev.MaxPool2DForward(x, y.T, tc.p)
			// A maximum is one of the inputs: nothing to round.
			normPoolExact(t, "y", y.check(t, "y"), reference.MaxPool2D(widen(xs), n, c, h, w, tc.p))

			dy := upload(dev, tensor.Activations, outShape, dys)
			dx := newGuarded(dev, tensor.Activations, tc.shape, nil)
			dev.MaxPool2DBackward(x, dy, dx.T, tc.p)
			// Overlapping windows add several gradients to one input.
			compare(t, "dx", dx.check(t, "dx"), reference.MaxPool2DBackward(widen(xs), widen(dys), n, c, h, w, tc.p),
				reductionRTol, reductionATol)

			x.Release()
			dy.Release()
			y.release()
			dx.release()
		})
	}
	t.Run("bad arguments panic", func(t *testing.T) { testPoolPanics(t, dev) })
}

func testAvgPool2D(t *testing.T, dev tensor.Device) {
	tests := []struct {
		name  string
		shape tensor.Shape
		p     tensor.Pool2DParams
	}{
		{"Inception 3x3 stride 1 pad 1", tensor.Shape{2, 3, 7, 6}, poolSame3x3},
		{"Inception 3x3 stride 1 pad 1 batch 1", tensor.Shape{1, 1, 5, 5}, poolSame3x3},
		{"2x2 stride 2", tensor.Shape{1, 5, 8, 9}, poolVGG},
		{"3x3 stride 2 pad 1", tensor.Shape{2, 2, 9, 8}, poolResNet},
		{"3x2 stride 1x2 pad 1", tensor.Shape{1, 3, 5, 6}, poolOddWindow},
		{"planes split across threads", tensor.Shape{2, 16, 32, 32}, poolSame3x3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, c, h, w := tc.shape[0], tc.shape[1], tc.shape[2], tc.shape[3]
			oh, ow := tc.p.OutSize(h, w)
			outShape := tensor.Shape{n, c, oh, ow}
			rng := newRand(uint64(tc.shape.Numel()))
			xs, dys := randSlice(rng, tc.shape.Numel()), randSlice(rng, outShape.Numel())

			x := upload(dev, tensor.Activations, tc.shape, xs)
			y := newGuarded(dev, tensor.Activations, outShape, nil)
			dev.AvgPool2DForward(x, y.T, tc.p)
			compare(t, "y", y.check(t, "y"), reference.AvgPool2D(widen(xs), n, c, h, w, tc.p), reductionRTol, reductionATol)

			dy := upload(dev, tensor.Activations, outShape, dys)
			dx := newGuarded(dev, tensor.Activations, tc.shape, nil)
			dev.AvgPool2DBackward(dy, dx.T, tc.p)
			compare(t, "dx", dx.check(t, "dx"), reference.AvgPool2DBackward(widen(dys), n, c, h, w, tc.p), reductionRTol, reductionATol)

			x.Release()
			dy.Release()
			y.release()
			dx.release()
		})
	}
}

func testAdaptiveAvgPool2D(t *testing.T, dev tensor.Device) {
	tests := []struct {
		name   string
		shape  tensor.Shape
		oh, ow int
	}{
		{"8x8 to 7x7", tensor.Shape{2, 3, 8, 8}, 7, 7},
		{"7x7 to 7x7", tensor.Shape{1, 2, 7, 7}, 7, 7},
		{"5x5 to 7x7 upsampling", tensor.Shape{2, 2, 5, 5}, 7, 7},
		{"13x11 to 7x7", tensor.Shape{1, 3, 13, 11}, 7, 7},
		{"8x8 to 1x1", tensor.Shape{3, 5, 8, 8}, 1, 1},
		{"7x7 to 1x1", tensor.Shape{1, 4, 7, 7}, 1, 1},
		{"3x10 to 2x4", tensor.Shape{2, 1, 3, 10}, 2, 4},
		{"planes split across threads", tensor.Shape{8, 64, 14, 14}, 7, 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, c, h, w := tc.shape[0], tc.shape[1], tc.shape[2], tc.shape[3]
			outShape := tensor.Shape{n, c, tc.oh, tc.ow}
			rng := newRand(uint64(tc.shape.Numel() + tc.oh))
			xs, dys := randSlice(rng, tc.shape.Numel()), randSlice(rng, outShape.Numel())

			x := upload(dev, tensor.Activations, tc.shape, xs)
			y := newGuarded(dev, tensor.Activations, outShape, nil)
			dev.AdaptiveAvgPool2DForward(x, y.T)
			compare(t, "y", y.check(t, "y"), reference.AdaptiveAvgPool2D(widen(xs), n, c, h, w, tc.oh, tc.ow),
				reductionRTol, reductionATol)

			dy := upload(dev, tensor.Activations, outShape, dys)
			dx := newGuarded(dev, tensor.Activations, tc.shape, nil)
			dev.AdaptiveAvgPool2DBackward(dy, dx.T)
			compare(t, "dx", dx.check(t, "dx"), reference.AdaptiveAvgPool2DBackward(widen(dys), n, c, h, w, tc.oh, tc.ow),
				reductionRTol, reductionATol)

			x.Release()
			dy.Release()
			y.release()
			dx.release()
		})
	}
}

// testPoolPanics checks that the pooling kernels refuse shapes and
// parameters that cannot go together.
func testPoolPanics(t *testing.T, dev tensor.Device) {
	x := dev.Alloc(tensor.Activations, 1, 2, 8, 8)
	x3 := dev.Alloc(tensor.Activations, 2, 8, 8)
	y4 := dev.Alloc(tensor.Activations, 1, 2, 4, 4)
	y3 := dev.Alloc(tensor.Activations, 1, 2, 3, 3)
	yN := dev.Alloc(tensor.Activations, 2, 2, 4, 4)
	defer func() {
		for _, tt := range []*tensor.Tensor{x, x3, y4, y3, yN} {
			tt.Release()
		}
	}()
	tests := []struct {
		name string
		fn   func()
	}{
		{"max forward output too small", func() { dev.MaxPool2DForward(x, y3, poolVGG) }},
		{"max forward 3-D input", func() { dev.MaxPool2DForward(x3, y4, poolVGG) }},
		{"max forward padding over half the window", func() {
			dev.MaxPool2DForward(x, y4, tensor.Pool2DParams{KH: 2, KW: 2, StrideH: 2, StrideW: 2, PadH: 2})
		}},
		{"max forward zero stride", func() { dev.MaxPool2DForward(x, y4, tensor.Pool2DParams{KH: 2, KW: 2, StrideH: 2}) }},
		{"max backward dx of another shape", func() { dev.MaxPool2DBackward(x, y4, yN, poolVGG) }},
		{"avg forward batch mismatch", func() { dev.AvgPool2DForward(x, yN, poolVGG) }},
		{"avg backward dy too small", func() { dev.AvgPool2DBackward(y3, x, poolVGG) }},
		{"adaptive forward batch mismatch", func() { dev.AdaptiveAvgPool2DForward(x, yN) }},
		{"adaptive backward 3-D dx", func() { dev.AdaptiveAvgPool2DBackward(y4, x3) }},
	}
	for _, tc := range tests {
		if msg := normPoolPanics(tc.fn); msg == "" {
			t.Errorf("%s: no panic", tc.name)
		}
	}
}
