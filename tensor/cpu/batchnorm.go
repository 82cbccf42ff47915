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

// bnBlock is how many channels an [N, C] batch-norm handles together: its
// channels are strided by C, so it walks the rows of a block of channels
// instead, keeping the per-channel sums in arrays of this size.
const bnBlock = 64

// bnLayout is x's shape seen as [n, c, hw]: an [N, C, H, W] tensor has hw
// = H·W, an [N, C] one hw = 1.
type bnLayout struct{ n, c, hw int }

// bnLayout returns x's layout, panicking unless x lives on d with rank 2
// or 4.
func (d *Device) bnLayout(op string, x *tensor.Tensor) bnLayout {
	d.mustOwn(op, x)
	s := x.Shape()
	switch len(s) {
	case 2:
		return bnLayout{s[0], s[1], 1}
	case 4:
		return bnLayout{s[0], s[1], s[2] * s[3]}
	}
	panic(fmt.Sprintf("cpu: %s: x shape %v, want [N, C, H, W] or [N, C]", op, s))
}

// block returns channels [c0, c1) of sample i, (c1 − c0)·hw values.
func (l bnLayout) block(x []float32, i, c0, c1 int) []float32 {
	return x[(i*l.c+c0)*l.hw : (i*l.c+c1)*l.hw]
}

// parallel calls fn on ranges of channels [c0, c1) on d's threads: single
// channels when hw > 1, blocks of bnBlock channels when hw = 1 ([N, C]
// input, or 1×1 maps).
func (l bnLayout) parallel(d *Device, fn func(c0, c1 int)) {
	if l.hw > 1 {
		d.pool.parallel(l.c, max(1, bnGrain/(l.n*l.hw)), func(lo, hi int) {
			for ch := lo; ch < hi; ch++ {
				fn(ch, ch+1)
			}
		})
		return
	}
	blocks := (l.c + bnBlock - 1) / bnBlock
	d.pool.parallel(blocks, max(1, bnGrain/(l.n*bnBlock)), func(lo, hi int) {
		for b := lo; b < hi; b++ {
			fn(b*bnBlock, min((b+1)*bnBlock, l.c))
		}
	})
}

// BatchNormTrain implements tensor.Kernels. Threads take whole channels.
// The statistics are accumulated in float64 in two passes (the mean, then
// the squared deviations from it), so that a large common offset in x
// does not cancel away the variance as E[x²] − E[x]² would in float32.
func (d *Device) BatchNormTrain(x, gamma, beta, y, runMean, runVar, saveMean, saveInvStd *tensor.Tensor, p tensor.BatchNormParams) {
	const op = "batchnorm train"
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
		var sum, sq, scale, shift [bnBlock]float64
		k := c1 - c0
		mean := sum[:k]
		for i := 0; i < l.n; i++ {
			bnSums(l.block(xs, i, c0, c1), l.hw, mean)
		}
		for j := range mean {
			mean[j] /= fm
		}
		for i := 0; i < l.n; i++ {
			bnSquaredDeviations(l.block(xs, i, c0, c1), l.hw, mean, sq[:k])
		}
		for j := range mean {
			ch := c0 + j
			variance := sq[j] / fm
			inv := 1 / math.Sqrt(variance+eps)
			scale[j], shift[j] = inv*float64(gs[ch]), float64(bs[ch])
			sm[ch], si[ch] = float32(mean[j]), float32(inv)
			if rm != nil {
				unbiased := variance * fm / (fm - 1)
				rm[ch] = float32((1-mom)*float64(rm[ch]) + mom*mean[j])
				rv[ch] = float32((1-mom)*float64(rv[ch]) + mom*unbiased)
			}
		}
		for i := 0; i < l.n; i++ {
			bnAffine(l.block(xs, i, c0, c1), l.block(ys, i, c0, c1), l.hw, mean, scale[:k], shift[:k])
		}
	})
}

