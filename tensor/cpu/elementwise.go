package cpu

import "github.com/pipecast/pipecast/tensor"

// elementGrain is the fewest elements worth handing to another thread.
const elementGrain = 1 << 14

// Fill sets every element of t to v.
func (d *Device) Fill(t *tensor.Tensor, v float32) {
	x := d.data("fill", t, t.Len())
	d.pool.parallel(len(x), elementGrain, func(lo, hi int) {
		s := x[lo:hi]
		for i := range s {
			s[i] = v
		}
	})
}

// Copy copies src into dst.
func (d *Device) Copy(dst, src *tensor.Tensor) {
	y := d.data("copy", dst, src.Len())
	x := d.data("copy", src, src.Len())
	d.pool.parallel(len(x), elementGrain, func(lo, hi int) { copy(y[lo:hi], x[lo:hi]) })
}

func (d *Device) Scale(t *tensor.Tensor, alpha float32) { panic("cpu: not implemented") }

func (d *Device) Add(y, a, b *tensor.Tensor) { panic("cpu: not implemented") }

func (d *Device) Axpy(alpha float32, x, y *tensor.Tensor) { panic("cpu: not implemented") }
