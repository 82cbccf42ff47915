package cpu

import (
	"fmt"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// TestConvWorkspaceElems checks the written-out policy against the
// kernels: the workspace peak of each pass equals the formula.
func TestConvWorkspaceElems(t *testing.T) {
	tests := []struct {
		x, w tensor.Shape
		p    tensor.Conv2DParams
	}{
		{tensor.Shape{4, 3, 9, 9}, tensor.Shape{5, 3, 3, 3}, tensor.Conv2DParams{StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}},
		{tensor.Shape{1, 3, 9, 9}, tensor.Shape{5, 3, 3, 3}, tensor.Conv2DParams{StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}},
		{tensor.Shape{5, 8, 4, 4}, tensor.Shape{16, 8, 1, 1}, tensor.Conv2DParams{StrideH: 1, StrideW: 1}},                   // direct
		{tensor.Shape{3, 8, 4, 4}, tensor.Shape{64, 8, 3, 3}, tensor.Conv2DParams{StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}}, // O > P
		{tensor.Shape{2, 4, 7, 7}, tensor.Shape{6, 4, 1, 7}, tensor.Conv2DParams{StrideH: 1, StrideW: 1, PadW: 3}},
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
