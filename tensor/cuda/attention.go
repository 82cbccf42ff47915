package cuda

import "github.com/pipecast/pipecast/tensor"

// The attention kernels of tensor.TransformerKernels. Every product is a
// batch over the B sequences of one query head's matrices where they lie:
// a head's rows of q, k, v, out and their gradients are a row-major
// matrix with leading dimension H·hd (Hkv·hd for k and v) inside the [B,
// S, H, hd] tensor, one sequence S·H·hd values after the last, and a
// (sequence, head) pair's probabilities a contiguous S×S matrix, H·S·S
// values after the previous sequence's. So each head is one strided
// batch (sgemmBatched: cuBLAS's cublasSgemmStridedBatched, or
// pc_sgemm_batched), H of them per product, with no head gathered or
// transposed; query head h reads key/value head h/(H/Hkv). The row-wise
// steps (the softmax and its backward, the causal mask) are kernels of
// attention.cu, one block per row.
//
// The products cover the whole S×S square under the causal mask as well:
// the masked scores are computed and then overwritten with 0 by the
// softmax, and the masked zeros of probs and dscores take part in the
// products that read them, adding 0. That wastes up to half of the
// products' work, a price paid for using the library's batched GEMM as
// it is.
//
// dk and dv sum over the query heads sharing a key/value head: the first
// head's product overwrites the gradient (beta 0) and the group's next
// heads add theirs to it in head order (beta 1), so the sums are taken in
// one fixed order on any GPU, without atomics.

// AttentionScores implements tensor.TransformerKernels: per head, probs
// = Scale·Q·Kᵀ over the sequences, then each row's softmax under the
// mask (pc_attn_softmax).
func (d *Device) AttentionScores(q, k, probs *tensor.Tensor, p tensor.AttentionParams) {
	const op = "attention scores"
	b := p.Check(op, q, k, nil, probs)
	l := attnLayoutOf(p)
	pq, pk, pp := d.ptr(op, q, q.Len()), d.ptr(op, k, k.Len()), d.ptr(op, probs, probs.Len())
	for h := range p.Heads {
		d.sgemmBatched(op, false, true, l.s, l.s, l.hd, p.Scale, pq.Add(l.qHead(h)), l.ldq, l.qStride,
			pk.Add(l.kvHead(h)), l.ldk, l.kvStride, 0, pp.Add(l.pHead(h)), l.s, l.pStride, b)
	}
	rows := b * l.rows()
	d.launchAttnSoftmax(gridPerItem(rows), block1D, pp, int64(rows), i32(op, l.s), flag(p.Causal))
}

// AttentionContext implements tensor.TransformerKernels: per head, out =
// probs·V over the sequences.
func (d *Device) AttentionContext(probs, v, out *tensor.Tensor, p tensor.AttentionParams) {
	const op = "attention context"
	b := p.Check(op, out, nil, v, probs)
	l := attnLayoutOf(p)
	pp, pv, po := d.ptr(op, probs, probs.Len()), d.ptr(op, v, v.Len()), d.ptr(op, out, out.Len())
	for h := range p.Heads {
		d.sgemmBatched(op, false, false, l.s, l.hd, l.s, 1, pp.Add(l.pHead(h)), l.s, l.pStride,
			pv.Add(l.kvHead(h)), l.ldk, l.kvStride, 0, po.Add(l.qHead(h)), l.ldq, l.qStride, b)
	}
}

// AttentionContextBackward implements tensor.TransformerKernels: per
// head, dprobs = dout·Vᵀ (the masked positions then set to 0 by
// pc_attn_mask), and unless dv is nil dv = Σ_h probsᵀ·dout (keyGrad).
func (d *Device) AttentionContextBackward(probs, v, dout, dprobs, dv *tensor.Tensor, p tensor.AttentionParams) {
	const op = "attention context backward"
	b := p.Check(op, dout, nil, v, probs)
	p.Check(op, dout, nil, dv, dprobs)
	l := attnLayoutOf(p)
	pp, pv, pdo := d.ptr(op, probs, probs.Len()), d.ptr(op, v, v.Len()), d.ptr(op, dout, dout.Len())
	pdp := d.ptr(op, dprobs, dprobs.Len())
	for h := range p.Heads {
		d.sgemmBatched(op, false, true, l.s, l.s, l.hd, 1, pdo.Add(l.qHead(h)), l.ldq, l.qStride,
			pv.Add(l.kvHead(h)), l.ldk, l.kvStride, 0, pdp.Add(l.pHead(h)), l.s, l.pStride, b)
	}
	if p.Causal {
		rows := int64(b * l.rows())
		d.launchAttnMask(gridStride(rows*int64(l.s)), block1D, pdp, rows, i32(op, l.s))
	}
	if dv != nil {
		d.keyGrad(op, l, 1, pp, pdo, d.ptr(op, dv, dv.Len()), b)
	}
}

