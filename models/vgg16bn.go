package models

import (
	"strconv"

	"github.com/pipecast/pipecast/tensor"
)

// VGG16-BN is torchvision's vgg16_bn (torchvision/models/vgg.py, 0.14):
// configuration "D" of Simonyan and Zisserman, "Very Deep Convolutional
// Networks for Large-Scale Image Recognition", ICLR 2015, with a batch
// normalisation after every convolution. Its state_dict names follow
// torchvision's module indices: features.0 (conv), features.1 (bn),
// features.2 (relu), …, features.6 (max-pool), …, features.43; avgpool;
// classifier.0, .3 and .6 (linear layers), with ReLU and dropout between
// them at .1, .2, .4 and .5.
func init() {
	register(Arch{
		Name:         "vgg16bn",
		Description:  "VGG16 with batch normalisation, as torchvision's vgg16_bn (138.4 M parameters at 1000 classes)",
		DefaultImage: 224,
		// Five 2×2 max-pools halve the input, rounding down, and the
		// last must still see a 2×2 map: 32 → 16 → 8 → 4 → 2 → 1.
		MinImage: 32,
		defaults: vggDefaults,
		build:    func(b *Builder) ([]*Block, error) { return buildVGG16(b, true) },
	})
	// torchvision's vgg16, the same network without batch normalisation:
	// features.0 (conv), features.1 (relu), features.4 (max-pool), …
	register(Arch{
		Name:         "vgg16",
		Description:  "VGG16 without batch normalisation, as torchvision's vgg16 (138.4 M parameters at 1000 classes)",
		DefaultImage: 224,
		MinImage:     32,
		defaults:     vggDefaults,
		build:        func(b *Builder) ([]*Block, error) { return buildVGG16(b, false) },
	})
}

// vggDefaults are torchvision's: 1000 classes at 224×224.
func vggDefaults(c *Config) {
	if c.Classes == 0 {
		c.Classes = 1000
	}
	if c.Image == 0 {
		c.Image = 224
	}
}

// vgg16Features is torchvision's cfgs["D"]: output channels of each 3×3
// convolution, and vggPool for each 2×2 max-pool.
var vgg16Features = []int{64, 64, vggPool, 128, 128, vggPool, 256, 256, 256, vggPool,
	512, 512, 512, vggPool, 512, 512, 512, vggPool}

const (
	vggPool = 0 // a max-pool in vgg16Features
	// vggAvgPool is the side of the adaptive average pool before the
	// classifier, which makes the classifier's input independent of the
	// image size.
	vggAvgPool = 7
	// vggHidden is the width of the classifier's two hidden layers.
	vggHidden = 4096
	// vggDropout is the classifier's dropout probability.
	vggDropout = 0.5
)

// buildVGG16 builds the blocks: each conv-bn-relu triple (conv-relu pair
// without bn) is one block,
// named by its convolution, and each max-pool another. The classifier is
// three blocks, one per linear layer; the adaptive average pool and the
// flatten go into the first of them rather than a block of their own:
// they do no multiply-accumulates, and a boundary after the pool would
// carry no less than the one before it at 224 and below (it maps 7×7 to
// 7×7 at 224 and enlarges smaller maps to 7×7), so a pipeline would
// never gain by splitting there.
func buildVGG16(b *Builder, bn bool) ([]*Block, error) {
	b.Input = tensor.Shape{3, b.Config.Image, b.Config.Image}
	var blocks []*Block
	in, idx := 3, 0
	for _, v := range vgg16Features {
		name := "features." + strconv.Itoa(idx)
		if v == vggPool {
			pool := NewMaxPool2D(tensor.Pool2DParams{KH: 2, KW: 2, StrideH: 2, StrideW: 2})
			blocks = append(blocks, b.Block(name, Child{name, pool}))
			idx++
			continue
		}
		out := b.Channels(v)
		children := []Child{{name, vggConv(b, in, out)}}
		if bn {
			idx++
			children = append(children, Child{"features." + strconv.Itoa(idx), NewBatchNorm2D(b.Dev, out, tensor.DefaultBatchNorm())})
		}
		children = append(children, Child{"features." + strconv.Itoa(idx+1), NewReLU()})
		blocks = append(blocks, b.Block(name, children...))
		in, idx = out, idx+2
	}

	hidden := b.Channels(vggHidden)
	blocks = append(blocks,
		b.Block("classifier.0",
			Child{"avgpool", NewAdaptiveAvgPool2D(vggAvgPool, vggAvgPool)},
			// torch.flatten(x, 1) is a function call in VGG.forward, not
			// a module, so it has no name.
			Child{"", NewFlatten()},
			Child{"classifier.0", vggLinear(b, in*vggAvgPool*vggAvgPool, hidden)},
			Child{"classifier.1", NewReLU()},
			Child{"classifier.2", b.Dropout(vggDropout)},
		),
		b.Block("classifier.3",
			Child{"classifier.3", vggLinear(b, hidden, hidden)},
			Child{"classifier.4", NewReLU()},
			Child{"classifier.5", b.Dropout(vggDropout)},
		),
		b.Block("classifier.6", Child{"classifier.6", vggLinear(b, hidden, b.Config.Classes)}),
	)
	return blocks, nil
}

// vggConv returns a 3×3 convolution with padding 1 and a bias,
// initialised as VGG._initialize_weights does: kaiming_normal_ with
// mode="fan_out" and nonlinearity="relu" (std √(2/(out·9))), bias 0.
// torch first draws the layer's default initialisation and then
// overwrites it; the layer is built without a generator here so that
// those draws, half of a full-size build's, are skipped.
func vggConv(b *Builder, in, out int) *Conv2D {
	c := NewConv2D(b.Dev, Conv2DConfig{In: in, Out: out, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, Bias: true}, nil)
	if b.Rng != nil {
		KaimingNormal(b.Dev, c.Weight.Value, 0, FanOut, b.Rng)
		Constant(b.Dev, c.Bias.Value, 0)
	}
	return c
}

// vggLinear returns a fully connected layer initialised as
// VGG._initialize_weights does: weight N(0, 0.01²), bias 0.
func vggLinear(b *Builder, in, out int) *Linear {
	l := NewLinear(b.Dev, in, out, true, nil)
	if b.Rng != nil {
		Normal(b.Dev, l.Weight.Value, 0, 0.01, b.Rng)
		Constant(b.Dev, l.Bias.Value, 0)
	}
	return l
}
