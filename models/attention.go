package models

import (
	"fmt"
	"math"

	"github.com/pipecast/pipecast/tensor"
)

// Attention is a decoder's causal self-attention, scaled by 1/√HeadDim
// (Vaswani et al., "Attention Is All You Need", NeurIPS 2017, §3.2), on x
// [m, S, Hidden], in one of two forms:
//
//   - GPT-2's GPT2Attention: a fused projection c_attn (QKV, Hidden →
//     3·Hidden, with bias) whose output splits into q, k and v; dropout
//     attn_dropout on the probabilities and resid_dropout after c_proj
//     (Out); multi-head attention.
//   - Llama's LlamaAttention: q_proj, k_proj and v_proj (Q, K, V) and
//     o_proj (Out), without biases; grouped-query attention (KVHeads <
//     Heads, query head h reading key/value head h/(Heads/KVHeads)); q
//     and k rotated by RoPE (Su et al., "RoFormer", 2021, §3.4, in
//     Hugging Face's rotate-half form) with base Theta; no dropout.
//
// Its children are the projections and dropouts under Hugging Face's
// names, in its modules' order.
//
// What a training forward keeps for the backward, besides its input x
// (which the projections' contexts hold), in float32 values with N = m·S
// tokens:
//
//	q, k, v            N·(Heads + 2·KVHeads)·HeadDim  (q and k after RoPE)
//	probabilities      m·Heads·S²
//	dropped copy       m·Heads·S², only when attention dropout is on
//	context (Out's x)  N·Heads·HeadDim
//
// and the dropouts' keys. That is what PyTorch's eager attention keeps
// (GPT-2: c_attn's output, the softmax's output, the dropout's output
// and its mask, the merged heads), less the dropout's byte-per-value
// mask, which the key regenerates, and, for Llama, less the copies that
// repeat_kv makes of k and v for every query head.
type Attention struct {
	Hidden, Heads, KVHeads, HeadDim int
	// Theta is RoPE's base; 0 for no rotation (GPT-2).
	Theta float64
	// QKV is GPT-2's fused projection; nil in the Llama form, which has
	// Q, K and V instead.
	QKV, Q, K, V *Linear
	// Out projects the heads' context back to Hidden.
	Out *Linear
	// AttnDrop and ResidDrop are GPT-2's dropouts; nil in the Llama form.
	AttnDrop, ResidDrop *Dropout
}

// NewGPT2Attention returns GPT-2's attention sized by cfg (which must
// have KVHeads = Heads): c_attn, c_proj, attn_dropout, resid_dropout,
// with the dropouts' ids from b and weights drawn as GPT-2's
// _init_weights draws them (c_proj's std scaled by 1/√(2·Layers)).
func NewGPT2Attention(b *Builder, cfg DecoderConfig) *Attention {
	cfg.mustCheck()
	if cfg.KVHeads != cfg.Heads || cfg.RopeTheta != 0 {
		panic(fmt.Sprintf("models: gpt2 attention with %d key/value heads for %d and rope theta %v", cfg.KVHeads, cfg.Heads, cfg.RopeTheta))
	}
	qkv := (cfg.Heads + 2*cfg.KVHeads) * cfg.HeadDim
	return &Attention{
		Hidden: cfg.Hidden, Heads: cfg.Heads, KVHeads: cfg.KVHeads, HeadDim: cfg.HeadDim,
		QKV:       decoderLinear(b, cfg.Hidden, qkv, cfg.Bias, cfg.InitStd),
		Out:       decoderLinear(b, cfg.Heads*cfg.HeadDim, cfg.Hidden, cfg.Bias, gpt2ProjStd(cfg)),
		AttnDrop:  b.Dropout(cfg.AttnDropout),
		ResidDrop: b.Dropout(cfg.ResidDropout),
	}
}

