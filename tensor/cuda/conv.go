package cuda

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// Convolutions run on the driver's DNN (cuDNN) where it has one, else on
// the implicit-GEMM kernels: each pass is a product tiled over its GEMM
// dimensions, whose operands the kernel gathers from the tensors as it
// goes (no column matrix in memory). The forward's product is y [O,
// N·OH·OW] = w [O, C·KH·KW] · col; the backward data's dx [C, N·H·W]; the
// filter gradient's dw [O, C·KH·KW]. The bias and its gradient are kernels
// of their own on either path (pc_bias_nchw, pc_channel_sums_acc).

// convCheck validates p, x [N, C, H, W], w [O, C, KH, KW] and y [N, O,
// OH, OW] (or the gradients in their places), all on d, and returns the
// shape.
func (d *Device) convCheck(op string, x, w, y *tensor.Tensor, p tensor.Conv2DParams) ConvShape {
	if err := p.Validate(); err != nil {
		panic(fmt.Sprintf("cuda: %s: %v", op, err))
	}
	if x.Rank() != 4 || w.Rank() != 4 || y.Rank() != 4 {
		panic(fmt.Sprintf("cuda: %s: input %v, weights %v, output %v: all must be 4-D", op, x.Shape(), w.Shape(), y.Shape()))
	}
	s := ConvShape{N: x.Dim(0), C: x.Dim(1), H: x.Dim(2), W: x.Dim(3), O: w.Dim(0), KH: w.Dim(2), KW: w.Dim(3),
		StrideH: p.StrideH, StrideW: p.StrideW, PadH: p.PadH, PadW: p.PadW}
	if w.Dim(1) != s.C {
		panic(fmt.Sprintf("cuda: %s: weights %v take %d input channels, input %v has %d", op, w.Shape(), w.Dim(1), x.Shape(), s.C))
	}
	if s.H+2*p.PadH < s.KH || s.W+2*p.PadW < s.KW {
		panic(fmt.Sprintf("cuda: %s: kernel %d×%d larger than the input %v padded by %d×%d", op, s.KH, s.KW, x.Shape(), p.PadH, p.PadW))
	}
	s.OH, s.OW = p.OutSize(s.H, s.W, s.KH, s.KW)
	if want := (tensor.Shape{s.N, s.O, s.OH, s.OW}); !y.Shape().Equal(want) {
		panic(fmt.Sprintf("cuda: %s: output %v, want %v for input %v, weights %v, stride %d×%d, padding %d×%d",
			op, y.Shape(), want, x.Shape(), w.Shape(), p.StrideH, p.StrideW, p.PadH, p.PadW))
	}
	for _, t := range []*tensor.Tensor{x, w, y} {
		d.mustOwn(op, t)
	}
	return s
}

// convBiasCheck panics unless bias, when not nil, is [O] on d.
func (d *Device) convBiasCheck(op string, bias *tensor.Tensor, o int) {
	if bias == nil {
		return
	}
	if bias.Rank() != 1 || bias.Dim(0) != o {
		panic(fmt.Sprintf("cuda: %s: bias %v, want [%d]", op, bias.Shape(), o))
	}
	d.mustOwn(op, bias)
}

// Conv2DForward sets y = conv(x, w) + bias, torch's conv2d with groups 1
// and dilation 1.
func (d *Device) Conv2DForward(x, w, bias, y *tensor.Tensor, p tensor.Conv2DParams) {
	const op = "conv2d forward"
	s := d.convCheck(op, x, w, y, p)
	d.convBiasCheck(op, bias, s.O)
	if y.Len() == 0 {
		return
	}
	px, pw, py := PtrOf(x), PtrOf(w), PtrOf(y)
	if d.dnn != nil {
		d.withWorkspace(op, func(ws func(int64) (Ptr, error)) error { return d.dnn.ConvForward(s, px, pw, py, ws) })
	} else {
		a := convArgs(op, s)
		d.launchConvFwd(gridTiles(s.O, s.N*s.OH*s.OW), blockTile, px, pw, py,
			a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12])
	}
	if bias != nil {
		d.launchBiasNchw(gridStride(int64(y.Len())), block1D, py, PtrOf(bias), i32(op, s.N), i32(op, s.O), i32(op, s.OH*s.OW))
	}
}

