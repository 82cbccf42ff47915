package models

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// The blocks of decoder transformers, as Hugging Face's GPT2LMHeadModel
// and LlamaForCausalLM compute them and name their parameters: the input
// (token embedding, and GPT-2's positions and dropout), the decoder
// layers, and the head (final norm and lm_head). A family's code builds
// them from a DecoderConfig and names each decoder layer
// ("transformer.h.0", "model.layers.0"); the input and the head carry
// their full names themselves, being one each.

// DecoderLayer is a pre-norm decoder layer,
//
//	h = x + Attn(Norm1(x))
//	y = h + MLP(Norm2(h)),
//
// GPT-2's GPT2Block (ln_1, attn, ln_2, mlp) and Llama's
// LlamaDecoderLayer (input_layernorm, self_attn,
// post_attention_layernorm, mlp). It runs as two residual blocks
// (Residual, with main path Norm then the sublayer and the identity
// shortcut) and splits its backward as they do. Children lists the four
// parts in Hugging Face's module order, which for Llama puts the norms
// last (NormsLast), so that state_dict order is the transformers
// library's.
type DecoderLayer struct {
	Norm1, Attn, Norm2, MLP Child
	// NormsLast lists the norms after the attention and the MLP.
	NormsLast bool
	blocks    *Sequential
}

// NewDecoderLayer returns the pre-norm layer of the four parts.
func NewDecoderLayer(norm1, attn, norm2, mlp Child, normsLast bool) *DecoderLayer {
	for _, c := range []Child{norm1, attn, norm2, mlp} {
		if c.Layer == nil || c.Name == "" {
			panic(fmt.Sprintf("models: decoder layer part %q without a layer or a name", c.Name))
		}
	}
	half := func(norm, sub Child) Child {
		return Child{Layer: NewResidual(Child{Layer: NewSequential(norm, sub)}, Child{}, nil)}
	}
	return &DecoderLayer{
		Norm1: norm1, Attn: attn, Norm2: norm2, MLP: mlp, NormsLast: normsLast,
		blocks: NewSequential(half(norm1, attn), half(norm2, mlp)),
	}
}

// NewGPT2DecoderLayer returns GPT-2's GPT2Block sized by cfg: ln_1,
// attn, ln_2, mlp.
func NewGPT2DecoderLayer(b *Builder, cfg DecoderConfig) *DecoderLayer {
	cfg.mustCheck()
	return NewDecoderLayer(
		Child{"ln_1", NewLayerNorm(b.Dev, cfg.Hidden, cfg.Eps)},
		Child{"attn", NewGPT2Attention(b, cfg)},
		Child{"ln_2", NewLayerNorm(b.Dev, cfg.Hidden, cfg.Eps)},
		Child{"mlp", NewGPT2MLP(b, cfg)},
		false)
}

// NewLlamaDecoderLayer returns Llama's LlamaDecoderLayer sized by cfg:
// self_attn, mlp, input_layernorm, post_attention_layernorm.
func NewLlamaDecoderLayer(b *Builder, cfg DecoderConfig) *DecoderLayer {
	cfg.mustCheck()
	return NewDecoderLayer(
		Child{"input_layernorm", NewRMSNorm(b.Dev, cfg.Hidden, cfg.Eps)},
		Child{"self_attn", NewLlamaAttention(b, cfg)},
		Child{"post_attention_layernorm", NewRMSNorm(b.Dev, cfg.Hidden, cfg.Eps)},
		Child{"mlp", NewLlamaMLP(b, cfg)},
		true)
}

// NewGPT2MLP returns GPT-2's GPT2MLP sized by cfg: c_fc (Hidden →
// Intermediate), act (gelu_new), c_proj (back to Hidden), dropout
// (resid_pdrop). A training forward keeps, besides its input, c_fc's
// output and the activation's: 2·N·Intermediate float32 values for N
// tokens.
func NewGPT2MLP(b *Builder, cfg DecoderConfig) *Sequential {
	cfg.mustCheck()
	return NewSequential(
		Child{"c_fc", NewPerToken(decoderLinear(b, cfg.Hidden, cfg.Intermediate, cfg.Bias, cfg.InitStd))},
		Child{"act", NewGELUTanh()},
		Child{"c_proj", NewPerToken(decoderLinear(b, cfg.Intermediate, cfg.Hidden, cfg.Bias, gpt2ProjStd(cfg)))},
		Child{"dropout", b.Dropout(cfg.ResidDropout)},
	)
}

// OutShape returns in for x [m, S, D].
func (l *DecoderLayer) OutShape(in tensor.Shape) (tensor.Shape, error) {
	out, err := l.blocks.OutShape(in)
	if err != nil {
		return nil, fmt.Errorf("decoder layer: %w", err)
	}
	return out, nil
}

