package models

import (
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cpu"
)

// benchmarkTrainStep times one training forward and backward of the block
// that build returns on an input of shape in, on a device of two threads.
func benchmarkTrainStep(b *testing.B, build func(tensor.Device, *rand.Rand) Layer, in ...int) {
	dev := cpu.New(tensor.Options{Threads: 2})
	defer dev.Close()
	rng := newRand(1)
	l := build(dev, rng)
	defer ReleaseLayer(l)
	x, _ := uploadRand(dev, tensor.Boundary, rng, in...)
	defer x.Release()
	out, err := l.OutShape(x.Shape())
	if err != nil {
		b.Fatal(err)
	}
	dy, _ := uploadRand(dev, tensor.Boundary, rng, out...)
	defer dy.Release()
	p := &Pass{Dev: dev, Train: true, Grad: true}
	b.ResetTimer()
	for range b.N {
		y, ctx := l.Forward(p, x)
		dx := l.Backward(p, ctx, dy)
		y.Release()
		dx.Release()
	}
}

// BenchmarkBottleneckTrain14Batch4 is a ResNet-50 layer3-shaped
// bottleneck (256→64→64→256) at 14×14, without downsampling.
func BenchmarkBottleneckTrain14Batch4(b *testing.B) {
	benchmarkTrainStep(b, func(dev tensor.Device, rng *rand.Rand) Layer {
		bnp := tensor.DefaultBatchNorm()
		return NewResidual(Child{"", NewSequential(
			Child{"conv1", convNoBias(dev, rng, 256, 64, 1, 1, 1, 0, 0)},
			Child{"bn1", NewBatchNorm2D(dev, 64, bnp)},
			Child{"", NewReLU()},
			Child{"conv2", convNoBias(dev, rng, 64, 64, 3, 3, 1, 1, 1)},
			Child{"bn2", NewBatchNorm2D(dev, 64, bnp)},
			Child{"", NewReLU()},
			Child{"conv3", convNoBias(dev, rng, 64, 256, 1, 1, 1, 0, 0)},
			Child{"bn3", NewBatchNorm2D(dev, 256, bnp)},
		)}, Child{}, NewReLU())
	}, 4, 256, 14, 14)
}

// BenchmarkInceptionESmallTrain8Batch4 is the InceptionE-shaped concat of
// the container tests with 64 input channels at 8×8.
func BenchmarkInceptionESmallTrain8Batch4(b *testing.B) {
	benchmarkTrainStep(b, func(dev tensor.Device, rng *rand.Rand) Layer {
		return NewConcat(
			Child{"branch1x1", basicConv2d(dev, rng, 64, 32, 1, 1, 0, 0)},
			Child{"", NewSequential(
				Child{"branch3x3_1", basicConv2d(dev, rng, 64, 32, 1, 1, 0, 0)},
				Child{"", NewConcat(
					Child{"branch3x3_2a", basicConv2d(dev, rng, 32, 32, 1, 3, 0, 1)},
					Child{"branch3x3_2b", basicConv2d(dev, rng, 32, 32, 3, 1, 1, 0)},
				)},
			)},
			Child{"", NewSequential(
				Child{"", NewAvgPool2D(tensor.Pool2DParams{KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1})},
				Child{"branch_pool", basicConv2d(dev, rng, 64, 16, 1, 1, 0, 0)},
			)},
		)
	}, 4, 64, 8, 8)
}

// BenchmarkClassifierTrainBatch16 is VGG's classifier head scaled down:
// linear, relu, dropout, linear on 1024 features.
func BenchmarkClassifierTrainBatch16(b *testing.B) {
	benchmarkTrainStep(b, func(dev tensor.Device, rng *rand.Rand) Layer {
		return Seq(NewLinear(dev, 1024, 512, true, rng), NewReLU(), NewDropout(0.5, 1), NewLinear(dev, 512, 10, true, rng))
	}, 16, 1024)
}

// BenchmarkZooTrain times the forward and backward of whole zoo networks
// at torchvision's widths, on the sizes the CPU kernels are compared with
// PyTorch at (scripts/step-vs-pytorch.sh): a profile of it
// (-cpuprofile) shows where a training step's time goes, kernel by
// kernel.
func BenchmarkZooTrain(b *testing.B) {
	for _, c := range []struct {
		name         string
		image, batch int
	}{{"resnet50", 64, 32}, {"vgg16bn", 64, 16}, {"inceptionv3", 96, 16}} {
		b.Run(c.name, func(b *testing.B) {
			benchmarkTrainStep(b, func(dev tensor.Device, rng *rand.Rand) Layer {
				m, err := Build(dev, c.name, Config{Classes: 10, Image: c.image}, rng)
				if err != nil {
					b.Fatal(err)
				}
				return m.Net
			}, c.batch, 3, c.image, c.image)
		})
	}
}