// BatchNormEval implements tensor.Kernels.
func (d *Device) BatchNormEval(x, gamma, beta, runMean, runVar, y *tensor.Tensor, p tensor.BatchNormParams) {
	const op = "batchnorm eval"
	l := d.bnLayout(op, x)
	tensor.SameShape(op, x, y)
	xs, ys := Data(x), d.data(op, y, x.Len())
	gs, bs := d.data(op, gamma, l.c), d.data(op, beta, l.c)
	rm, rv := d.data(op, runMean, l.c), d.data(op, runVar, l.c)
	eps := float64(p.Eps)
	l.parallel(d, func(c0, c1 int) {
		var mean, scale, shift [bnBlock]float64
		k := c1 - c0
		for j := range k {
			ch := c0 + j
			mean[j], shift[j] = float64(rm[ch]), float64(bs[ch])
			scale[j] = float64(gs[ch]) / math.Sqrt(float64(rv[ch])+eps)
		}
		for i := 0; i < l.n; i++ {
			bnAffine(l.block(xs, i, c0, c1), l.block(ys, i, c0, c1), l.hw, mean[:k], scale[:k], shift[:k])
		}
	})
}

// BatchNormBackward implements tensor.Kernels with the standard formula
// dx = invStd·gamma/m·(m·dy − Σdy − x̂·Σdy·x̂) over each channel's m =
// N·H·W values, the sums in float64. Threads take whole channels, so
// dgamma and dbeta are accumulated without sharing.
func (d *Device) BatchNormBackward(x, dy, gamma, saveMean, saveInvStd, dx, dgamma, dbeta *tensor.Tensor) {
	const op = "batchnorm backward"
	l := d.bnLayout(op, x)
	tensor.SameShape(op, x, dy, dx)
	xs, dys, dxs := Data(x), d.data(op, dy, x.Len()), d.data(op, dx, x.Len())
	gs, sm, si := d.data(op, gamma, l.c), d.data(op, saveMean, l.c), d.data(op, saveInvStd, l.c)
	dg, db := d.data(op, dgamma, l.c), d.data(op, dbeta, l.c)
	fm := float64(l.n * l.hw)
	l.parallel(d, func(c0, c1 int) {
		// sumDy and sumDyXc hold Σ dy and Σ dy·(x − mean) per channel;
		// then dx = scale·(dy − a − (x − mean)·b) with scale =
		// invStd·gamma, a = Σdy/m and b = invStd·Σdy·x̂/m.
		var mean, sumDy, sumDyXc, scale, a, b [bnBlock]float64
		k := c1 - c0
		for j := range k {
			mean[j] = float64(sm[c0+j])
		}
		for i := 0; i < l.n; i++ {
			bnGradientSums(l.block(xs, i, c0, c1), l.block(dys, i, c0, c1), l.hw, mean[:k], sumDy[:k], sumDyXc[:k])
		}
		for j := range k {
			ch := c0 + j
			inv := float64(si[ch])
			sumDyXhat := sumDyXc[j] * inv
			scale[j], a[j], b[j] = inv*float64(gs[ch]), sumDy[j]/fm, inv*sumDyXhat/fm
			dg[ch] += float32(sumDyXhat)
			db[ch] += float32(sumDy[j])
		}
		for i := 0; i < l.n; i++ {
			bnGradient(l.block(xs, i, c0, c1), l.block(dys, i, c0, c1), l.block(dxs, i, c0, c1), l.hw,
				mean[:k], scale[:k], a[:k], b[:k])
		}
	})
}

// The helpers below work on one sample's block of channels: len(acc)
// channels of hw values each. With hw = 1 (an [N, C] input) the block is
// a run of consecutive channels, one value each, and they loop over it
// directly.

// bnSums adds each channel's Σ x to acc, in float64.
func bnSums(x []float32, hw int, acc []float64) {
	if hw == 1 {
		for j, v := range x[:len(acc)] {
			acc[j] += float64(v)
		}
		return
	}
	for j := range acc {
		acc[j] += bnSum(x[j*hw : (j+1)*hw])
	}
}

