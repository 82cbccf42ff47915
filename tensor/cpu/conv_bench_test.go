package cpu_test

import (
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// convBench is one convolution layer timed in all three passes.
type convBench struct {
	name                   string
	n, c, h, o             int // batch, input channels, square input size, output channels
	kh, kw, sh, sw, ph, pw int
}

// convBenches are representative layers of the zoo at the sizes the
// training comparisons use (ResNet-50 at 64×64 batch 32, VGG-16-BN at
// 64×64 batch 16), where the images deep in the network are a few pixels
// wide, and a few at full size (224×224) for contrast.
var convBenches = []convBench{
	// ResNet-50, 64×64, batch 32.
	{"resnet50/64px/b32/conv1-7x7s2", 32, 3, 64, 64, 7, 7, 2, 2, 3, 3},
	{"resnet50/64px/b32/layer1-3x3", 32, 64, 16, 64, 3, 3, 1, 1, 1, 1},
	{"resnet50/64px/b32/layer3-1x1", 32, 1024, 4, 256, 1, 1, 1, 1, 0, 0},
	{"resnet50/64px/b32/layer3-down-1x1s2", 32, 512, 8, 1024, 1, 1, 2, 2, 0, 0},
	{"resnet50/64px/b32/layer4-3x3", 32, 512, 2, 512, 3, 3, 1, 1, 1, 1},
	// VGG-16-BN, 64×64, batch 16: block 4 (8×8).
	{"vgg16bn/64px/b16/block4-3x3", 16, 512, 8, 512, 3, 3, 1, 1, 1, 1},
	// ResNet-50's layer1 3×3 at 224×224 (56×56), batch 4, and on one
	// sample, where threads share each product.
	{"resnet50/224px/b4/layer1-3x3", 4, 64, 56, 64, 3, 3, 1, 1, 1, 1},
	{"resnet50/224px/b1/layer1-3x3", 1, 64, 56, 64, 3, 3, 1, 1, 1, 1},
	// Inception-v3's 17×17 blocks, 1×7 with padding (0, 3), batch 4.
	{"inceptionv3/299px/b4/17x17-1x7", 4, 128, 17, 128, 1, 7, 1, 1, 0, 3},
}

// BenchmarkConv2D times forward, backward data and backward filter of each
// layer of convBenches.
func BenchmarkConv2D(b *testing.B) {
	for _, cb := range convBenches {
		for _, kernel := range []string{"forward", "data", "filter"} {
			b.Run(cb.name+"/"+kernel, func(b *testing.B) {
				benchConv(b, kernel, cb.n, cb.c, cb.h, cb.o, cb.kh, cb.kw, cb.sh, cb.sw, cb.ph, cb.pw)
			})
		}
	}
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