// AttentionScoresBackward implements tensor.TransformerKernels: dscores
// in place of dprobs (pc_attn_softmax_bwd), then per head dq =
// Scale·dscores·K unless dq is nil, and dk = Scale·Σ_h dscoresᵀ·Q
// (keyGrad) unless dk is nil. With neither, nothing is computed.
func (d *Device) AttentionScoresBackward(q, k, probs, dprobs, dq, dk *tensor.Tensor, p tensor.AttentionParams) {
	const op = "attention scores backward"
	b := p.Check(op, q, k, nil, probs)
	p.Check(op, dq, dk, nil, dprobs)
	if dq == nil && dk == nil {
		return
	}
	l := attnLayoutOf(p)
	pq, pk, pp := d.ptr(op, q, q.Len()), d.ptr(op, k, k.Len()), d.ptr(op, probs, probs.Len())
	pdp := d.ptr(op, dprobs, dprobs.Len())
	rows := b * l.rows()
	d.launchAttnSoftmaxBwd(gridPerItem(rows), block1D, pp, pdp, int64(rows), i32(op, l.s), flag(p.Causal))
	if dq != nil {
		pdq := d.ptr(op, dq, dq.Len())
		for h := range p.Heads {
			d.sgemmBatched(op, false, false, l.s, l.hd, l.s, p.Scale, pdp.Add(l.pHead(h)), l.s, l.pStride,
				pk.Add(l.kvHead(h)), l.ldk, l.kvStride, 0, pdq.Add(l.qHead(h)), l.ldq, l.qStride, b)
		}
	}
	if dk != nil {
		d.keyGrad(op, l, p.Scale, pdp, pq, d.ptr(op, dk, dk.Len()), b)
	}
}

// keyGrad sets grad [B, S, Hkv, hd] = alpha·Σ_h wᵀ·x over the query heads
// h of each key/value head's group, w [B, H, S, S] (probs or dscores) and
// x [B, S, H, hd] (dout or q): per key/value head, the group's first
// head's product overwrites its rows and the others add to them in turn.
func (d *Device) keyGrad(op string, l attnLayout, alpha float32, w, x, grad Ptr, b int) {
	for h := range l.heads {
		beta := float32(1)
		if h%l.group == 0 {
			beta = 0
		}
		d.sgemmBatched(op, true, false, l.s, l.hd, l.s, alpha, w.Add(l.pHead(h)), l.s, l.pStride,
			x.Add(l.qHead(h)), l.ldq, l.qStride, beta, grad.Add(l.kvHead(h)), l.ldk, l.kvStride, b)
	}
}

// attnLayout locates one head's matrices in attention's tensors, in
// elements: where head h's begin within a sequence, the leading
// dimensions, and the strides from one sequence to the next.
type attnLayout struct {
	s, hd, heads, group        int
	ldq, ldk                   int
	qStride, kvStride, pStride int64
}

func attnLayoutOf(p tensor.AttentionParams) attnLayout {
	s, hd := p.Seq, p.HeadDim
	return attnLayout{
		s: s, hd: hd, heads: p.Heads, group: p.Heads / p.KVHeads,
		ldq: p.Heads * hd, ldk: p.KVHeads * hd,
		qStride:  int64(s) * int64(p.Heads*hd),
		kvStride: int64(s) * int64(p.KVHeads*hd),
		pStride:  int64(p.Heads) * int64(s) * int64(s),
	}
}

// qHead, kvHead and pHead return where query head h's rows of q, of its
// key/value head in k or v, and its probabilities begin in sequence 0.
func (l attnLayout) qHead(h int) int  { return h * l.hd }
func (l attnLayout) kvHead(h int) int { return h / l.group * l.hd }
func (l attnLayout) pHead(h int) int  { return h * l.s * l.s }

// rows returns the rows of probs per sequence: H·S.
func (l attnLayout) rows() int { return l.heads * l.s }
