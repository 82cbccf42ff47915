package cuda

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// Batch norm runs as a per-channel reduction (one block per channel,
// summed in double by the kernel) followed by an elementwise pass, with
// the per-channel values between them in [C] tensors: the saved mean and
// invStd themselves, or Workspace tensors released before the kernel
// returns.

// bnLayout is x's shape seen as [n, c, hw]: an [N, C, H, W] tensor has hw
// = H·W, an [N, C] one hw = 1.
type bnLayout struct{ n, c, hw int }

// bnLayout returns x's layout, panicking unless x lives on d with rank 2
// or 4.
func (d *Device) bnLayout(op string, x *tensor.Tensor) bnLayout {
	d.mustOwn(op, x)
	n, c, hw := tensor.BatchNormLayout(op, x)
	return bnLayout{n, c, hw}
}

// args returns n, c and hw as the kernels take them.
func (l bnLayout) args(op string) (n, c, hw int32) { return i32(op, l.n), i32(op, l.c), i32(op, l.hw) }

// total is the number of elements of x.
func (l bnLayout) total() int64 { return int64(l.n) * int64(l.c) * int64(l.hw) }

// BatchNormTrain normalises x with the statistics of the batch
// (pc_bn_stats into saveMean, a Workspace variance and saveInvStd), updates
// the running statistics unless they are nil (pc_bn_running) and writes y
// (pc_bn_apply). A channel with a single value per batch panics, as torch
// raises.
func (d *Device) BatchNormTrain(x, gamma, beta, y, runMean, runVar, saveMean, saveInvStd *tensor.Tensor, p tensor.BatchNormParams) {
	const op = "batchnorm train"
	l := d.bnLayout(op, x)
	if l.n*l.hw <= 1 {
		panic(fmt.Sprintf("cuda: %s: expected more than 1 value per channel when training, got input shape %v", op, x.Shape()))
	}
	tensor.SameShape(op, x, y)
	px, py := PtrOf(x), d.ptr(op, y, x.Len())
	pg, pb := d.ptr(op, gamma, l.c), d.ptr(op, beta, l.c)
	pm, pi := d.ptr(op, saveMean, l.c), d.ptr(op, saveInvStd, l.c)
	var prm, prv Ptr
	switch {
	case runMean != nil && runVar != nil:
		prm, prv = d.ptr(op, runMean, l.c), d.ptr(op, runVar, l.c)
	case runMean != nil || runVar != nil:
		panic(fmt.Sprintf("cuda: %s: runMean and runVar must both be given or both be nil", op))
	}
	n, c, hw := l.args(op)
	variance := d.scratch(op, l.c)
	defer variance.Release()
	pv := PtrOf(variance)
	d.launchBnStats(gridPerItem(l.c), block1D, px, pm, pv, pi, n, c, hw, p.Eps)
	if prm != 0 {
		d.launchBnRunning(gridStride(int64(l.c)), block1D, prm, prv, pm, pv, c, int64(l.n)*int64(l.hw), p.Momentum)
	}
	d.launchBnApply(gridStride(l.total()), block1D, px, py, pm, pi, pg, pb, n, c, hw)
}

// BatchNormEval normalises x with the running statistics: pc_bn_invstd
// into a Workspace tensor, then pc_bn_apply.
func (d *Device) BatchNormEval(x, gamma, beta, runMean, runVar, y *tensor.Tensor, p tensor.BatchNormParams) {
	const op = "batchnorm eval"
	l := d.bnLayout(op, x)
	tensor.SameShape(op, x, y)
	px, py := PtrOf(x), d.ptr(op, y, x.Len())
	pg, pb := d.ptr(op, gamma, l.c), d.ptr(op, beta, l.c)
	prm, prv := d.ptr(op, runMean, l.c), d.ptr(op, runVar, l.c)
	n, c, hw := l.args(op)
	inv := d.scratch(op, l.c)
	defer inv.Release()
	pi := PtrOf(inv)
	d.launchBnInvstd(gridStride(int64(l.c)), block1D, prv, pi, c, p.Eps)
	d.launchBnApply(gridStride(l.total()), block1D, px, py, prm, pi, pg, pb, n, c, hw)
}

// BatchNormBackward sets dx and accumulates dgamma and dbeta from the
// statistics a BatchNormTrain saved: pc_bn_bwd_reduce into two Workspace
// [C] tensors, then pc_bn_bwd_data and pc_bn_param_grads_acc.
func (d *Device) BatchNormBackward(x, dy, gamma, saveMean, saveInvStd, dx, dgamma, dbeta *tensor.Tensor) {
	const op = "batchnorm backward"
	l := d.bnLayout(op, x)
	tensor.SameShape(op, x, dy, dx)
	px, pdy, pdx := PtrOf(x), d.ptr(op, dy, x.Len()), d.ptr(op, dx, x.Len())
	pg, pm, pi := d.ptr(op, gamma, l.c), d.ptr(op, saveMean, l.c), d.ptr(op, saveInvStd, l.c)
	pdg, pdb := d.ptr(op, dgamma, l.c), d.ptr(op, dbeta, l.c)
	n, c, hw := l.args(op)
	if l.total() == 0 {
		return // nothing to sum, nothing to add
	}
	sumDy := d.scratch(op, l.c)
	defer sumDy.Release()
	sumDyXhat := d.scratch(op, l.c)
	defer sumDyXhat.Release()
	psum, psumx := PtrOf(sumDy), PtrOf(sumDyXhat)
	d.launchBnBwdReduce(gridPerItem(l.c), block1D, px, pdy, pm, pi, psum, psumx, n, c, hw)
	d.launchBnBwdData(gridStride(l.total()), block1D, px, pdy, pm, pi, pg, psum, psumx, pdx, n, c, hw)
	d.launchBnParamGradsAcc(gridStride(int64(l.c)), block1D, pdg, pdb, psum, psumx, c)
}
