package modeltest

import (
	"math"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/tensor"
)

// refAttention mirrors models.Attention: scaled dot-product attention
// with the causal mask, grouped-query heads, RoPE in Hugging Face's
// rotate-half form, and GPT-2's dropouts, written out in float64 loops
// over [m, S, heads, hd] and [m, H, S, S].
type refAttention struct {
	l                   *models.Attention
	qkv, q, k, v, out   refLayer // the projections' mirrors (qkv, or q, k and v)
	attnDrop, residDrop refLayer // nil in the Llama form

	m, s        int
	qs, ks, vs  []float64 // after RoPE
	probs, used []float64 // used: the probabilities after dropout
}

func (m *refModel) buildAttention(l *models.Attention) refLayer {
	r := &refAttention{l: l, out: m.build(l.Out)}
	if l.QKV != nil {
		r.qkv = m.build(l.QKV)
	} else {
		r.q, r.k, r.v = m.build(l.Q), m.build(l.K), m.build(l.V)
	}
	if l.AttnDrop != nil {
		r.attnDrop = m.build(l.AttnDrop)
	}
	if l.ResidDrop != nil {
		r.residDrop = m.build(l.ResidDrop)
	}
	return r
}

func (r *refAttention) forward(x refTensor) refTensor {
	l := r.l
	r.m, r.s = x.shape[0], x.shape[1]
	n := r.m * r.s
	rows := refTensor{tensor.Shape{n, l.Hidden}, x.v}
	qw, kw := l.Heads*l.HeadDim, l.KVHeads*l.HeadDim
	if r.qkv != nil {
		y := r.qkv.forward(rows).v
		r.qs, r.ks, r.vs = make([]float64, n*qw), make([]float64, n*kw), make([]float64, n*kw)
		w := qw + 2*kw
		for i := range n {
			copy(r.qs[i*qw:(i+1)*qw], y[i*w:])
			copy(r.ks[i*kw:(i+1)*kw], y[i*w+qw:])
			copy(r.vs[i*kw:(i+1)*kw], y[i*w+qw+kw:])
		}
	} else {
		r.qs, r.ks, r.vs = r.q.forward(rows).v, r.k.forward(rows).v, r.v.forward(rows).v
	}
	if l.Theta != 0 {
		r.qs = refRoPE(r.qs, r.m, r.s, l.Heads, l.HeadDim, l.Theta, 1)
		r.ks = refRoPE(r.ks, r.m, r.s, l.KVHeads, l.HeadDim, l.Theta, 1)
	}
	r.probs = r.scores()
	r.used = r.probs
	if r.attnDrop != nil {
		r.used = r.attnDrop.forward(r.probsTensor(r.probs)).v
	}
	heads := r.context()
	y := r.out.forward(refTensor{tensor.Shape{n, qw}, heads})
	out := refTensor{x.shape, y.v}
	if r.residDrop != nil {
		out = r.residDrop.forward(out)
	}
	return out
}

func (r *refAttention) probsTensor(v []float64) refTensor {
	return refTensor{tensor.Shape{r.m, r.l.Heads, r.s, r.s}, v}
}

// qAt, kvAt and pAt index q [m, S, H, hd], k and v [m, S, Hkv, hd] and
// the probabilities [m, H, S, S].
func (r *refAttention) qAt(b, t, h int) int { return ((b*r.s+t)*r.l.Heads + h) * r.l.HeadDim }
func (r *refAttention) kvAt(b, t, h int) int {
	group := r.l.Heads / r.l.KVHeads
	return ((b*r.s+t)*r.l.KVHeads + h/group) * r.l.HeadDim
}
func (r *refAttention) pAt(b, h, t, s int) int { return ((b*r.l.Heads+h)*r.s+t)*r.s + s }

func (r *refAttention) scale() float64 { return 1 / math.Sqrt(float64(r.l.HeadDim)) }

// scores returns softmax over s ≤ t of scale·q[t]·k[s], 0 for s > t.
func (r *refAttention) scores() []float64 {
	p := make([]float64, r.m*r.l.Heads*r.s*r.s)
	hd := r.l.HeadDim
	for b := range r.m {
		for h := range r.l.Heads {
			for t := range r.s {
				qi := r.qAt(b, t, h)
				top := math.Inf(-1)
				for s := 0; s <= t; s++ {
					ki := r.kvAt(b, s, h)
					dot := 0.0
					for j := range hd {
						dot += r.qs[qi+j] * r.ks[ki+j]
					}
					p[r.pAt(b, h, t, s)] = r.scale() * dot
					top = max(top, r.scale()*dot)
				}
				sum := 0.0
				for s := 0; s <= t; s++ {
					e := math.Exp(p[r.pAt(b, h, t, s)] - top)
					p[r.pAt(b, h, t, s)] = e
					sum += e
				}
				for s := 0; s <= t; s++ {
					p[r.pAt(b, h, t, s)] /= sum
				}
			}
		}
	}
	return p
}

