package cpu

import (
	"fmt"
	"math"

	"github.com/pipecast/pipecast/tensor"
)

// bnGrain is how many elements a thread's share of a batch-norm should
// hold at least, so that small layers (the MLP's, or 7×7 feature maps at
// batch 1) do not pay for waking threads.
const bnGrain = 1 << 14

// bnBlock is how many channels an [N, C] batch-norm, or one of small
// maps, handles together: an [N, C] input's channels are strided by C, so
// it walks the rows of a block of channels instead, keeping the
// per-channel sums in arrays of this size.
const bnBlock = 64

// bnSmallPlane is the plane size below which threads take blocks of
// channels rather than single ones: a channel of 4×4 or 2×2 maps holds
// too few values to be worth a loop of its own.
const bnSmallPlane = 64

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

// block returns channels [c0, c1) of sample i, (c1 − c0)·hw values.
func (l bnLayout) block(x []float32, i, c0, c1 int) []float32 {
	return x[(i*l.c+c0)*l.hw : (i*l.c+c1)*l.hw]
}

// parallel calls fn on ranges of channels [c0, c1) on d's threads: single
// channels when hw ≥ bnSmallPlane, else blocks of bnBlock channels ([N,
// C] input, and small maps: ResNet-50's 4×4 and 2×2 at 64 px took half
// as long in blocks as channel by channel).
func (l bnLayout) parallel(d *Device, fn func(c0, c1 int)) {
	if l.hw >= bnSmallPlane {
		d.pool.parallel(l.c, max(1, bnGrain/(l.n*l.hw)), func(lo, hi int) {
			for ch := lo; ch < hi; ch++ {
				fn(ch, ch+1)
			}
		})
		return
	}
	blocks := (l.c + bnBlock - 1) / bnBlock
	d.pool.parallel(blocks, max(1, bnGrain/(l.n*bnBlock*l.hw)), func(lo, hi int) {
		for b := lo; b < hi; b++ {
			fn(b*bnBlock, min((b+1)*bnBlock, l.c))
		}
	})
}

// BatchNormTrain implements tensor.Kernels. Threads take whole channels,
// and each channel is streamed twice: once for its statistics, once to
// normalise it (a channel of a few hundred KB is still in the thread's
// cache for the second pass).
//
// The statistics are accumulated in float64 in one pass, as the sums of
// d = x − K and d² with K the channel's first value: then mean = K + Σd/m
// and var = (Σd² − (Σd)²/m)/m. Shifting by a value of the channel removes
// any common offset, so it cannot cancel the variance away as E[x²] −
// E[x]² would: the cancellation left costs a relative error of at most
// m·2⁻⁵³ in the variance, since (mean − K)² ≤ Σ(x − mean)² = m·var.
//
// The output is y = (x − mf)·a + b in float32 with mf the mean rounded to
// float32, a = invStd·gamma and b = beta − (mean − mf)·a: subtracting mf
// (exact for x near it) before scaling keeps a large offset in x from
// costing precision, and b carries the part of the mean that mf lost.
func (d *Device) BatchNormTrain(x, gamma, beta, y, runMean, runVar, saveMean, saveInvStd *tensor.Tensor, p tensor.BatchNormParams) {
	d.bnTrain("batchnorm train", x, gamma, beta, y, runMean, runVar, saveMean, saveInvStd, p, false)
}

// bnTrain is BatchNormTrain, followed where relu by a ReLU of each block
// of y while it is still in cache (BatchNormReLUTrain).
func (d *Device) bnTrain(op string, x, gamma, beta, y, runMean, runVar, saveMean, saveInvStd *tensor.Tensor, p tensor.BatchNormParams, relu bool) {
	l := d.bnLayout(op, x)
	m := l.n * l.hw
	if m <= 1 {
		panic(fmt.Sprintf("cpu: %s: expected more than 1 value per channel when training, got input shape %v", op, x.Shape()))
	}
	tensor.SameShape(op, x, y)
	xs, ys := Data(x), d.data(op, y, x.Len())
	gs, bs := d.data(op, gamma, l.c), d.data(op, beta, l.c)
	sm, si := d.data(op, saveMean, l.c), d.data(op, saveInvStd, l.c)
	var rm, rv []float32
	switch {
	case runMean != nil && runVar != nil:
		rm, rv = d.data(op, runMean, l.c), d.data(op, runVar, l.c)
	case runMean != nil || runVar != nil:
		panic(fmt.Sprintf("cpu: %s: runMean and runVar must both be given or both be nil", op))
	}
	eps, mom, fm := float64(p.Eps), float64(p.Momentum), float64(m)
	l.parallel(d, func(c0, c1 int) {
		var shift [bnBlock]float32
		var s1, s2 [bnBlock]float64
		var mf, a, b [bnBlock]float32
		k := c1 - c0
		first := l.block(xs, 0, c0, c1) // sample 0's values of the channels
		for j := range k {
			shift[j] = first[j*l.hw]
		}
		for i := 0; i < l.n; i++ {
			bnShiftedSums(l.block(xs, i, c0, c1), l.hw, shift[:k], s1[:k], s2[:k])
		}
		for j := range k {
			ch := c0 + j
			mean := float64(shift[j]) + s1[j]/fm
			variance := max((s2[j]-s1[j]*s1[j]/fm)/fm, 0)
			inv := 1 / math.Sqrt(variance+eps)
			sm[ch], si[ch] = float32(mean), float32(inv)
			scale := inv * float64(gs[ch])
			mf[j], a[j] = float32(mean), float32(scale)
			b[j] = float32(float64(bs[ch]) - (mean-float64(mf[j]))*scale)
			if rm != nil {
				unbiased := variance * fm / (fm - 1)
				rm[ch] = float32((1-mom)*float64(rm[ch]) + mom*mean)
				rv[ch] = float32((1-mom)*float64(rv[ch]) + mom*unbiased)
			}
		}
		for i := 0; i < l.n; i++ {
			yb := l.block(ys, i, c0, c1)
			bnAffine(l.block(xs, i, c0, c1), yb, l.hw, mf[:k], a[:k], b[:k])
			if relu {
				reluSlice(yb, yb)
			}
		}
	})
}