// NewLlamaAttention returns Llama's attention sized by cfg: q_proj,
// k_proj, v_proj, o_proj, weights N(0, InitStd²).
func NewLlamaAttention(b *Builder, cfg DecoderConfig) *Attention {
	cfg.mustCheck()
	if cfg.RopeTheta == 0 {
		panic("models: llama attention without rope theta")
	}
	q, kv := cfg.Heads*cfg.HeadDim, cfg.KVHeads*cfg.HeadDim
	return &Attention{
		Hidden: cfg.Hidden, Heads: cfg.Heads, KVHeads: cfg.KVHeads, HeadDim: cfg.HeadDim, Theta: cfg.RopeTheta,
		Q:   decoderLinear(b, cfg.Hidden, q, cfg.Bias, cfg.InitStd),
		K:   decoderLinear(b, cfg.Hidden, kv, cfg.Bias, cfg.InitStd),
		V:   decoderLinear(b, cfg.Hidden, kv, cfg.Bias, cfg.InitStd),
		Out: decoderLinear(b, q, cfg.Hidden, cfg.Bias, cfg.InitStd),
	}
}

// gpt2ProjStd is the std of GPT-2's c_proj weights: initializer_range /
// √(2·n_layer), the scaling of Radford et al., "Language Models are
// Unsupervised Multitask Learners", 2019, §2.3, for the residual path's
// growth with depth.
func gpt2ProjStd(cfg DecoderConfig) float64 {
	if cfg.Layers == 0 {
		return cfg.InitStd
	}
	return cfg.InitStd / math.Sqrt(2*float64(cfg.Layers))
}

// OutShape returns in for x [m, S, Hidden].
func (l *Attention) OutShape(in tensor.Shape) (tensor.Shape, error) {
	if len(in) != 3 || !in.Valid() || in[2] != l.Hidden {
		return nil, fmt.Errorf("attention(%d, %d heads): input %v is not [m, S, %d]", l.Hidden, l.Heads, in, l.Hidden)
	}
	return in.Clone(), nil
}

// params returns the kernels' sizes for sequences of s tokens.
func (l *Attention) params(s int) tensor.AttentionParams {
	return tensor.AttentionParams{Seq: s, Heads: l.Heads, KVHeads: l.KVHeads, HeadDim: l.HeadDim,
		Scale: float32(1 / math.Sqrt(float64(l.HeadDim))), Causal: true}
}

// rope returns RoPE's sizes for sequences of s tokens of heads heads.
func (l *Attention) rope(s, heads int, inverse bool) tensor.RoPEParams {
	return tensor.RoPEParams{Seq: s, Heads: heads, HeadDim: l.HeadDim, Theta: l.Theta, Inverse: inverse}
}

// attentionContext is what the forward kept (see Attention): the
// projections' and dropouts' contexts, q, k and v [m, S, heads,
// HeadDim], the probabilities [m, Heads, S, S], and used, the
// probabilities the context multiplied: a view of probs, or their
// dropped copy.
type attentionContext struct {
	qkv, q, k, v, out, attnDrop, residDrop Context
	qs, ks, vs, probs, used                *tensor.Tensor
}

func (c *attentionContext) Release() {
	for _, ctx := range []Context{c.qkv, c.q, c.k, c.v, c.out, c.attnDrop, c.residDrop} {
		if ctx != nil {
			ctx.Release()
		}
	}
	for _, t := range []*tensor.Tensor{c.qs, c.ks, c.vs, c.probs, c.used} {
		t.Release()
	}
	*c = attentionContext{}
}

// Forward computes the attention of every token to itself and the
// tokens before it.
func (l *Attention) Forward(p *Pass, x *tensor.Tensor) (*tensor.Tensor, Context) {
	mustOutShape("attention", l, x)
	dev := p.Dev
	m, s := x.Dim(0), x.Dim(1)
	c := &attentionContext{}
	rows := asRows(x)
	q, k, v := l.project(rowsPass(p, x, rows), rows, m, s, c)
	rows.Release()
	if l.Theta != 0 {
		tensor.RoPE(dev, q, q, l.rope(s, l.Heads, false))
		tensor.RoPE(dev, k, k, l.rope(s, l.KVHeads, false))
	}
	ap := l.params(s)
	probs := dev.Alloc(tensor.Activations, m, l.Heads, s, s)
	tensor.AttentionScores(dev, q, k, probs, ap)
	used := probs.Retain()
	if l.AttnDrop != nil {
		used.Release()
		used, c.attnDrop = l.AttnDrop.Forward(p, probs)
	}
	if !p.Grad { // a no-grad forward holds each tensor only as long as it is read
		release(&q, &k, &probs)
	}
	heads := dev.Alloc(tensor.Activations, m*s, l.Heads*l.HeadDim)
	tensor.AttentionContext(dev, used, v, heads, ap)
	if !p.Grad {
		release(&v, &used)
	}
	o, outCtx := l.Out.Forward(p, heads)
	heads.Release()
	y := reshapeOwned(o, x.Shape())
	if l.ResidDrop != nil {
		var dropped *tensor.Tensor
		dropped, c.residDrop = l.ResidDrop.Forward(p, y)
		y.Release()
		y = dropped
	}
	if !p.Grad {
		return y, nil
	}
	c.out = outCtx
	c.qs, c.ks, c.vs, c.probs, c.used = q, k, v, probs, used
	return y, c
}

