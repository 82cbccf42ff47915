package cpu_test

import (
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// benchDropout times a dropout of probability 0.5 (VGG's classifier) on
// [n, features]; each element is read once and written once.
func benchDropout(b *testing.B, features, n int, backward bool) {
	dev := newElementwiseBenchDevice(b)
	x := dev.Alloc(tensor.Activations, n, features)
	y := dev.Alloc(tensor.Activations, n, features)
	defer x.Release()
	defer y.Release()
	dev.Fill(x, 1)
	key := tensor.DropoutKey{Seed: 1, Layer: 2}
	b.SetBytes(2 * x.Bytes())
	b.ResetTimer()
	for b.Loop() {
		key.Step++
		if backward {
			dev.DropoutBackward(x, y, 0.5, key)
		} else {
			dev.DropoutForward(x, y, 0.5, key)
		}
	}
}

func BenchmarkDropoutForward4096N32(b *testing.B) { benchDropout(b, 4096, 32, false) }

func BenchmarkDropoutBackward4096N32(b *testing.B) { benchDropout(b, 4096, 32, true) }
