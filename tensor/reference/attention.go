package reference

import (
	"fmt"
	"math"

	"github.com/pipecast/pipecast/tensor"
)

// The attention kernels of tensor.TransformerKernels, for b sequences:
// q and out [b, S, H, hd], k and v [b, S, Hkv, hd], probs [b, H, S, S],
// query head h reading key/value head h/(H/Hkv). Under the causal mask
// query position t sees key positions s ≤ t; the probabilities of the
// others are 0 and, as in the kernels, never read.

// AttentionScores returns probs = softmax(p.Scale·Q·Kᵀ) per sequence and
// query head, each row's maximum subtracted before exponentiating.
func AttentionScores(q, k []float64, b int, p tensor.AttentionParams) []float64 {
	a := newAttention("attention scores", b, p)
	a.check("q", q, a.qLen())
	a.check("k", k, a.kvLen())
	probs := make([]float64, a.probsLen())
	scale := float64(p.Scale)
	a.each(func(bi, h, g, t, n int) {
		row := probs[a.probsRow(bi, h, t):][:n]
		m := math.Inf(-1)
		for s := range row {
			row[s] = scale * dotRows(q[a.qRow(bi, t, h):], k[a.kvRow(bi, s, g):], p.HeadDim)
			m = math.Max(m, row[s])
		}
		sum := 0.0
		for s := range row {
			row[s] = math.Exp(row[s] - m)
			sum += row[s]
		}
		for s := range row {
			row[s] /= sum
		}
	})
	return probs
}

// AttentionContext returns out = probs·V per sequence and query head.
func AttentionContext(probs, v []float64, b int, p tensor.AttentionParams) []float64 {
	a := newAttention("attention context", b, p)
	a.check("probs", probs, a.probsLen())
	a.check("v", v, a.kvLen())
	out := make([]float64, a.qLen())
	a.each(func(bi, h, g, t, n int) {
		o := out[a.qRow(bi, t, h):][:p.HeadDim]
		for s, w := range probs[a.probsRow(bi, h, t):][:n] {
			for i, x := range v[a.kvRow(bi, s, g):][:p.HeadDim] {
				o[i] += w * x
			}
		}
	})
	return out
}

// AttentionContextBackward returns the gradients of AttentionContext
// given dout: dprobs = dout·Vᵀ (0 at the masked positions) and dv =
// probsᵀ·dout, summed over the query heads that share each key/value
// head.
func AttentionContextBackward(probs, v, dout []float64, b int, p tensor.AttentionParams) (dprobs, dv []float64) {
	a := newAttention("attention context backward", b, p)
	a.check("probs", probs, a.probsLen())
	a.check("v", v, a.kvLen())
	a.check("dout", dout, a.qLen())
	dprobs = make([]float64, a.probsLen())
	dv = make([]float64, a.kvLen())
	a.each(func(bi, h, g, t, n int) {
		do := dout[a.qRow(bi, t, h):][:p.HeadDim]
		for s := range n {
			dprobs[a.probsRow(bi, h, t)+s] = dotRows(do, v[a.kvRow(bi, s, g):], p.HeadDim)
			w := probs[a.probsRow(bi, h, t)+s]
			for i, x := range do {
				dv[a.kvRow(bi, s, g)+i] += w * x
			}
		}
	})
	return dprobs, dv
}

// AttentionScoresBackward returns the gradients of AttentionScores given
// dprobs: through the softmax, dscores = probs⊙(dprobs − Σ_row
// dprobs⊙probs), and through the product, dq = p.Scale·dscores·K and dk
// = p.Scale·dscoresᵀ·Q, summed over the query heads that share each key
// head.
func AttentionScoresBackward(q, k, probs, dprobs []float64, b int, p tensor.AttentionParams) (dq, dk []float64) {
	a := newAttention("attention scores backward", b, p)
	a.check("q", q, a.qLen())
	a.check("k", k, a.kvLen())
	a.check("probs", probs, a.probsLen())
	a.check("dprobs", dprobs, a.probsLen())
	dq = make([]float64, a.qLen())
	dk = make([]float64, a.kvLen())
	scale := float64(p.Scale)
	a.each(func(bi, h, g, t, n int) {
		pr := probs[a.probsRow(bi, h, t):][:n]
		dp := dprobs[a.probsRow(bi, h, t):][:n]
		inner := 0.0
		for s := range pr {
			inner += dp[s] * pr[s]
		}
		for s := range pr {
			ds := scale * pr[s] * (dp[s] - inner)
			for i := range p.HeadDim {
				dq[a.qRow(bi, t, h)+i] += ds * k[a.kvRow(bi, s, g)+i]
				dk[a.kvRow(bi, s, g)+i] += ds * q[a.qRow(bi, t, h)+i]
			}
		}
	})
	return dq, dk
}

// attention is one call's sizes.
type attention struct {
	tensor.AttentionParams
	b int
}

func newAttention(op string, b int, p tensor.AttentionParams) attention {
	if b < 1 || p.Seq < 1 || p.Heads < 1 || p.KVHeads < 1 || p.HeadDim < 1 || p.Heads%p.KVHeads != 0 {
		panic(fmt.Sprintf("reference: %s: %d sequences of sizes %+v", op, b, p))
	}
	return attention{p, b}
}

func (a attention) check(name string, x []float64, n int) {
	if len(x) != n {
		panic(fmt.Sprintf("reference: attention: %s of %d values, want %d", name, len(x), n))
	}
}

func (a attention) qLen() int     { return a.b * a.Seq * a.Heads * a.HeadDim }
func (a attention) kvLen() int    { return a.b * a.Seq * a.KVHeads * a.HeadDim }
func (a attention) probsLen() int { return a.b * a.Heads * a.Seq * a.Seq }

func (a attention) qRow(b, t, h int) int  { return ((b*a.Seq+t)*a.Heads + h) * a.HeadDim }
func (a attention) kvRow(b, s, g int) int { return ((b*a.Seq+s)*a.KVHeads + g) * a.HeadDim }
func (a attention) probsRow(b, h, t int) int {
	return ((b*a.Heads+h)*a.Seq + t) * a.Seq
}

// each calls fn for every sequence b, query head h (reading key/value
// head g) and query position t, with n the key positions t sees.
func (a attention) each(fn func(b, h, g, t, n int)) {
	for b := range a.b {
		for h := range a.Heads {
			g := h / (a.Heads / a.KVHeads)
			for t := range a.Seq {
				n := a.Seq
				if a.Causal {
					n = t + 1
				}
				fn(b, h, g, t, n)
			}
		}
	}
}

// dotRows returns Σ_{i<n} x[i]·y[i].
func dotRows(x, y []float64, n int) float64 {
	s := 0.0
	for i := range n {
		s += x[i] * y[i]
	}
	return s
}
