package cpu

import (
	"fmt"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// TestConvWorkspaceElems checks the written-out policy against the
// kernels: the workspace peak of each pass equals the formula.
func TestConvWorkspaceElems(t *testing.T) {
	s1 := tensor.Conv2DParams{StrideH: 1, StrideW: 1}
	same3 := tensor.Conv2DParams{StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}
	tests := []struct {
		x, w tensor.Shape
		p    tensor.Conv2DParams
	}{
		{tensor.Shape{4, 3, 9, 9}, tensor.Shape{5, 3, 3, 3}, same3},
		{tensor.Shape{1, 3, 9, 9}, tensor.Shape{5, 3, 3, 3}, tensor.Conv2DParams{StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}}, // N < T
		{tensor.Shape{5, 8, 4, 4}, tensor.Shape{16, 8, 1, 1}, s1},                                                           // direct, grouped on the whole pool
		{tensor.Shape{3, 8, 4, 4}, tensor.Shape{64, 8, 3, 3}, same3},                                                        // O > group·P
		{tensor.Shape{2, 4, 7, 7}, tensor.Shape{6, 4, 1, 7}, tensor.Conv2DParams{StrideH: 1, StrideW: 1, PadW: 3}},
		// Small P: every sample in one product on the whole pool.
		{tensor.Shape{6, 8, 2, 2}, tensor.Shape{5, 8, 3, 3}, same3},
		// P = 64: groups of 8 (10 = 8 + 2) on the whole pool with 1 or 3
		// threads; 2 threads take 5 samples each, in one group.
		{tensor.Shape{10, 3, 8, 8}, tensor.Shape{6, 3, 3, 3}, same3},
		// P = 256: threads take groups of 2 samples and a last one, the
		// sample left over runs on the whole pool.
		{tensor.Shape{7, 3, 16, 16}, tensor.Shape{4, 3, 3, 3}, same3},
		{tensor.Shape{7, 4, 16, 16}, tensor.Shape{5, 4, 1, 1}, s1}, // direct, grouped per thread
		{tensor.Shape{3, 4, 32, 32}, tensor.Shape{5, 4, 1, 1}, s1}, // direct, P ≥ the target: no buffers
		// 1×1 with stride 2 (ResNet's downsample): a gather, grouped.
		{tensor.Shape{6, 8, 4, 4}, tensor.Shape{5, 8, 1, 1}, tensor.Conv2DParams{StrideH: 2, StrideW: 2}},
		// Threads could take groups of 4 but a partial dw (O = 300 > 4·64)
		// outweighs the column buffer: the filter gradient runs on the
		// whole pool.
		{tensor.Shape{8, 4, 8, 8}, tensor.Shape{300, 4, 3, 3}, same3},
	}
	for _, threads := range []int{1, 2, 3} {
		for _, tc := range tests {
			t.Run(fmt.Sprintf("%v%v/threads=%d", tc.x, tc.w, threads), func(t *testing.T) {
				d := New(tensor.Options{Threads: threads})
				defer d.Close()
				oh, ow := tc.p.OutSize(tc.x[2], tc.x[3], tc.w[2], tc.w[3])
				yShape := tensor.Shape{tc.x[0], tc.w[0], oh, ow}
				x, w, y := d.Alloc(tensor.Activations, tc.x...), d.Alloc(tensor.Weights, tc.w...), d.Alloc(tensor.Activations, yShape...)
				defer x.Release()
				defer w.Release()
				defer y.Release()
				for _, pass := range []ConvPass{ConvForward, ConvBackwardData, ConvBackwardFilter} {
					d.ResetPeak()
					switch pass {
					case ConvForward:
						d.Conv2DForward(x, w, nil, y, tc.p)
					case ConvBackwardData:
						d.Conv2DBackwardData(y, w, x, tc.p)
					case ConvBackwardFilter:
						d.Conv2DBackwardFilter(x, y, w, nil, tc.p)
					}
					got := d.Memory().PeakBytes[tensor.Workspace]
					want := int64(ConvWorkspaceElems(pass, tc.x, tc.w, yShape, tc.p, threads)) * tensor.BytesPerElement
					if got != want {
						t.Errorf("pass %d: workspace peak %d bytes, formula %d", pass, got, want)
					}
				}
			})
		}
	}
}