// Forward runs the two residual blocks.
func (l *DecoderLayer) Forward(p *Pass, x *tensor.Tensor) (*tensor.Tensor, Context) {
	mustOutShape("decoder layer", l, x)
	return l.blocks.Forward(p, x)
}

// Backward runs the two residual blocks' backwards.
func (l *DecoderLayer) Backward(p *Pass, ctx Context, dy *tensor.Tensor) *tensor.Tensor {
	return l.blocks.Backward(p, ctx, dy)
}

// backwardInput is the residual blocks' split backward.
func (l *DecoderLayer) backwardInput(p *Pass, ctx Context, dy *tensor.Tensor) (*tensor.Tensor, WeightGrad) {
	return l.blocks.backwardInput(p, ctx, dy)
}

// Params returns nil: the parameters are the parts'.
func (l *DecoderLayer) Params() []*Param { return nil }

// Buffers returns nil.
func (l *DecoderLayer) Buffers() []*Buffer { return nil }

// Children returns the four parts in Hugging Face's module order.
func (l *DecoderLayer) Children() []Child {
	if l.NormsLast {
		return []Child{l.Attn, l.MLP, l.Norm1, l.Norm2}
	}
	return []Child{l.Norm1, l.Attn, l.Norm2, l.MLP}
}

// NewTokenEmbedding returns the token embedding sized by cfg, [Vocab,
// Hidden], drawn from N(0, InitStd²) as both families' _init_weights
// draw it: GPT-2's wte, Llama's embed_tokens.
func NewTokenEmbedding(b *Builder, cfg DecoderConfig) *Embedding {
	cfg.mustCheck()
	l := NewEmbedding(b.Dev, cfg.Vocab, cfg.Hidden, nil)
	b.initNormal(l.Weight, cfg.InitStd)
	return l
}

// NewGPT2Input returns GPT-2's input block: transformer.wte (the token
// embedding wte, which GPT2Head may share), transformer.wpe (cfg's
// Positions, drawn from N(0, InitStd²)) and transformer.drop
// (embd_pdrop). It takes ids [m, S] to [m, S, Hidden].
func NewGPT2Input(b *Builder, cfg DecoderConfig, wte *Embedding) *Sequential {
	cfg.mustCheck()
	if cfg.Positions < 1 || wte.Dim != cfg.Hidden {
		panic(fmt.Sprintf("models: gpt2 input with %d positions and a token embedding of %d for hidden size %d", cfg.Positions, wte.Dim, cfg.Hidden))
	}
	wpe := NewPositionEmbedding(b.Dev, cfg.Positions, cfg.Hidden, nil)
	b.initNormal(wpe.Weight, cfg.InitStd)
	return NewSequential(
		Child{"transformer.wte", wte},
		Child{"transformer.wpe", wpe},
		Child{"transformer.drop", b.Dropout(cfg.EmbdDropout)},
	)
}

// NewLlamaInput returns Llama's input block: model.embed_tokens.
func NewLlamaInput(embed *Embedding) *Sequential {
	return NewSequential(Child{"model.embed_tokens", embed})
}

// NewGPT2Head returns GPT-2's head: transformer.ln_f, then lm_head
// (Hidden → Vocab, no bias) on every token, [m, S, Hidden] → logits [m,
// S, Vocab]. With tied (wte's weight, on the same device) lm_head uses
// that parameter, and the two uses' gradients sum in its one Grad;
// without, it has a weight of its own drawn from N(0, InitStd²).
func NewGPT2Head(b *Builder, cfg DecoderConfig, tied *Param) *Sequential {
	cfg.mustCheck()
	return NewSequential(
		Child{"transformer.ln_f", NewLayerNorm(b.Dev, cfg.Hidden, cfg.Eps)},
		Child{"lm_head", NewPerToken(lmHead(b, cfg, tied))},
	)
}

// NewLlamaHead returns Llama's head: model.norm, then lm_head, tied or
// not as NewGPT2Head's.
func NewLlamaHead(b *Builder, cfg DecoderConfig, tied *Param) *Sequential {
	cfg.mustCheck()
	return NewSequential(
		Child{"model.norm", NewRMSNorm(b.Dev, cfg.Hidden, cfg.Eps)},
		Child{"lm_head", NewPerToken(lmHead(b, cfg, tied))},
	)
}

// lmHead returns the projection to the vocabulary, with weight tied when
// it is given.
func lmHead(b *Builder, cfg DecoderConfig, tied *Param) *Linear {
	if tied == nil {
		return decoderLinear(b, cfg.Hidden, cfg.Vocab, false, cfg.InitStd)
	}
	if want := (tensor.Shape{cfg.Vocab, cfg.Hidden}); !tied.Value.Shape().Equal(want) {
		panic(fmt.Sprintf("models: lm_head tied to a weight %v, want %v", tied.Value.Shape(), want))
	}
	return &Linear{In: cfg.Hidden, Out: cfg.Vocab, Weight: tied}
}
