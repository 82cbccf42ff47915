package cpu

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

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

// Scale multiplies every element of t by alpha.
func (d *Device) Scale(t *tensor.Tensor, alpha float32) {
	x := d.data("scale", t, t.Len())
	d.pool.parallel(len(x), elementGrain, func(lo, hi int) {
		s := x[lo:hi]
		for i, v := range s {
			s[i] = v * alpha
		}
	})
}

// Add sets y = a + b. y may alias a or b: each element is read before it
// is written, and no other element is touched in between.
func (d *Device) Add(y, a, b *tensor.Tensor) {
	mustAgree("add", y, a, b)
	out := d.data("add", y, y.Len())
	xa := d.data("add", a, y.Len())
	xb := d.data("add", b, y.Len())
	d.pool.parallel(len(out), elementGrain, func(lo, hi int) {
		o, p, q := out[lo:hi], xa[lo:hi], xb[lo:hi]
		p, q = p[:len(o)], q[:len(o)]
		if n := len(o) &^ 7; elemSIMD && n > 0 {
			add8(&o[0], &p[0], &q[0], n)
			o, p, q = o[n:], p[n:], q[n:]
		}
		for i := range o {
			o[i] = p[i] + q[i]
		}
	})
}

// Axpy sets y += alpha·x.
func (d *Device) Axpy(alpha float32, x, y *tensor.Tensor) {
	mustAgree("axpy", y, x)
	out := d.data("axpy", y, y.Len())
	in := d.data("axpy", x, y.Len())
	d.pool.parallel(len(out), elementGrain, func(lo, hi int) {
		o, s := out[lo:hi], in[lo:hi]
		s = s[:len(o)]
		for i, v := range o {
			o[i] = v + alpha*s[i]
		}
	})
}

// mustAgree panics unless every tensor has the shape of the first. It is
// tensor.SameShape with this package's prefix, so that a panic names the
// backend that caught it.
func mustAgree(op string, ts ...*tensor.Tensor) {
	for _, o := range ts[1:] {
		if !o.Shape().Equal(ts[0].Shape()) {
			panic(fmt.Sprintf("cpu: %s: shape %v does not match %v", op, o.Shape(), ts[0].Shape()))
		}
	}
}
