package cuda

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// The pooling kernels are grid-stride loops over their outputs: the
// forwards over y, the backwards over dx, each dx element gathering the
// windows that hold it (no atomics, so the sums are deterministic).

// poolArgs are the sizes every pooling kernel takes after its pointers:
// n, c, h, w, oh, ow, then the window's kh, kw, sh, sw, ph, pw (the
// adaptive kernels take the first six only).
type poolArgs [12]int32

// poolCheck checks that in ([N, C, H, W], x or dx) and out (y or dy) live
// on d, that p is valid and that out is [N, C, OH, OW] as p.OutSize says.
func (d *Device) poolCheck(op string, in, out *tensor.Tensor, p tensor.Pool2DParams) poolArgs {
	d.mustOwn(op, in)
	d.mustOwn(op, out)
	if err := p.Validate(); err != nil {
		panic(fmt.Sprintf("cuda: %s: %v", op, err))
	}
	s := in.Shape()
	if len(s) != 4 {
		panic(fmt.Sprintf("cuda: %s: input shape %v, want [N, C, H, W]", op, s))
	}
	oh, ow := p.OutSize(s[2], s[3])
	want := tensor.Shape{s[0], s[1], oh, ow}
	if !want.Valid() || !out.Shape().Equal(want) {
		panic(fmt.Sprintf("cuda: %s: output shape %v for input %v, window %dx%d, stride %dx%d, padding %dx%d: want %v",
			op, out.Shape(), s, p.KH, p.KW, p.StrideH, p.StrideW, p.PadH, p.PadW, want))
	}
	var a poolArgs
	for i, v := range []int{s[0], s[1], s[2], s[3], oh, ow, p.KH, p.KW, p.StrideH, p.StrideW, p.PadH, p.PadW} {
		a[i] = i32(op, v)
	}
	return a
}

// adaptiveCheck checks that in [N, C, H, W] and out [N, C, OH, OW] live on
// d and agree in N and C.
func (d *Device) adaptiveCheck(op string, in, out *tensor.Tensor) poolArgs {
	d.mustOwn(op, in)
	d.mustOwn(op, out)
	s, o := in.Shape(), out.Shape()
	if len(s) != 4 || len(o) != 4 || s[0] != o[0] || s[1] != o[1] {
		panic(fmt.Sprintf("cuda: %s: input shape %v and output shape %v, want [N, C, H, W] and [N, C, OH, OW]", op, s, o))
	}
	var a poolArgs
	for i, v := range []int{s[0], s[1], s[2], s[3], o[2], o[3]} {
		a[i] = i32(op, v)
	}
	return a
}

// MaxPool2DForward sets y to the maximum of each window, padding counting
// as −∞ (pc_maxpool_fwd).
func (d *Device) MaxPool2DForward(x, y *tensor.Tensor, p tensor.Pool2DParams) {
	a := d.poolCheck("maxpool2d forward", x, y, p)
	d.launchMaxpoolFwd(gridStride(int64(y.Len())), block1D, PtrOf(x), PtrOf(y),
		a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11])
}

// MaxPool2DBackward sets dx: each window's dy goes to the first position
// holding the window's maximum in x (pc_maxpool_bwd).
func (d *Device) MaxPool2DBackward(x, dy, dx *tensor.Tensor, p tensor.Pool2DParams) {
	const op = "maxpool2d backward"
	a := d.poolCheck(op, x, dy, p)
	tensor.SameShape(op, x, dx)
	d.mustOwn(op, dx)
	d.launchMaxpoolBwd(gridStride(int64(dx.Len())), block1D, PtrOf(x), PtrOf(dy), PtrOf(dx),
		a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11])
}

// AvgPool2DForward sets y to each window's mean, the divisor KH·KW
// (pc_avgpool_fwd).
func (d *Device) AvgPool2DForward(x, y *tensor.Tensor, p tensor.Pool2DParams) {
	a := d.poolCheck("avgpool2d forward", x, y, p)
	d.launchAvgpoolFwd(gridStride(int64(y.Len())), block1D, PtrOf(x), PtrOf(y),
		a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11])
}

// AvgPool2DBackward sets dx from dy (pc_avgpool_bwd).
func (d *Device) AvgPool2DBackward(dy, dx *tensor.Tensor, p tensor.Pool2DParams) {
	a := d.poolCheck("avgpool2d backward", dx, dy, p)
	d.launchAvgpoolBwd(gridStride(int64(dx.Len())), block1D, PtrOf(dy), PtrOf(dx),
		a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11])
}

// AdaptiveAvgPool2DForward averages x [N, C, H, W] into y [N, C, OH, OW]
// as torch's AdaptiveAvgPool2d bins it (pc_adaptive_avgpool_fwd).
func (d *Device) AdaptiveAvgPool2DForward(x, y *tensor.Tensor) {
	a := d.adaptiveCheck("adaptive avgpool2d forward", x, y)
	d.launchAdaptiveAvgpoolFwd(gridStride(int64(y.Len())), block1D, PtrOf(x), PtrOf(y), a[0], a[1], a[2], a[3], a[4], a[5])
}

// AdaptiveAvgPool2DBackward sets dx from dy (pc_adaptive_avgpool_bwd).
func (d *Device) AdaptiveAvgPool2DBackward(dy, dx *tensor.Tensor) {
	a := d.adaptiveCheck("adaptive avgpool2d backward", dx, dy)
	d.launchAdaptiveAvgpoolBwd(gridStride(int64(dx.Len())), block1D, PtrOf(dy), PtrOf(dx), a[0], a[1], a[2], a[3], a[4], a[5])
}
