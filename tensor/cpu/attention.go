package cpu

import (
	"github.com/pipecast/pipecast/tensor"
	ops "github.com/pipecast/pipecast/tensor/internal/transformerops"
)

// The attention kernels of tensor.TransformerKernels. Every product
// reads its operands where they lie: a head's rows of q, k, v, out and
// their gradients are a row-major matrix with leading dimension H·hd (or
// Hkv·hd) inside the [B, S, H, hd] tensor, and a (sequence, head)
// pair's probabilities a contiguous S×S matrix, so no head is gathered or
// transposed. The row-wise steps (the softmax, its backward, the mask)
// are package transformerops' own, which the host fallback runs too.
// Tasks and scratch: attention_plan.go.

// AttentionScores implements tensor.TransformerKernels: per task,
// probs[rows t0…t1) = Scale·Q[t0…t1)·K[0…n)ᵀ, n = t1 under the causal
// mask (else S), then each row's softmax over the positions it sees.
func (d *Device) AttentionScores(q, k, probs *tensor.Tensor, p tensor.AttentionParams) {
	const op = "attention scores"
	b := p.Check(op, q, k, nil, probs)
	qd, kd, pd := d.data(op, q, q.Len()), d.data(op, k, k.Len()), d.data(op, probs, probs.Len())
	pl, buf, release := d.attnBegin(p, b)
	defer release()
	s, hd, ldq, ldk := p.Seq, p.HeadDim, p.Heads*p.HeadDim, p.KVHeads*p.HeadDim
	d.attnRun(pl, buf, pl.queryTasks(), func(pack []float32, i int) {
		j, t0, t1 := pl.queryTask(i)
		bi, h := j/p.Heads, j%p.Heads
		n := pl.p.Visible(t1 - 1)
		d.sgemmSerial(pack, false, true, t1-t0, n, hd, p.Scale, qd[pl.p.QRow(bi, t0, h):], ldq,
			kd[pl.p.KVRow(bi, 0, pl.p.KVHead(h)):], ldk, 0, pd[(j*s+t0)*s:], s)
		for t := t0; t < t1; t++ {
			ops.SoftmaxRow(pd[(j*s+t)*s:(j*s+t+1)*s], pl.p.Visible(t))
		}
	})
}

// AttentionContext implements tensor.TransformerKernels: per task,
// out[rows t0…t1) = probs[t0…t1, 0…n)·V[0…n), n as in AttentionScores
// (the masked probabilities inside the block are the zeros the scores
// hold).
func (d *Device) AttentionContext(probs, v, out *tensor.Tensor, p tensor.AttentionParams) {
	const op = "attention context"
	b := p.Check(op, out, nil, v, probs)
	pd, vd, od := d.data(op, probs, probs.Len()), d.data(op, v, v.Len()), d.data(op, out, out.Len())
	pl, buf, release := d.attnBegin(p, b)
	defer release()
	s, hd, ldq, ldk := p.Seq, p.HeadDim, p.Heads*p.HeadDim, p.KVHeads*p.HeadDim
	d.attnRun(pl, buf, pl.queryTasks(), func(pack []float32, i int) {
		j, t0, t1 := pl.queryTask(i)
		bi, h := j/p.Heads, j%p.Heads
		n := pl.p.Visible(t1 - 1)
		d.sgemmSerial(pack, false, false, t1-t0, hd, n, 1, pd[(j*s+t0)*s:], s,
			vd[pl.p.KVRow(bi, 0, pl.p.KVHead(h)):], ldk, 0, od[pl.p.QRow(bi, t0, h):], ldq)
	})
}

// AttentionContextBackward implements tensor.TransformerKernels: dprobs
// by query tasks, as AttentionScores computes probs (the masked
// positions then set to 0), and then dv by key tasks (keyGrad).
func (d *Device) AttentionContextBackward(probs, v, dout, dprobs, dv *tensor.Tensor, p tensor.AttentionParams) {
	const op = "attention context backward"
	b := p.Check(op, dout, nil, v, probs)
	p.Check(op, dout, nil, dv, dprobs)
	pd, vd, dod := d.data(op, probs, probs.Len()), d.data(op, v, v.Len()), d.data(op, dout, dout.Len())
	dpd := d.data(op, dprobs, dprobs.Len())
	pl, buf, release := d.attnBegin(p, b)
	defer release()
	s, hd, ldq, ldk := p.Seq, p.HeadDim, p.Heads*p.HeadDim, p.KVHeads*p.HeadDim
	d.attnRun(pl, buf, pl.queryTasks(), func(pack []float32, i int) {
		j, t0, t1 := pl.queryTask(i)
		bi, h := j/p.Heads, j%p.Heads
		n := pl.p.Visible(t1 - 1)
		d.sgemmSerial(pack, false, true, t1-t0, n, hd, 1, dod[pl.p.QRow(bi, t0, h):], ldq,
			vd[pl.p.KVRow(bi, 0, pl.p.KVHead(h)):], ldk, 0, dpd[(j*s+t0)*s:], s)
		for t := t0; t < t1; t++ {
			clear(dpd[(j*s+t)*s+pl.p.Visible(t) : (j*s+t+1)*s])
		}
	})
	if dv != nil {
		d.keyGrad(pl, buf, 1, pd, dod, d.data(op, dv, dv.Len()))
	}
}

