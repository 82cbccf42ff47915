package cuda

import (
	"github.com/pipecast/pipecast/tensor"
)

// Fill sets every element of t to v (pc_fill).
func (d *Device) Fill(t *tensor.Tensor, v float32) {
	n := int64(t.Len())
	d.launchFill(gridStride(n), block1D, d.ptr("fill", t, t.Len()), n, v)
}

// Copy copies src into dst within the device's memory; the element counts
// must agree.
func (d *Device) Copy(dst, src *tensor.Tensor) {
	const op = "copy"
	y, x := d.ptr(op, dst, src.Len()), d.ptr(op, src, src.Len())
	if n := int64(src.Len()) * tensor.BytesPerElement; n > 0 {
		d.check(op, d.drv.Copy(y, x, n))
	}
}

// Scale multiplies every element of t by alpha (pc_scale).
func (d *Device) Scale(t *tensor.Tensor, alpha float32) {
	n := int64(t.Len())
	d.launchScale(gridStride(n), block1D, d.ptr("scale", t, t.Len()), n, alpha)
}

// Add sets y = a + b (pc_add); y may alias a or b.
func (d *Device) Add(y, a, b *tensor.Tensor) {
	const op = "add"
	tensor.SameShape(op, y, a, b)
	n := y.Len()
	d.launchAdd(gridStride(int64(n)), block1D, d.ptr(op, y, n), d.ptr(op, a, n), d.ptr(op, b, n), int64(n))
}

// Axpy sets y += alpha·x (pc_axpy).
func (d *Device) Axpy(alpha float32, x, y *tensor.Tensor) {
	const op = "axpy"
	tensor.SameShape(op, y, x)
	n := y.Len()
	d.launchAxpy(gridStride(int64(n)), block1D, d.ptr(op, y, n), d.ptr(op, x, n), int64(n), alpha)
}

// ReLUForward sets y = max(x, 0) (pc_relu_fwd); y may alias x.
func (d *Device) ReLUForward(x, y *tensor.Tensor) {
	const op = "relu forward"
	tensor.SameShape(op, x, y)
	n := x.Len()
	d.launchReluFwd(gridStride(int64(n)), block1D, d.ptr(op, x, n), d.ptr(op, y, n), int64(n))
}

// ReLUBackward sets dx = dy where y > 0, else 0 (pc_relu_bwd); dx may
// alias dy.
func (d *Device) ReLUBackward(y, dy, dx *tensor.Tensor) {
	const op = "relu backward"
	tensor.SameShape(op, y, dy, dx)
	n := y.Len()
	d.launchReluBwd(gridStride(int64(n)), block1D, d.ptr(op, y, n), d.ptr(op, dy, n), d.ptr(op, dx, n), int64(n))
}
