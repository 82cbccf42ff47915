package tensortest

import (
	"fmt"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// Factory opens a device of the backend under test with the given number of
// worker threads and index.
type Factory func(index, threads int) tensor.Device

// threadCounts are the pool sizes every kernel is tested with: one thread,
// and an odd number that splits work unevenly.
var threadCounts = []int{1, 3}

// Run runs the whole suite on devices that newDevice opens.
func Run(t *testing.T, newDevice Factory) {
	tests := []struct {
		name string
		fn   func(t *testing.T, dev tensor.Device)
	}{
		{"Memory", testMemory},
		{"Views", testViews},
		{"Copy", testCopy},
		{"Elementwise", testElementwise},
		{"Gemm", testGemm},
		{"Linear", testLinear},
		{"Conv2D", testConv2D},
		{"BatchNorm", testBatchNorm},
		{"BatchNormReLU", testBatchNormReLU},
		{"ReLU", testReLU},
		{"MaxPool2D", testMaxPool2D},
		{"AvgPool2D", testAvgPool2D},
		{"AdaptiveAvgPool2D", testAdaptiveAvgPool2D},
		{"Concat", testConcat},
		{"Dropout", testDropout},
		{"SoftmaxCrossEntropy", testSoftmaxCrossEntropy},
		{"SGD", testSGD},
		{"AdamW", testAdamW},
		{"FiniteScreen", testFiniteScreen},
		{"Embedding", testEmbedding},
		{"LayerNorm", testLayerNorm},
		{"RMSNorm", testRMSNorm},
		{"GELUTanh", testGELUTanh},
		{"SwiGLU", testSwiGLU},
		{"RoPE", testRoPE},
		{"Attention", testAttention},
	}
	for _, threads := range threadCounts {
		for _, tc := range tests {
			t.Run(fmt.Sprintf("%s/threads=%d", tc.name, threads), func(t *testing.T) {
				dev := newDevice(0, threads)
				defer dev.Close()
				tc.fn(t, dev)
				checkNoLeak(t, dev)
			})
		}
	}
	t.Run("CrossDeviceCopy", func(t *testing.T) {
		a, b := newDevice(0, 1), newDevice(1, 2)
		defer a.Close()
		defer b.Close()
		testCrossDeviceCopy(t, a, b)
		checkNoLeak(t, a)
		checkNoLeak(t, b)
	})
}

// checkNoLeak fails if a test left tensors allocated: every kernel test
// releases what it allocates, and kernels release their workspace.
func checkNoLeak(t *testing.T, dev tensor.Device) {
	t.Helper()
	m := dev.Memory()
	if m.LiveTotalBytes != 0 {
		t.Errorf("%s: %d bytes still live after the test (by category %v)", dev.Name(), m.LiveTotalBytes, m.LiveBytes)
	}
}