// AttentionScoresBackward implements tensor.TransformerKernels: by query
// tasks, dscores in place of dprobs row by row and dq =
// Scale·dscores·K; then dk by key tasks (keyGrad).
func (d *Device) AttentionScoresBackward(q, k, probs, dprobs, dq, dk *tensor.Tensor, p tensor.AttentionParams) {
	const op = "attention scores backward"
	b := p.Check(op, q, k, nil, probs)
	p.Check(op, dq, dk, nil, dprobs)
	if dq == nil && dk == nil {
		return
	}
	qd, kd, pd := d.data(op, q, q.Len()), d.data(op, k, k.Len()), d.data(op, probs, probs.Len())
	dpd := d.data(op, dprobs, dprobs.Len())
	var dqd []float32
	if dq != nil {
		dqd = d.data(op, dq, dq.Len())
	}
	pl, buf, release := d.attnBegin(p, b)
	defer release()
	s, hd, ldq, ldk := p.Seq, p.HeadDim, p.Heads*p.HeadDim, p.KVHeads*p.HeadDim
	d.attnRun(pl, buf, pl.queryTasks(), func(pack []float32, i int) {
		j, t0, t1 := pl.queryTask(i)
		for t := t0; t < t1; t++ {
			row := (j*s + t) * s
			ops.SoftmaxBackwardRow(pd[row:row+s], dpd[row:row+s], pl.p.Visible(t))
		}
		if dqd == nil {
			return
		}
		bi, h := j/p.Heads, j%p.Heads
		n := pl.p.Visible(t1 - 1)
		d.sgemmSerial(pack, false, false, t1-t0, hd, n, p.Scale, dpd[(j*s+t0)*s:], s,
			kd[pl.p.KVRow(bi, 0, pl.p.KVHead(h)):], ldk, 0, dqd[pl.p.QRow(bi, t0, h):], ldq)
	})
	if dk != nil {
		d.keyGrad(pl, buf, p.Scale, dpd, qd, d.data(op, dk, dk.Len()))
	}
}

// keyGrad sets grad [B, S, Hkv, hd] = alpha·Σ_h wᵀ·x over the query heads
// h of each key/value head's group, w [B, H, S, S] (probs or dscores)
// and x [B, S, H, hd] (dout or q): per key task, positions [s0, s1) of
// one head's rows, one product per query head of the group, the first
// setting the block and the others adding to it. Under the causal mask
// only queries from s0 on see the block, so each product starts there.
func (d *Device) keyGrad(pl attnPlan, buf []float32, alpha float32, w, x, grad []float32) {
	p := pl.p
	s, hd, ldq, ldk := p.Seq, p.HeadDim, p.Heads*p.HeadDim, p.KVHeads*p.HeadDim
	group := p.Heads / p.KVHeads
	d.attnRun(pl, buf, pl.keyTasks(), func(pack []float32, i int) {
		bi, g, s0, s1 := pl.keyTask(i)
		u0 := 0
		if p.Causal {
			u0 = s0
		}
		for h := g * group; h < (g+1)*group; h++ {
			beta := float32(1)
			if h == g*group {
				beta = 0
			}
			d.sgemmSerial(pack, true, false, s1-s0, hd, s-u0, alpha, w[((bi*p.Heads+h)*s+u0)*s+s0:], s,
				x[p.QRow(bi, u0, h):], ldq, beta, grad[p.KVRow(bi, s0, g):], ldk)
		}
	})
}

// attnBegin plans an attention kernel over b sequences and takes its
// scratch, to be released when the kernel returns.
func (d *Device) attnBegin(p tensor.AttentionParams, b int) (pl attnPlan, buf []float32, release func()) {
	pl = newAttnPlan(p, b, d.pool.threads, d.ownThreads())
	buf, release = d.scratch(pl.elems())
	return pl, buf, release
}
