package models

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// ResNet-50 is torchvision's resnet50() (torchvision/models/resnet.py,
// He et al., "Deep Residual Learning for Image Recognition", CVPR 2016),
// in torchvision's "V1.5" form: a Bottleneck that downsamples does so in
// its 3×3 convolution (conv2), not in the first 1×1 as the paper's. Its
// blocks are the stem (conv1, bn1, relu, maxpool), each of the sixteen
// Bottlenecks ("layer1.0" … "layer4.2") and the head (avgpool, flatten,
// fc), so a pipeline may cut between any two Bottlenecks.
func init() {
	register(Arch{
		Name:         "resnet50",
		Description:  "torchvision's ResNet-50 (v1.5: stride on the 3×3 convolutions), 16 bottlenecks in 4 stages (25.6M parameters at 1000 classes)",
		DefaultImage: 224,
		// Every layer that shrinks the input pads enough to take a 1×1
		// one: conv1 (7×7, padding 3) and the max pool (3×3, padding 1)
		// map 1 to 1, and so do the stride-2 3×3 and 1×1 convolutions of
		// the Bottlenecks. A 0×0 input is the first conv1 rejects.
		MinImage: 1,
		defaults: func(c *Config) {
			if c.Classes == 0 {
				c.Classes = 1000
			}
			if c.Image == 0 {
				c.Image = 224
			}
		},
		build: buildResNet50,
	})
}

// resNet50Stages are the Bottleneck counts and planes (the width of the
// 3×3 convolutions) of layer1 … layer4.
var resNet50Stages = [4]struct{ blocks, planes int }{{3, 64}, {4, 128}, {6, 256}, {3, 512}}

// bottleneckExpansion is the ratio of a Bottleneck's output channels to
// its planes; the width multiplier scales planes, never this ratio.
const bottleneckExpansion = 4

func buildResNet50(b *Builder) ([]*Block, error) {
	img := b.Config.Image
	b.Input = tensor.Shape{3, img, img}
	bnp := tensor.DefaultBatchNorm()
	stem := b.Channels(64)
	blocks := []*Block{b.Block("stem",
		Child{"conv1", resNetConv(b, 3, stem, 7, 2, 3)},
		Child{"bn1", NewBatchNorm2D(b.Dev, stem, bnp)},
		Child{"relu", NewReLU()},
		Child{"maxpool", NewMaxPool2D(tensor.Pool2DParams{KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1})},
	)}
	in := stem
	for i, s := range resNet50Stages {
		planes := b.Channels(s.planes)
		for j := range s.blocks {
			// torchvision strides the first Bottleneck of layer2 …
			// layer4; layer1 follows the max pool at stride 1.
			stride := 1
			if j == 0 && i > 0 {
				stride = 2
			}
			name := fmt.Sprintf("layer%d.%d", i+1, j)
			blocks = append(blocks, b.Block(name, Child{name, resNetBottleneck(b, in, planes, stride)}))
			in = planes * bottleneckExpansion
		}
	}
	blocks = append(blocks, b.Block("head",
		Child{"avgpool", NewAdaptiveAvgPool2D(1, 1)},
		// torch.flatten in ResNet.forward: not a module, so unnamed.
		Child{"", NewFlatten()},
		Child{"fc", NewLinear(b.Dev, in, b.Config.Classes, true, b.Rng)},
	))
	return blocks, nil
}

// resNetBottleneck is torchvision's Bottleneck with groups 1 and base width 64:
// 1×1 in → planes, 3×3 planes → planes at stride, 1×1 planes → 4·planes,
// each followed by batch norm, added to the input (through a strided 1×1
// convolution and batch norm when the shape changes) and rectified. As
// in torchvision, the shortcut needs a downsample exactly when the
// stride is not 1 or the channels change: in the first block of every
// stage.
func resNetBottleneck(b *Builder, in, planes, stride int) *Residual {
	bnp := tensor.DefaultBatchNorm()
	out := planes * bottleneckExpansion
	main := NewSequential(
		Child{"conv1", resNetConv(b, in, planes, 1, 1, 0)},
		Child{"bn1", NewBatchNorm2D(b.Dev, planes, bnp)},
		Child{"relu", NewReLU()},
		Child{"conv2", resNetConv(b, planes, planes, 3, stride, 1)},
		Child{"bn2", NewBatchNorm2D(b.Dev, planes, bnp)},
		// torchvision applies its one self.relu module three times; the
		// copies here hold no state, so only the first needs its name.
		Child{"", NewReLU()},
		Child{"conv3", resNetConv(b, planes, out, 1, 1, 0)},
		Child{"bn3", NewBatchNorm2D(b.Dev, out, bnp)},
	)
	var shortcut Child
	if stride != 1 || in != out {
		shortcut = Child{"downsample", Seq(resNetConv(b, in, out, 1, stride, 0), NewBatchNorm2D(b.Dev, out, bnp))}
	}
	return NewResidual(Child{"", main}, shortcut, NewReLU())
}

// resNetConv is a square convolution without bias, initialised as
// torchvision's ResNet re-initialises every nn.Conv2d:
// kaiming_normal_(mode="fan_out", nonlinearity="relu"), N(0, 2/fan_out)
// with fan_out = out·k². torch's default initialisation, which that
// overwrites, is skipped.
func resNetConv(b *Builder, in, out, k, stride, pad int) *Conv2D {
	c := NewConv2D(b.Dev, Conv2DConfig{
		In: in, Out: out, KH: k, KW: k,
		StrideH: stride, StrideW: stride, PadH: pad, PadW: pad,
	}, nil)
	KaimingNormal(b.Dev, c.Weight.Value, 0, FanOut, b.Rng)
	return c
}
