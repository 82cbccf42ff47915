package meta_test

import (
	"fmt"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cpu"
	"github.com/pipecast/pipecast/tensor/meta"
)

// TestScratchOfCPU checks that with the CPU backend linked, a meta device
// opened through the registry accounts the scratch the CPU backend's
// written-out policy gives, pass by pass and product by product.
func TestScratchOfCPU(t *testing.T) {
	same3 := tensor.Conv2DParams{StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}
	convs := []struct {
		x, w tensor.Shape
		p    tensor.Conv2DParams
	}{
		{tensor.Shape{4, 3, 9, 9}, tensor.Shape{5, 3, 3, 3}, same3},
		{tensor.Shape{6, 8, 4, 4}, tensor.Shape{5, 8, 1, 1}, tensor.Conv2DParams{StrideH: 2, StrideW: 2}},
		{tensor.Shape{8, 4, 8, 8}, tensor.Shape{300, 4, 3, 3}, same3},
	}
	for _, threads := range []int{1, 2, 3} {
		d, err := tensor.Open(meta.BackendName, tensor.Options{Threads: threads})
		if err != nil {
			t.Fatal(err)
		}
		peak := func(run func()) int64 {
			d.ResetPeak()
			run()
			return d.Memory().PeakBytes[tensor.Workspace]
		}
		for _, c := range convs {
			oh, ow := c.p.OutSize(c.x[2], c.x[3], c.w[2], c.w[3])
			ys := tensor.Shape{c.x[0], c.w[0], oh, ow}
			x, w, y := d.Alloc(tensor.Activations, c.x...), d.Alloc(tensor.Weights, c.w...), d.Alloc(tensor.Activations, ys...)
			for _, tc := range []struct {
				pass tensor.ConvPass
				run  func()
			}{
				{tensor.ConvForward, func() { d.Conv2DForward(x, w, nil, y, c.p) }},
				{tensor.ConvBackwardData, func() { d.Conv2DBackwardData(y, w, x, c.p) }},
				{tensor.ConvBackwardFilter, func() { d.Conv2DBackwardFilter(x, y, w, nil, c.p) }},
			} {
				t.Run(fmt.Sprintf("%v%v/pass=%d/threads=%d", c.x, c.w, tc.pass, threads), func(t *testing.T) {
					want := int64(cpu.ConvWorkspaceElems(tc.pass, c.x, c.w, ys, c.p, threads)) * tensor.BytesPerElement
					if got := peak(tc.run); got != want {
						t.Errorf("workspace peak: got %d bytes, want %d", got, want)
					}
				})
			}
			x.Release()
			w.Release()
			y.Release()
		}
		for _, mnk := range [][3]int{{1, 1, 1}, {64, 300, 50}, {500, 11, 700}} {
			m, n, k := mnk[0], mnk[1], mnk[2]
			a, b, c := d.Alloc(tensor.Activations, m, k), d.Alloc(tensor.Weights, k, n), d.Alloc(tensor.Activations, m, n)
			want := int64(cpu.GemmWorkspaceElems(m, n, k, threads)) * tensor.BytesPerElement
			if got := peak(func() { d.Gemm(false, false, 1, a, b, 0, c) }); got != want {
				t.Errorf("gemm %d×%d×%d on %d threads: workspace peak %d bytes, want %d", m, n, k, threads, got, want)
			}
			a.Release()
			b.Release()
			c.Release()
		}
		d.Close()
	}
}