// BatchNormEval implements tensor.Kernels: y = (x − runMean)·a + beta in
// float32, with a = gamma/sqrt(runVar + eps) computed in float64.
func (d *Device) BatchNormEval(x, gamma, beta, runMean, runVar, y *tensor.Tensor, p tensor.BatchNormParams) {
	const op = "batchnorm eval"
	l := d.bnLayout(op, x)
	tensor.SameShape(op, x, y)
	xs, ys := Data(x), d.data(op, y, x.Len())
	gs, bs := d.data(op, gamma, l.c), d.data(op, beta, l.c)
	rm, rv := d.data(op, runMean, l.c), d.data(op, runVar, l.c)
	eps := float64(p.Eps)
	l.parallel(d, func(c0, c1 int) {
		var a [bnBlock]float32
		k := c1 - c0
		for j := range k {
			ch := c0 + j
			a[j] = float32(float64(gs[ch]) / math.Sqrt(float64(rv[ch])+eps))
		}
		for i := 0; i < l.n; i++ {
			bnAffine(l.block(xs, i, c0, c1), l.block(ys, i, c0, c1), l.hw, rm[c0:c1], a[:k], bs[c0:c1])
		}
	})
}

// BatchNormBackward implements tensor.Kernels with the standard formula
// dx = invStd·gamma/m·(m·dy − Σdy − x̂·Σdy·x̂) over each channel's m =
// N·H·W values. Threads take whole channels, so dgamma and dbeta are
// accumulated without sharing. One pass accumulates Σdy and Σdy·(x −
// mean) in float64; a second, over data still in cache, sets dx = p·dy +
// q·(x − mean) + r in float32 with per-channel p, q and r computed in
// float64 (mean is the saved float32 mean, so x − mean is exact for x
// near it).
func (d *Device) BatchNormBackward(x, dy, gamma, saveMean, saveInvStd, dx, dgamma, dbeta *tensor.Tensor) {
	d.bnBackward("batchnorm backward", x, nil, dy, gamma, saveMean, saveInvStd, dx, dgamma, dbeta)
}

// bnBackward is BatchNormBackward; with y, the output of a ReLU that
// followed the batch norm, it first passes dy through that ReLU's
// backward, block by block into a small buffer
// (BatchNormReLUBackward).
func (d *Device) bnBackward(op string, x, y, dy, gamma, saveMean, saveInvStd, dx, dgamma, dbeta *tensor.Tensor) {
	l := d.bnLayout(op, x)
	tensor.SameShape(op, x, dy, dx)
	xs, dys, dxs := Data(x), d.data(op, dy, x.Len()), d.data(op, dx, x.Len())
	var ys []float32
	if y != nil {
		tensor.SameShape(op, x, y)
		ys = d.data(op, y, x.Len())
	}
	gs, sm, si := d.data(op, gamma, l.c), d.data(op, saveMean, l.c), d.data(op, saveInvStd, l.c)
	dg, db := d.data(op, dgamma, l.c), d.data(op, dbeta, l.c)
	fm := float64(l.n * l.hw)
	l.parallel(d, func(c0, c1 int) {
		// With scale = invStd·gamma, a = Σdy/m and b = invStd²·Σdy·(x −
		// mean)/m, dx = scale·(dy − a − (x − mean)·b): p = scale, q =
		// −scale·b, r = −scale·a.
		var sumDy, sumDyXc [bnBlock]float64
		var pc, qc, rc [bnBlock]float32
		k := c1 - c0
		var buf *[bnMaskMax]float32
		if ys != nil {
			buf = bnMaskBufs.Get().(*[bnMaskMax]float32)
			defer bnMaskBufs.Put(buf)
		}
		mean := sm[c0:c1]
		for i := 0; i < l.n; i++ {
			xb, gb := l.block(xs, i, c0, c1), l.block(dys, i, c0, c1)
			if ys == nil {
				bnGradientSums(xb, gb, l.hw, mean, sumDy[:k], sumDyXc[:k])
			} else {
				bnGradientSumsMasked(buf, xb, l.block(ys, i, c0, c1), gb, l.hw, mean, sumDy[:k], sumDyXc[:k])
			}
		}
		for j := range k {
			ch := c0 + j
			inv := float64(si[ch])
			sumDyXhat := sumDyXc[j] * inv
			scale := inv * float64(gs[ch])
			pc[j] = float32(scale)
			qc[j] = float32(-scale * inv * sumDyXhat / fm)
			rc[j] = float32(-scale * sumDy[j] / fm)
			dg[ch] += float32(sumDyXhat)
			db[ch] += float32(sumDy[j])
		}
		for i := 0; i < l.n; i++ {
			xb, gb, ob := l.block(xs, i, c0, c1), l.block(dys, i, c0, c1), l.block(dxs, i, c0, c1)
			if ys == nil {
				bnGradient(xb, gb, ob, l.hw, mean, pc[:k], qc[:k], rc[:k])
			} else {
				bnGradientMasked(buf, xb, l.block(ys, i, c0, c1), gb, ob, l.hw, mean, pc[:k], qc[:k], rc[:k])
			}
		}
	})
}
