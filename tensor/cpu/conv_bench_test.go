package cpu_test

import (
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// ResNet-50's layer1 3×3 convolution (64 → 64 channels on 56×56).
func BenchmarkConv2DForward3x3C64H56N4(b *testing.B) {
	benchConv(b, "forward", 4, 64, 56, 64, 3, 3, 1, 1, 1, 1)
}
func BenchmarkConv2DBackwardData3x3C64H56N4(b *testing.B) {
	benchConv(b, "data", 4, 64, 56, 64, 3, 3, 1, 1, 1, 1)
}
func BenchmarkConv2DBackwardFilter3x3C64H56N4(b *testing.B) {
	benchConv(b, "filter", 4, 64, 56, 64, 3, 3, 1, 1, 1, 1)
}

// The same layer on one sample, where threads share each product.
func BenchmarkConv2DForward3x3C64H56N1(b *testing.B) {
	benchConv(b, "forward", 1, 64, 56, 64, 3, 3, 1, 1, 1, 1)
}

// ResNet-50's layer3 expansion, 1×1 from 256 to 1024 channels on 14×14
// (no im2col).
func BenchmarkConv2DForward1x1C256H14N4(b *testing.B) {
	benchConv(b, "forward", 4, 256, 14, 1024, 1, 1, 1, 1, 0, 0)
}

// Inception-v3's 17×17 blocks, 1×7 from 128 to 128 channels, padding (0, 3).
func BenchmarkConv2DForward1x7C128H17N4(b *testing.B) {
	benchConv(b, "forward", 4, 128, 17, 128, 1, 7, 1, 1, 0, 3)
}

// ResNet-50's stem, 7×7 stride 2 from 3 to 64 channels on 224×224.
func BenchmarkConv2DForward7x7C3H224N1(b *testing.B) {
	benchConv(b, "forward", 1, 3, 224, 64, 7, 7, 2, 2, 3, 3)
}

// benchConv times one convolution kernel (forward, data or filter) on n
// square h×h images of c channels, o output channels.
func benchConv(b *testing.B, kernel string, n, c, h, o, kh, kw, sh, sw, ph, pw int) {
	dev := benchDevice(b)
	p := tensor.Conv2DParams{StrideH: sh, StrideW: sw, PadH: ph, PadW: pw}
	oh, ow := p.OutSize(h, h, kh, kw)
	x, w, bias := benchTensor(dev, n, c, h, h), benchTensor(dev, o, c, kh, kw), benchTensor(dev, o)
	y := benchTensor(dev, n, o, oh, ow)
	dw, db := dev.Alloc(tensor.Gradients, o, c, kh, kw), dev.Alloc(tensor.Gradients, o)
	for _, t := range []*tensor.Tensor{x, w, bias, y, dw, db} {
		defer t.Release()
	}
	for b.Loop() {
		switch kernel {
		case "forward":
			dev.Conv2DForward(x, w, bias, y, p)
		case "data":
			dev.Conv2DBackwardData(y, w, x, p)
		case "filter":
			dev.Conv2DBackwardFilter(x, y, dw, db, p)
		default:
			b.Fatalf("unknown conv2d kernel %q", kernel)
		}
	}
	reportGFLOPS(b, 2*float64(n)*float64(o)*float64(oh*ow)*float64(c*kh*kw))
}
