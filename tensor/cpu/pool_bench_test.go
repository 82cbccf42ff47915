package cpu_test

import (
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cpu"
)

// benchPool times one pooling kernel on [n, c, h, h], its inputs uniform
// in [−1, 1). p is nil for the adaptive pooling to out×out. The bytes
// counted are the input-sized tensor (x or dx) and the output-sized one
// (y or dy) once each, plus x for max pooling's backward, which reads it
// to find the maxima.
func benchPool(b *testing.B, kernel string, p *tensor.Pool2DParams, n, c, h, out int) {
	benchPoolInput(b, kernel, p, false, n, c, h, out)
}

// benchPoolReLU is benchPool with x after a ReLU, as the models' max
// poolings see it: half +0, half uniform in (0, 1).
func benchPoolReLU(b *testing.B, kernel string, p *tensor.Pool2DParams, n, c, h, out int) {
	benchPoolInput(b, kernel, p, true, n, c, h, out)
}

// benchPoolInput is benchPool, with x after a ReLU if relu.
func benchPoolInput(b *testing.B, kernel string, p *tensor.Pool2DParams, relu bool, n, c, h, out int) {
	dev := newNormBenchDevice(b)
	oh, ow := out, out
	if p != nil {
		oh, ow = p.OutSize(h, h)
	}
	x := benchUniform(dev, -1, 1, n, c, h, h)
	if relu {
		xs := cpu.Data(x)
		for i, v := range xs {
			xs[i] = max(v, 0)
		}
	}
	dx := dev.Alloc(tensor.Activations, n, c, h, h)
	y := benchUniform(dev, -1, 1, n, c, oh, ow)
	defer x.Release()
	defer dx.Release()
	defer y.Release()
	bytes := x.Bytes() + y.Bytes()
	if kernel == "max backward" {
		bytes += x.Bytes()
	}
	b.SetBytes(bytes)
	b.ResetTimer()
	for b.Loop() {
		switch kernel {
		case "max forward":
			dev.MaxPool2DForward(x, y, *p)
		case "max backward":
			dev.MaxPool2DBackward(x, y, dx, *p)
		case "avg forward":
			dev.AvgPool2DForward(x, y, *p)
		case "avg backward":
			dev.AvgPool2DBackward(y, dx, *p)
		case "adaptive forward":
			dev.AdaptiveAvgPool2DForward(x, y)
		case "adaptive backward":
			dev.AdaptiveAvgPool2DBackward(y, dx)
		}
	}
}

var (
	benchPool3x3S2P1 = &tensor.Pool2DParams{KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}
	benchPool2x2S2   = &tensor.Pool2DParams{KH: 2, KW: 2, StrideH: 2, StrideW: 2}
	benchPool3x3S1P1 = &tensor.Pool2DParams{KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}
	benchPool3x3S2   = &tensor.Pool2DParams{KH: 3, KW: 3, StrideH: 2, StrideW: 2}
)

// ResNet's stem pooling.
func BenchmarkMaxPool2DForward3x3S2C64H112N4(b *testing.B) {
	benchPool(b, "max forward", benchPool3x3S2P1, 4, 64, 112, 0)
}

func BenchmarkMaxPool2DBackward3x3S2C64H112N4(b *testing.B) {
	benchPool(b, "max backward", benchPool3x3S2P1, 4, 64, 112, 0)
}

// VGG's second pooling.
func BenchmarkMaxPool2DForward2x2S2C128H112N4(b *testing.B) {
	benchPool(b, "max forward", benchPool2x2S2, 4, 128, 112, 0)
}

func BenchmarkMaxPool2DBackward2x2S2C128H112N4(b *testing.B) {
	benchPool(b, "max backward", benchPool2x2S2, 4, 128, 112, 0)
}

// Inception-v3's branch pooling of its 35×35 blocks.
func BenchmarkAvgPool2DForward3x3S1C192H35N4(b *testing.B) {
	benchPool(b, "avg forward", benchPool3x3S1P1, 4, 192, 35, 0)
}

func BenchmarkAvgPool2DBackward3x3S1C192H35N4(b *testing.B) {
	benchPool(b, "avg backward", benchPool3x3S1P1, 4, 192, 35, 0)
}

// Inception-v3's branch pooling of its 9×9 (Mixed_5b) and 4×4 (Mixed_6b–e)
// blocks at a 96 image size, batch 16.
func BenchmarkAvgPool2DForward3x3S1C192H9N16(b *testing.B) {
	benchPool(b, "avg forward", benchPool3x3S1P1, 16, 192, 9, 0)
}

func BenchmarkAvgPool2DBackward3x3S1C192H9N16(b *testing.B) {
	benchPool(b, "avg backward", benchPool3x3S1P1, 16, 192, 9, 0)
}

func BenchmarkAvgPool2DForward3x3S1C768H4N16(b *testing.B) {
	benchPool(b, "avg forward", benchPool3x3S1P1, 16, 768, 4, 0)
}

func BenchmarkAvgPool2DBackward3x3S1C768H4N16(b *testing.B) {
	benchPool(b, "avg backward", benchPool3x3S1P1, 16, 768, 4, 0)
}

// Inception-v3's max poolings at a 96 image size, batch 16: Mixed_6a's
// on 9×9 and the stem's maxpool1 on 45×45, after ReLUs as there; and
// the 9×9 one on signed inputs.
func BenchmarkMaxPool2DBackward3x3S2C288H9N16(b *testing.B) {
	benchPoolReLU(b, "max backward", benchPool3x3S2, 16, 288, 9, 0)
}

func BenchmarkMaxPool2DBackward3x3S2C64H45N16(b *testing.B) {
	benchPoolReLU(b, "max backward", benchPool3x3S2, 16, 64, 45, 0)
}

func BenchmarkMaxPool2DBackward3x3S2C288H9N16Signed(b *testing.B) {
	benchPool(b, "max backward", benchPool3x3S2, 16, 288, 9, 0)
}

// VGG's classifier input at a 448 image size, and ResNet's global pooling.
func BenchmarkAdaptiveAvgPool2DForward7x7C512H14N8(b *testing.B) {
	benchPool(b, "adaptive forward", nil, 8, 512, 14, 7)
}

func BenchmarkAdaptiveAvgPool2DBackward7x7C512H14N8(b *testing.B) {
	benchPool(b, "adaptive backward", nil, 8, 512, 14, 7)
}

func BenchmarkAdaptiveAvgPool2DForward1x1C2048H7N8(b *testing.B) {
	benchPool(b, "adaptive forward", nil, 8, 2048, 7, 1)
}

func BenchmarkAdaptiveAvgPool2DBackward1x1C2048H7N8(b *testing.B) {
	benchPool(b, "adaptive backward", nil, 8, 2048, 7, 1)
}
