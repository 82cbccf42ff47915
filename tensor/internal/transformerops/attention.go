package transformerops

import "math"

// Causal scaled dot-product attention with grouped-query heads (Vaswani
// et al., "Attention Is All You Need", 2017, §3.2.1; Ainslie et al.,
// "GQA", 2023): per sequence b and query head h, reading key/value head
// g = h/(Heads/KVHeads),
//
//	probs[b, h] = softmax(Scale·Q·Kᵀ)   Q = q[b, :, h, :], K = k[b, :, g, :]
//	out[b, :, h, :] = probs[b, h]·V      V = v[b, :, g, :]
//
// with q and out [B, S, H, hd], k and v [B, S, Hkv, hd] and probs [B, H,
// S, S]. Under the causal mask query position t sees key positions s ≤ t:
// the others' probabilities are exactly 0, and the loops neither compute
// nor read them. Dot products accumulate in float32, as a GEMM does; the
// softmax's sums in float64.

// AttentionScores sets probs for the (sequence, head) pairs [lo, hi),
// pair j being sequence j/Heads and query head j%Heads.
func AttentionScores(q, k, probs []float32, p AttentionSizes, lo, hi int) {
	s, hd := p.Seq, p.HeadDim
	for j := lo; j < hi; j++ {
		b, h := j/p.Heads, j%p.Heads
		g := p.KVHead(h)
		for t := 0; t < s; t++ {
			row := probs[(j*s+t)*s : (j*s+t+1)*s]
			qt := q[p.QRow(b, t, h):][:hd]
			n := p.Visible(t)
			for u := 0; u < n; u++ {
				ku := k[p.KVRow(b, u, g):][:hd]
				var dot float32
				for i, x := range qt {
					dot += x * ku[i]
				}
				row[u] = p.Scale * dot
			}
			SoftmaxRow(row, n)
		}
	}
}

// AttentionContext sets out for the (sequence, head) pairs [lo, hi), as
// AttentionScores numbers them.
func AttentionContext(probs, v, out []float32, p AttentionSizes, lo, hi int) {
	s, hd := p.Seq, p.HeadDim
	for j := lo; j < hi; j++ {
		b, h := j/p.Heads, j%p.Heads
		g := p.KVHead(h)
		for t := 0; t < s; t++ {
			row := probs[(j*s+t)*s : (j*s+t+1)*s]
			o := out[p.QRow(b, t, h):][:hd]
			clear(o)
			for u := range p.Visible(t) {
				w, vu := row[u], v[p.KVRow(b, u, g):][:hd]
				for i, x := range vu {
					o[i] += w * x
				}
			}
		}
	}
}

// SoftmaxRow replaces row[:n] by its softmax, the maximum subtracted
// before exponentiating so that no exponential exceeds 1, and sets
// row[n:] (the masked positions) to exactly 0. n ≥ 1.
func SoftmaxRow(row []float32, n int) {
	m := row[0]
	for _, x := range row[1:n] {
		m = max(m, x)
	}
	sum := 0.0
	for i, x := range row[:n] {
		e := math.Exp(float64(x - m))
		row[i] = float32(e)
		sum += e
	}
	inv := float32(1 / sum)
	for i := range row[:n] {
		row[i] *= inv
	}
	clear(row[n:])
}

// SoftmaxBackwardRow replaces dprobs[:n], the gradient of a softmax row
// probs[:n], by the gradient of its inputs, probs⊙(dprobs − ⟨dprobs,
// probs⟩), and sets dprobs[n:] (the masked positions) to exactly 0.
func SoftmaxBackwardRow(probs, dprobs []float32, n int) {
	dot := 0.0
	for i, x := range dprobs[:n] {
		dot += float64(x) * float64(probs[i])
	}
	d := float32(dot)
	for i := range dprobs[:n] {
		dprobs[i] = probs[i] * (dprobs[i] - d)
	}
	clear(dprobs[n:])
}

// Visible returns how many key positions query position t attends to:
// t+1 under the causal mask, else all of them.
func (p AttentionSizes) Visible(t int) int {
	if p.Causal {
		return t + 1
	}
	return p.Seq
}

// KVHead returns the key/value head that query head h reads.
func (p AttentionSizes) KVHead(h int) int { return h / (p.Heads / p.KVHeads) }

// QRow returns the offset of q's (or out's) row for sequence b, position
// t and head h.
func (p AttentionSizes) QRow(b, t, h int) int { return ((b*p.Seq+t)*p.Heads + h) * p.HeadDim }

// KVRow returns the offset of k's (or v's) row for sequence b, position
// t and key/value head g.
func (p AttentionSizes) KVRow(b, t, g int) int { return ((b*p.Seq+t)*p.KVHeads + g) * p.HeadDim }