// bnSum returns Σ x in float64, with four partial sums to shorten the
// dependency chain of the additions.
func bnSum(x []float32) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += float64(x[i])
		s1 += float64(x[i+1])
		s2 += float64(x[i+2])
		s3 += float64(x[i+3])
	}
	for ; i < len(x); i++ {
		s0 += float64(x[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// bnSquaredDeviations adds each channel's Σ (x − mean)² to acc.
func bnSquaredDeviations(x []float32, hw int, mean, acc []float64) {
	if hw == 1 {
		for j, v := range x[:len(acc)] {
			d := float64(v) - mean[j]
			acc[j] += d * d
		}
		return
	}
	for j := range acc {
		xp, m := x[j*hw:(j+1)*hw], mean[j]
		var s0, s1, s2, s3 float64
		i := 0
		for ; i+4 <= len(xp); i += 4 {
			d0, d1 := float64(xp[i])-m, float64(xp[i+1])-m
			d2, d3 := float64(xp[i+2])-m, float64(xp[i+3])-m
			s0 += d0 * d0
			s1 += d1 * d1
			s2 += d2 * d2
			s3 += d3 * d3
		}
		for ; i < len(xp); i++ {
			d0 := float64(xp[i]) - m
			s0 += d0 * d0
		}
		acc[j] += (s0 + s1) + (s2 + s3)
	}
}

// bnGradientSums adds each channel's Σ dy to sumDy and Σ dy·(x − mean) to
// sumDyXc.
func bnGradientSums(x, dy []float32, hw int, mean, sumDy, sumDyXc []float64) {
	if hw == 1 {
		x = x[:len(sumDy)]
		for j, g := range dy[:len(sumDy)] {
			sumDy[j] += float64(g)
			sumDyXc[j] += float64(g) * (float64(x[j]) - mean[j])
		}
		return
	}
	for j := range sumDy {
		xp, dyp, m := x[j*hw:(j+1)*hw], dy[j*hw:(j+1)*hw], mean[j]
		var s, sx float64
		for i, g := range dyp {
			g64 := float64(g)
			s += g64
			sx += g64 * (float64(xp[i]) - m)
		}
		sumDy[j] += s
		sumDyXc[j] += sx
	}
}

// bnAffine sets y = (x − mean)·scale + shift per channel, rounding once to
// float32; subtracting the mean before scaling keeps a large offset in x
// from costing precision.
func bnAffine(x, y []float32, hw int, mean, scale, shift []float64) {
	if hw == 1 {
		y = y[:len(x)]
		for j, v := range x[:len(mean)] {
			y[j] = float32((float64(v)-mean[j])*scale[j] + shift[j])
		}
		return
	}
	for j := range mean {
		xp, yp := x[j*hw:(j+1)*hw], y[j*hw:(j+1)*hw]
		m, sc, sh := mean[j], scale[j], shift[j]
		for i, v := range xp {
			yp[i] = float32((float64(v)-m)*sc + sh)
		}
	}
}

// bnGradient sets dx = scale·(dy − a − (x − mean)·b) per channel.
func bnGradient(x, dy, dx []float32, hw int, mean, scale, a, b []float64) {
	if hw == 1 {
		dy, dx = dy[:len(mean)], dx[:len(mean)]
		for j, v := range x[:len(mean)] {
			dx[j] = float32(scale[j] * (float64(dy[j]) - a[j] - (float64(v)-mean[j])*b[j]))
		}
		return
	}
	for j := range mean {
		xp, dyp, dxp := x[j*hw:(j+1)*hw], dy[j*hw:(j+1)*hw], dx[j*hw:(j+1)*hw]
		m, sc, aj, bj := mean[j], scale[j], a[j], b[j]
		for i, v := range xp {
			dxp[i] = float32(sc * (float64(dyp[i]) - aj - (float64(v)-m)*bj))
		}
	}
}
