package models

// Small blocks of the zoo's kinds, which the tests of layers, containers,
// naming and split backwards build.

import (
	"math/rand/v2"

	"github.com/pipecast/pipecast/tensor"
)

// convNoBias returns a convolution without bias, as the zoo's blocks use.
func convNoBias(dev tensor.Device, rng *rand.Rand, in, out, kh, kw, stride, padH, padW int) *Conv2D {
	return NewConv2D(dev, Conv2DConfig{In: in, Out: out, KH: kh, KW: kw, StrideH: stride, StrideW: stride, PadH: padH, PadW: padW}, rng)
}

// basicConv2d is torchvision's Inception BasicConv2d: conv (no bias), bn
// with eps 1e-3, relu.
func basicConv2d(dev tensor.Device, rng *rand.Rand, in, out, kh, kw, padH, padW int) *Sequential {
	return NewSequential(
		Child{"conv", convNoBias(dev, rng, in, out, kh, kw, 1, padH, padW)},
		Child{"bn", NewBatchNorm2D(dev, out, tensor.BatchNormParams{Momentum: 0.1, Eps: 1e-3})},
		Child{"", NewReLU()},
	)
}

// smallSequential is a VGG-like stack: conv, bn, relu, maxpool, flatten,
// linear, on [N, 3, 7, 7] inputs.
func smallSequential(dev tensor.Device, rng *rand.Rand) Layer {
	return Seq(
		NewConv2D(dev, Conv2DConfig{In: 3, Out: 4, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, Bias: true}, rng),
		NewBatchNorm2D(dev, 4, tensor.DefaultBatchNorm()),
		NewReLU(),
		NewMaxPool2D(tensor.Pool2DParams{KH: 2, KW: 2, StrideH: 2, StrideW: 2}),
		NewFlatten(),
		NewLinear(dev, 4*3*3, 5, true, rng),
	)
}

// smallInceptionE has InceptionE's structure with few channels: branch1x1;
// branch3x3_1 followed by branch3x3_2a and branch3x3_2b side by side;
// and an average pool followed by branch_pool. The nested groups have
// empty names, so the state_dict names are torchvision's.
func smallInceptionE(dev tensor.Device, rng *rand.Rand) Layer {
	return NewConcat(
		Child{"branch1x1", basicConv2d(dev, rng, 4, 3, 1, 1, 0, 0)},
		Child{"", NewSequential(
			Child{"branch3x3_1", basicConv2d(dev, rng, 4, 3, 1, 1, 0, 0)},
			Child{"", NewConcat(
				Child{"branch3x3_2a", basicConv2d(dev, rng, 3, 2, 1, 3, 0, 1)},
				Child{"branch3x3_2b", basicConv2d(dev, rng, 3, 2, 3, 1, 1, 0)},
			)},
		)},
		Child{"", NewSequential(
			Child{"", NewAvgPool2D(tensor.Pool2DParams{KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1})},
			Child{"branch_pool", basicConv2d(dev, rng, 4, 2, 1, 1, 0, 0)},
		)},
	)
}

// smallBottleneck is torchvision's Bottleneck with stride 2 and a
// downsample shortcut: in → width → width (3x3, stride 2) → out.
func smallBottleneck(dev tensor.Device, rng *rand.Rand, in, width, out int) Layer {
	bnp := tensor.DefaultBatchNorm()
	return NewResidual(
		Child{"", NewSequential(
			Child{"conv1", convNoBias(dev, rng, in, width, 1, 1, 1, 0, 0)},
			Child{"bn1", NewBatchNorm2D(dev, width, bnp)},
			Child{"", NewReLU()},
			Child{"conv2", convNoBias(dev, rng, width, width, 3, 3, 2, 1, 1)},
			Child{"bn2", NewBatchNorm2D(dev, width, bnp)},
			Child{"", NewReLU()},
			Child{"conv3", convNoBias(dev, rng, width, out, 1, 1, 1, 0, 0)},
			Child{"bn3", NewBatchNorm2D(dev, out, bnp)},
		)},
		Child{"downsample", Seq(convNoBias(dev, rng, in, out, 1, 1, 2, 0, 0), NewBatchNorm2D(dev, out, bnp))},
		NewReLU(),
	)
}

// smallBasicBlock is torchvision's BasicBlock without downsampling: the
// shortcut is the identity, so the block adds its borrowed input.
func smallBasicBlock(dev tensor.Device, rng *rand.Rand, c int) Layer {
	bnp := tensor.DefaultBatchNorm()
	return NewResidual(
		Child{"", NewSequential(
			Child{"conv1", convNoBias(dev, rng, c, c, 3, 3, 1, 1, 1)},
			Child{"bn1", NewBatchNorm2D(dev, c, bnp)},
			Child{"", NewReLU()},
			Child{"conv2", convNoBias(dev, rng, c, c, 3, 3, 1, 1, 1)},
			Child{"bn2", NewBatchNorm2D(dev, c, bnp)},
		)},
		Child{},
		NewReLU(),
	)
}

// The builders, for the tests in package models_test: an external test
// package sees what the package's own test files declare.
var (
	ConvNoBias      = convNoBias
	SmallSequential = smallSequential
	SmallInceptionE = smallInceptionE
	SmallBottleneck = smallBottleneck
	SmallBasicBlock = smallBasicBlock
)