// project returns q [m, S, Heads, HeadDim] and k, v [m, S, KVHeads,
// HeadDim] of the rows of x, keeping the projections' contexts in c.
// GPT-2's fused output is split into three tensors of their own, so
// that the fused one can go: together they hold what it held.
func (l *Attention) project(p *Pass, rows *tensor.Tensor, m, s int, c *attentionContext) (q, k, v *tensor.Tensor) {
	qShape := tensor.Shape{m, s, l.Heads, l.HeadDim}
	kvShape := tensor.Shape{m, s, l.KVHeads, l.HeadDim}
	if l.QKV == nil {
		var y *tensor.Tensor
		y, c.q = l.Q.Forward(p, rows)
		q = reshapeOwned(y, qShape)
		y, c.k = l.K.Forward(p, rows)
		k = reshapeOwned(y, kvShape)
		y, c.v = l.V.Forward(p, rows)
		v = reshapeOwned(y, kvShape)
		return q, k, v
	}
	qkv, ctx := l.QKV.Forward(p, rows)
	c.qkv = ctx
	q = p.Dev.Alloc(tensor.Activations, qShape...)
	k = p.Dev.Alloc(tensor.Activations, kvShape...)
	v = p.Dev.Alloc(tensor.Activations, kvShape...)
	moveChannels(p.Dev, qkv, []*tensor.Tensor{q, k, v}, false)
	qkv.Release()
	return q, k, v
}

// Backward returns dx and accumulates the projections' gradients.
func (l *Attention) Backward(p *Pass, ctx Context, dy *tensor.Tensor) *tensor.Tensor {
	return l.backward(p, ctx, dy, combinedBackward(p))
}

// backwardInput is Backward with the projections' BackwardInput: their
// weight gradients are deferred; the attention itself has none.
func (l *Attention) backwardInput(p *Pass, ctx Context, dy *tensor.Tensor) (*tensor.Tensor, WeightGrad) {
	return splitBackward(p, func(child childBackward) *tensor.Tensor { return l.backward(p, ctx, dy, child) })
}

// backward runs the forward's steps in reverse: resid_dropout, Out, the
// context's product, attn_dropout, the scores' softmax and product,
// RoPE's inverse rotation of dq and dk, and the projections. It releases
// each saved tensor as soon as its last use has run.
func (l *Attention) backward(p *Pass, ctx Context, dy *tensor.Tensor, child childBackward) *tensor.Tensor {
	c := ctx.(*attentionContext)
	defer c.Release()
	dev := p.Dev
	m, s := dy.Dim(0), dy.Dim(1)
	ap := l.params(s)
	d := dy.Retain()
	if l.ResidDrop != nil {
		dd := child(l.ResidDrop, c.residDrop, d)
		c.residDrop = nil
		d.Release()
		d = dd
	}
	rows := asRows(d)
	d.Release()
	dheads := child(l.Out, c.out, rows)
	c.out = nil
	rows.Release()

	dprobs := dev.Alloc(tensor.Activations, m, l.Heads, s, s)
	dv := dev.Alloc(tensor.Activations, m, s, l.KVHeads, l.HeadDim)
	tensor.AttentionContextBackward(dev, c.used, c.vs, dheads, dprobs, dv, ap)
	dheads.Release()
	release(&c.used, &c.vs)
	if l.AttnDrop != nil {
		dd := child(l.AttnDrop, c.attnDrop, dprobs)
		c.attnDrop = nil
		dprobs.Release()
		dprobs = dd
	}
	dq := dev.Alloc(tensor.Activations, m, s, l.Heads, l.HeadDim)
	dk := dev.Alloc(tensor.Activations, m, s, l.KVHeads, l.HeadDim)
	tensor.AttentionScoresBackward(dev, c.qs, c.ks, c.probs, dprobs, dq, dk, ap)
	dprobs.Release()
	if l.Theta != 0 {
		tensor.RoPE(dev, dq, dq, l.rope(s, l.Heads, true))
		tensor.RoPE(dev, dk, dk, l.rope(s, l.KVHeads, true))
	}
	return reshapeOwned(l.projectBackward(p, c, dq, dk, dv, child), tensor.Shape{m, s, l.Hidden})
}

