package cuda

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// ConcatChannels copies srcs, each [N, Ci, H, W] (or [N, Ci]), into dst
// [N, ΣCi, H, W] in order: one pc_concat_part per part.
func (d *Device) ConcatChannels(dst *tensor.Tensor, srcs []*tensor.Tensor) {
	const op = "concat channels"
	offs, hw := d.channelParts(op, dst, srcs)
	n, ctotal, phw, pdst := i32(op, dst.Dim(0)), i32(op, dst.Dim(1)), i32(op, hw), PtrOf(dst)
	for i, t := range srcs {
		d.launchConcatPart(gridStride(int64(t.Len())), block1D, PtrOf(t), pdst, n, i32(op, t.Dim(1)), ctotal, i32(op, offs[i]), phw)
	}
}

// SplitChannels copies consecutive channel ranges of src into dsts, the
// inverse of ConcatChannels: one pc_split_part per part.
func (d *Device) SplitChannels(src *tensor.Tensor, dsts []*tensor.Tensor) {
	const op = "split channels"
	offs, hw := d.channelParts(op, src, dsts)
	n, ctotal, phw, psrc := i32(op, src.Dim(0)), i32(op, src.Dim(1)), i32(op, hw), PtrOf(src)
	for i, t := range dsts {
		d.launchSplitPart(gridStride(int64(t.Len())), block1D, psrc, PtrOf(t), n, i32(op, t.Dim(1)), ctotal, i32(op, offs[i]), phw)
	}
}

// channelParts checks that parts, concatenated along dimension 1, make up
// whole, all on d, and returns each part's first channel in whole and the
// elements per channel and sample (H·W, or 1).
func (d *Device) channelParts(op string, whole *tensor.Tensor, parts []*tensor.Tensor) (offs []int, hw int) {
	ws := whole.Shape()
	if len(ws) < 2 {
		panic(fmt.Sprintf("cuda: %s: shape %v has no channel dimension", op, ws))
	}
	if len(parts) == 0 {
		panic(fmt.Sprintf("cuda: %s: no tensors to join with %v", op, ws))
	}
	d.mustOwn(op, whole)
	offs = make([]int, len(parts))
	c := 0
	for i, t := range parts {
		s := t.Shape()
		if len(s) != len(ws) || s[0] != ws[0] || !s[2:].Equal(ws[2:]) {
			panic(fmt.Sprintf("cuda: %s: part %d of shape %v does not fit %v (N and the dimensions after the channels must agree)",
				op, i, s, ws))
		}
		d.mustOwn(op, t)
		offs[i] = c
		c += s[1]
	}
	if c != ws[1] {
		panic(fmt.Sprintf("cuda: %s: parts hold %d channels, %v has %d", op, c, ws, ws[1]))
	}
	return offs, ws[2:].Numel()
}

// DropoutForward sets y = x·keep/(1 − p) with keep tensor.DropoutKeep's
// mask: row i of x's outermost dimension is sample key.Sample + i
// (pc_dropout). p = 1 gives zeros, as torch does.
func (d *Device) DropoutForward(x, y *tensor.Tensor, p float32, key tensor.DropoutKey) {
	d.dropout("dropout forward", x, y, p, key)
}

// DropoutBackward sets dx = dy·keep/(1 − p) with the mask of the forward
// that had the same p and key.
func (d *Device) DropoutBackward(dy, dx *tensor.Tensor, p float32, key tensor.DropoutKey) {
	d.dropout("dropout backward", dy, dx, p, key)
}

// dropout applies the mask of (p, key) to in, scaled, writing out.
func (d *Device) dropout(op string, in, out *tensor.Tensor, p float32, key tensor.DropoutKey) {
	tensor.CheckDropout(op, in, out, p)
	n := in.Len()
	pin, pout := d.ptr(op, in, n), d.ptr(op, out, n)
	if n == 0 {
		return
	}
	if p == 1 {
		d.launchFill(gridStride(int64(n)), block1D, pout, int64(n), 0)
		return
	}
	// As the CPU backend does: 1/(1 − p) in float64, rounded once.
	scale := float32(1 / (1 - float64(p)))
	rows := in.Dim(0)
	d.launchDropout(gridStride(int64(n)), block1D, pin, pout, i32(op, rows), i32(op, n/rows),
		key.Seed, key.Step, key.Layer, int64(key.Sample), int32(tensor.DropoutThreshold(p)), scale)
}

// SoftmaxCrossEntropy returns scale·Σ_i −log softmax(logits_i)[labels_i]
// over the rows of logits [N, classes] and, unless dlogits is nil, sets
// dlogits = scale·(softmax − onehot(labels)). pc_softmax_xent writes each
// row's loss as a float64; they are downloaded and summed in row order,
// so the result does not depend on the GPU's scheduling.
func (d *Device) SoftmaxCrossEntropy(logits *tensor.Tensor, labels []int32, dlogits *tensor.Tensor, scale float32) float64 {
	const op = "softmax cross-entropy"
	n, classes := tensor.CrossEntropyDims(op, logits, labels)
	px := d.ptr(op, logits, logits.Len())
	var pdx Ptr
	if dlogits != nil {
		tensor.SameShape(op, logits, dlogits)
		pdx = d.ptr(op, dlogits, logits.Len())
	}
	if n == 0 {
		return 0
	}
	rows, cls := i32(op, n), i32(op, classes)
	lab := d.scratch(op, n) // int32 labels, one element each
	defer lab.Release()
	d.check(op+": labels", d.drv.UploadInt32(PtrOf(lab), labels))
	losses := d.scratch(op, 2*n) // a float64 per row
	defer losses.Release()
	d.launchSoftmaxXent(gridPerItem(n), block1D, px, PtrOf(lab), pdx, PtrOf(losses), rows, cls, scale)
	host := make([]float64, n)
	d.check(op+": losses", d.drv.DownloadFloat64(host, PtrOf(losses)))
	total := 0.0
	for _, l := range host {
		total += l
	}
	return total
}

// SGDStep implements tensor.SGDStepper: it applies one step of
// torch.optim.SGD to w with gradient g and momentum buffer buf (pc_sgd). buf is not used, and may be nil, when
// Momentum is 0.
func (d *Device) SGDStep(w, g, buf *tensor.Tensor, p tensor.SGDParams, first bool) {
	const op = "sgd step"
	tensor.SameShape(op, w, g)
	n := w.Len()
	pw, pg := d.ptr(op, w, n), d.ptr(op, g, n)
	var pb Ptr // NULL: the kernel uses no buffer without momentum
	if p.Momentum != 0 {
		if buf == nil {
			panic(fmt.Sprintf("cuda: %s: momentum %v needs a momentum buffer", op, p.Momentum))
		}
		tensor.SameShape(op, w, buf)
		pb = d.ptr(op, buf, n)
	}
	d.launchSgd(gridStride(int64(n)), block1D, pw, pg, pb, int64(n),
		p.LR, p.Momentum, p.Dampening, p.WeightDecay, flag(p.Nesterov), flag(first))
}