// context returns used·v per sequence and head, [m, S, H, hd].
func (r *refAttention) context() []float64 {
	hd := r.l.HeadDim
	out := make([]float64, r.m*r.s*r.l.Heads*hd)
	for b := range r.m {
		for h := range r.l.Heads {
			for t := range r.s {
				o := r.qAt(b, t, h)
				for s := range r.s {
					pv, vi := r.used[r.pAt(b, h, t, s)], r.kvAt(b, s, h)
					for j := range hd {
						out[o+j] += pv * r.vs[vi+j]
					}
				}
			}
		}
	}
	return out
}

func (r *refAttention) backward(dy refTensor) refTensor {
	l := r.l
	n, hd := r.m*r.s, l.HeadDim
	qw, kw := l.Heads*hd, l.KVHeads*hd
	if r.residDrop != nil {
		dy = r.residDrop.backward(dy)
	}
	dheads := r.out.backward(refTensor{tensor.Shape{n, l.Hidden}, dy.v}).v
	// Through the context: dused = dheads·vᵀ, dv = usedᵀ·dheads summed
	// over the query heads that share a key/value head.
	dused := make([]float64, len(r.probs))
	dv := make([]float64, n*kw)
	for b := range r.m {
		for h := range l.Heads {
			for t := range r.s {
				o := r.qAt(b, t, h)
				for s := range r.s {
					vi, pi := r.kvAt(b, s, h), r.pAt(b, h, t, s)
					for j := range hd {
						dused[pi] += dheads[o+j] * r.vs[vi+j]
						dv[vi+j] += r.used[pi] * dheads[o+j]
					}
				}
			}
		}
	}
	dprobs := dused
	if r.attnDrop != nil {
		dprobs = r.attnDrop.backward(r.probsTensor(dused)).v
	}
	// Through the softmax, dscore = p·(dp − Σ dp·p), and the scaled
	// product.
	dq, dk := make([]float64, n*qw), make([]float64, n*kw)
	for b := range r.m {
		for h := range l.Heads {
			for t := range r.s {
				sum := 0.0
				for s := range r.s {
					sum += dprobs[r.pAt(b, h, t, s)] * r.probs[r.pAt(b, h, t, s)]
				}
				qi := r.qAt(b, t, h)
				for s := 0; s <= t; s++ {
					pi, ki := r.pAt(b, h, t, s), r.kvAt(b, s, h)
					ds := r.probs[pi] * (dprobs[pi] - sum) * r.scale()
					for j := range hd {
						dq[qi+j] += ds * r.ks[ki+j]
						dk[ki+j] += ds * r.qs[qi+j]
					}
				}
			}
		}
	}
	if l.Theta != 0 {
		dq = refRoPE(dq, r.m, r.s, l.Heads, hd, l.Theta, -1)
		dk = refRoPE(dk, r.m, r.s, l.KVHeads, hd, l.Theta, -1)
	}
	var dx []float64
	if r.qkv != nil {
		w := qw + 2*kw
		dqkv := make([]float64, n*w)
		for i := range n {
			copy(dqkv[i*w:], dq[i*qw:(i+1)*qw])
			copy(dqkv[i*w+qw:], dk[i*kw:(i+1)*kw])
			copy(dqkv[i*w+qw+kw:], dv[i*kw:(i+1)*kw])
		}
		dx = r.qkv.backward(refTensor{tensor.Shape{n, w}, dqkv}).v
	} else {
		dx = r.q.backward(refTensor{tensor.Shape{n, qw}, dq}).v
		dxk := r.k.backward(refTensor{tensor.Shape{n, kw}, dk}).v
		dxv := r.v.backward(refTensor{tensor.Shape{n, kw}, dv}).v
		for i := range dx {
			dx[i] += dxk[i] + dxv[i]
		}
	}
	return refTensor{tensor.Shape{r.m, r.s, l.Hidden}, dx}
}

// refRoPE rotates x [m, S, heads, hd] by sign·a for a = s·θ^(−2i/hd) at
// position s, pair (i, i + hd/2): Hugging Face's apply_rotary_pos_emb,
// x·cos + rotate_half(x)·sin with rotate_half(x) = cat(−x₂, x₁). sign −1
// is the inverse rotation, the backward.
func refRoPE(x []float64, m, seq, heads, hd int, theta, sign float64) []float64 {
	y := make([]float64, len(x))
	half := hd / 2
	for b := range m {
		for s := range seq {
			for h := range heads {
				o := ((b*seq+s)*heads + h) * hd
				for i := range half {
					a := sign * float64(s) * math.Pow(theta, -2*float64(i)/float64(hd))
					c, sn := math.Cos(a), math.Sin(a)
					x1, x2 := x[o+i], x[o+i+half]
					y[o+i] = x1*c - x2*sn
					y[o+i+half] = x2*c + x1*sn
				}
			}
		}
	}
	return y
}