// Conv2DBackwardData sets dx, the gradient with respect to x, from dy.
func (d *Device) Conv2DBackwardData(dy, w, dx *tensor.Tensor, p tensor.Conv2DParams) {
	const op = "conv2d backward data"
	s := d.convCheck(op, dx, w, dy, p)
	if dx.Len() == 0 {
		return
	}
	pdy, pw, pdx := PtrOf(dy), PtrOf(w), PtrOf(dx)
	if d.dnn != nil {
		d.withWorkspace(op, func(ws func(int64) (Ptr, error)) error { return d.dnn.ConvBackwardData(s, pdy, pw, pdx, ws) })
		return
	}
	a := convArgs(op, s)
	d.launchConvBwdData(gridPhases(s.C, s.N, s.H, s.W, s.StrideH, s.StrideW), blockTile, pdy, pw, pdx,
		a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12])
}

// Conv2DBackwardFilter accumulates dw += the gradient with respect to w
// and, unless dbias is nil, dbias += the sums of dy per channel.
func (d *Device) Conv2DBackwardFilter(x, dy, dw, dbias *tensor.Tensor, p tensor.Conv2DParams) {
	const op = "conv2d backward filter"
	s := d.convCheck(op, x, dw, dy, p)
	d.convBiasCheck(op, dbias, s.O)
	if dy.Len() == 0 {
		return // nothing to add
	}
	px, pdy, pdw := PtrOf(x), PtrOf(dy), PtrOf(dw)
	if d.dnn != nil {
		d.withWorkspace(op, func(ws func(int64) (Ptr, error)) error { return d.dnn.ConvBackwardFilter(s, px, pdy, pdw, ws) })
	} else {
		d.convBwdFilterKernel(op, s, px, pdy, pdw)
	}
	if dbias != nil {
		d.launchChannelSumsAcc(gridPerItem(s.O), block1D, pdy, PtrOf(dbias), i32(op, s.N), i32(op, s.O), i32(op, s.OH*s.OW))
	}
}

// convBwdFilterKernel accumulates dw += the filters' gradient with the
// kernels: pc_conv_bwd_filter_acc in one pass when the tiles of dw fill
// the GPU, else pc_conv_bwd_filter_part over a split of the depth
// n·oh·ow (depthSplit) into a Workspace of the parts, which
// pc_sum_parts_acc adds onto dw in order. The workspace is released once
// both are queued: the stream runs whatever reuses it after them.
func (d *Device) convBwdFilterKernel(op string, s ConvShape, px, pdy, pdw Ptr) {
	a := convArgs(op, s)
	grid := gridTiles(s.O, s.C*s.KH*s.KW)
	parts, chunk := depthSplit(int(grid[0])*int(grid[1]), s.N*s.OH*s.OW, d.sms)
	if parts == 1 {
		d.launchConvBwdFilterAcc(grid, blockTile, px, pdy, pdw,
			a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12])
		return
	}
	n := s.O * s.C * s.KH * s.KW
	part := d.scratch(op, parts*n)
	defer part.Release()
	grid[2] = uint32(parts)
	d.launchConvBwdFilterPart(grid, blockTile, px, pdy, PtrOf(part),
		a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], i32(op, chunk))
	d.launchSumPartsAcc(gridStride(int64(n)), block1D, PtrOf(part), pdw, int64(n), i32(op, parts))
}

// convArgs returns the sizes the convolution kernels take after their
// pointers: n, c, h, w, o, kh, kw, sh, sw, ph, pw, oh, ow.
func convArgs(op string, s ConvShape) [13]int32 {
	var a [13]int32
	for i, v := range []int{s.N, s.C, s.H, s.W, s.O, s.KH, s.KW, s.StrideH, s.StrideW, s.PadH, s.PadW, s.OH, s.OW} {
		a[i] = i32(op, v)
	}
	return a
}

// withWorkspace calls the library with a workspace function that
// allocates Workspace tensors from the device's cache, and releases them
// once the call has returned: the library's work is queued on the stream,
// so whatever reuses the memory next runs after it.
func (d *Device) withWorkspace(op string, call func(ws func(int64) (Ptr, error)) error) {
	var held []*tensor.Tensor
	defer func() {
		for _, t := range held {
			t.Release()
		}
	}()
	ws := func(n int64) (Ptr, error) {
		if n <= 0 {
			return 0, nil
		}
		elems := (n + tensor.BytesPerElement - 1) / tensor.BytesPerElement
		t, err := d.allocRaw(tensor.Workspace, []int{int(elems)})
		if err != nil {
			return 0, fmt.Errorf("workspace of %d bytes: %w", n, err)
		}
		held = append(held, t)
		return PtrOf(t), nil
	}
	d.check(op+": dnn", call(ws))
}