// projectBackward returns the rows' gradient from dq, dk and dv, which
// it releases: through the fused projection after concatenating them, or
// through each projection, summed.
func (l *Attention) projectBackward(p *Pass, c *attentionContext, dq, dk, dv *tensor.Tensor, child childBackward) *tensor.Tensor {
	parts := []*tensor.Tensor{dq, dk, dv}
	defer func() {
		for _, t := range parts {
			t.Release()
		}
	}()
	if l.QKV != nil {
		n := dq.Dim(0) * dq.Dim(1)
		dqkv := p.Dev.Alloc(tensor.Activations, n, (l.Heads+2*l.KVHeads)*l.HeadDim)
		moveChannels(p.Dev, dqkv, parts, true)
		dx := child(l.QKV, c.qkv, dqkv)
		c.qkv = nil
		dqkv.Release()
		return dx
	}
	var dx *tensor.Tensor
	for i, pr := range []struct {
		l   *Linear
		ctx *Context
	}{{l.Q, &c.q}, {l.K, &c.k}, {l.V, &c.v}} {
		t := parts[i]
		rows := t.Reshape(t.Dim(0)*t.Dim(1), t.Len()/(t.Dim(0)*t.Dim(1)))
		d := child(pr.l, *pr.ctx, rows)
		*pr.ctx = nil
		rows.Release()
		if i == 0 {
			dx = d
			continue
		}
		dx = addOwned(p.Dev, dx, d)
		d.Release()
	}
	return dx
}

// Params returns nil: the parameters are the projections'.
func (l *Attention) Params() []*Param { return nil }

// Buffers returns nil.
func (l *Attention) Buffers() []*Buffer { return nil }

// Children returns the projections and dropouts under Hugging Face's
// names, in its modules' order.
func (l *Attention) Children() []Child {
	if l.QKV != nil {
		return []Child{{"c_attn", l.QKV}, {"c_proj", l.Out}, {"attn_dropout", l.AttnDrop}, {"resid_dropout", l.ResidDrop}}
	}
	return []Child{{"q_proj", l.Q}, {"k_proj", l.K}, {"v_proj", l.V}, {"o_proj", l.Out}}
}

// moveChannels splits the rows of whole [N, ΣF] into parts [m, S, h, d]
// (N = m·S, F = h·d), consecutive column ranges in order, or, with
// concat, concatenates the parts into whole: the channel kernels on
// views of them as [N, F, 1, 1].
func moveChannels(dev tensor.Device, whole *tensor.Tensor, parts []*tensor.Tensor, concat bool) {
	n := whole.Dim(0)
	w := whole.Reshape(n, whole.Len()/n, 1, 1)
	views := make([]*tensor.Tensor, len(parts))
	for i, t := range parts {
		views[i] = t.Reshape(n, t.Len()/n, 1, 1)
	}
	if concat {
		dev.ConcatChannels(w, views)
	} else {
		dev.SplitChannels(w, views)
	}
	w.Release()
	for _, v := range views {
		v.Release()
	}
}

// release releases each tensor and clears its variable.
func release(ts ...**tensor.Tensor) {
	for _, t := range ts {
		(*t).Release()
		*t = nil
	}
}
