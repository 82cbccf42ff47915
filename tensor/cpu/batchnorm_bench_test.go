package cpu_test

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cpu"
)

// newNormBenchDevice opens a device with one thread per core, closed when
// the benchmark ends.
func newNormBenchDevice(b *testing.B) *cpu.Device {
	dev := cpu.New(tensor.Options{Threads: runtime.NumCPU()})
	b.Cleanup(func() { dev.Close() })
	return dev
}

// benchUniform returns a tensor of the given shape holding values uniform
// in [lo, hi), so that kernels with data-dependent branches (ReLU, max
// pooling) see realistic inputs.
func benchUniform(dev *cpu.Device, lo, hi float32, shape ...int) *tensor.Tensor {
	t := dev.Alloc(tensor.Activations, shape...)
	rng := rand.New(rand.NewPCG(1, 2))
	d := cpu.Data(t)
	for i := range d {
		d[i] = lo + (hi-lo)*rng.Float32()
	}
	return t
}

// benchBatchNorm times one batch-norm kernel on [n, c, h, h] (ResNet's
// first stage at c 64, h 56). The bytes counted are each input and
// output tensor once: x and y for the forwards, x, dy and dx for the
// backward.
func benchBatchNorm(b *testing.B, kernel string, n, c, h int) {
	dev := newNormBenchDevice(b)
	x := benchUniform(dev, -1, 1, n, c, h, h)
	y := dev.Alloc(tensor.Activations, n, c, h, h)
	dy := benchUniform(dev, -1, 1, n, c, h, h)
	per := make([]*tensor.Tensor, 8) // gamma, beta, runMean, runVar, mean, invStd, dgamma, dbeta
	for i := range per {
		per[i] = dev.Alloc(tensor.Weights, c)
		dev.Fill(per[i], 1)
	}
	defer func() {
		for _, t := range append(per, x, y, dy) {
			t.Release()
		}
	}()
	gamma, beta, runMean, runVar, mean, inv, dgamma, dbeta := per[0], per[1], per[2], per[3], per[4], per[5], per[6], per[7]
	p := tensor.DefaultBatchNorm()
	dev.BatchNormTrain(x, gamma, beta, y, runMean, runVar, mean, inv, p)
	b.SetBytes(2 * x.Bytes())
	if kernel == "backward" {
		b.SetBytes(3 * x.Bytes())
	}
	b.ResetTimer()
	for b.Loop() {
		switch kernel {
		case "train":
			dev.BatchNormTrain(x, gamma, beta, y, runMean, runVar, mean, inv, p)
		case "eval":
			dev.BatchNormEval(x, gamma, beta, runMean, runVar, y, p)
		case "backward":
			dev.BatchNormBackward(x, dy, gamma, mean, inv, y, dgamma, dbeta)
		}
	}
}

func BenchmarkBatchNormTrainC64H56N8(b *testing.B) { benchBatchNorm(b, "train", 8, 64, 56) }

func BenchmarkBatchNormEvalC64H56N8(b *testing.B) { benchBatchNorm(b, "eval", 8, 64, 56) }

func BenchmarkBatchNormBackwardC64H56N8(b *testing.B) { benchBatchNorm(b, "backward", 8, 64, 56) }

// Inception-v3's last blocks: many channels on 8×8 maps.
func BenchmarkBatchNormTrainC192H8N8(b *testing.B) { benchBatchNorm(b, "train", 8, 192, 8) }

func BenchmarkBatchNormBackwardC192H8N8(b *testing.B) { benchBatchNorm(b, "backward", 8, 192, 8) }

// [N, C] input, as after a linear layer: each channel is strided.
func BenchmarkBatchNormTrainC4096H1N32(b *testing.B) { benchBatchNorm(b, "train", 32, 4096, 1) }

func BenchmarkBatchNormBackwardC4096H1N32(b *testing.B) { benchBatchNorm(b, "backward", 32, 4096, 1) }

// ResNet-50's last stages at 64 px, batch 32: 4×4 and 2×2 maps.
func BenchmarkBatchNormTrainC1024H4N32(b *testing.B)    { benchBatchNorm(b, "train", 32, 1024, 4) }
func BenchmarkBatchNormBackwardC1024H4N32(b *testing.B) { benchBatchNorm(b, "backward", 32, 1024, 4) }
func BenchmarkBatchNormTrainC2048H2N32(b *testing.B)    { benchBatchNorm(b, "train", 32, 2048, 2) }
func BenchmarkBatchNormBackwardC2048H2N32(b *testing.B) { benchBatchNorm(b, "backward", 32, 2048, 2) }
