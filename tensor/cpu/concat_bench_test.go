package cpu_test

import (
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// benchChannels times joining parts tensors of [n, c, h, h] into one [n,
// parts·c, h, h], as an Inception block joins its branches, or splitting
// it back; each element is read once and written once.
func benchChannels(b *testing.B, parts, c, h, n int, split bool) {
	dev := newElementwiseBenchDevice(b)
	whole := dev.Alloc(tensor.Activations, n, parts*c, h, h)
	defer whole.Release()
	branches := make([]*tensor.Tensor, parts)
	for i := range branches {
		branches[i] = dev.Alloc(tensor.Activations, n, c, h, h)
		defer branches[i].Release()
	}
	b.SetBytes(2 * whole.Bytes())
	b.ResetTimer()
	for b.Loop() {
		if split {
			dev.SplitChannels(whole, branches)
		} else {
			dev.ConcatChannels(whole, branches)
		}
	}
}

func BenchmarkConcatChannels4x64H35N8(b *testing.B) { benchChannels(b, 4, 64, 35, 8, false) }

func BenchmarkSplitChannels4x64H35N8(b *testing.B) { benchChannels(b, 4, 64, 35, 8, true) }
