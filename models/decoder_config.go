package models

import (
	"fmt"
	"math"
)

// DecoderConfig sizes the layers of a decoder transformer, GPT-2 or
// Llama-style: the one place a family's config.json lands before its
// layers are built (the keys each field takes are named beside it). The
// layer constructors (NewGPT2DecoderLayer, NewLlamaDecoderLayer, …) read
// it; Check says what is wrong with one.
type DecoderConfig struct {
	// Vocab is the vocabulary size V (vocab_size).
	Vocab int
	// Positions is the rows of GPT-2's learned position table
	// (n_positions, 1024): the longest sequence it takes. 0 in a model
	// with rotary positions.
	Positions int
	// Layers is the number of decoder layers (n_layer,
	// num_hidden_layers). The layers do not need it; GPT-2's
	// initialisation scales c_proj's weights by 1/√(2·Layers).
	Layers int
	// Hidden is the width D of the residual stream (n_embd,
	// hidden_size).
	Hidden int
	// Heads are the query heads (n_head, num_attention_heads), KVHeads
	// the key/value heads (num_key_value_heads; Heads for multi-head
	// attention), a divisor of Heads.
	Heads, KVHeads int
	// HeadDim is each head's width, Hidden/Heads in both families; even
	// where RoPE rotates its halves.
	HeadDim int
	// Intermediate is the MLP's hidden width (GPT-2's n_inner, 4·Hidden
	// by default; intermediate_size).
	Intermediate int
	// Eps is the normalisations' ε (layer_norm_epsilon, rms_norm_eps).
	Eps float32
	// RopeTheta is the base of the rotary position embedding
	// (rope_theta); 0 for none (GPT-2).
	RopeTheta float64
	// EmbdDropout, AttnDropout and ResidDropout are GPT-2's embd_pdrop
	// (after the embeddings' sum), attn_pdrop (on the attention
	// probabilities) and resid_pdrop (after each c_proj, attention's and
	// the MLP's). Llama has none.
	EmbdDropout, AttnDropout, ResidDropout float32
	// Bias gives the projections biases: GPT-2's Conv1Ds have them,
	// Llama's (attention_bias, mlp_bias false) do not.
	Bias bool
	// InitStd is the standard deviation of the weights' normal
	// initialisation (initializer_range, 0.02 in both families).
	InitStd float64
}

// Check says why c cannot size a decoder's layers, or returns nil.
func (c DecoderConfig) Check() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"vocabulary", c.Vocab}, {"hidden size", c.Hidden}, {"heads", c.Heads}, {"key/value heads", c.KVHeads},
		{"head width", c.HeadDim}, {"intermediate size", c.Intermediate}} {
		if f.v < 1 {
			return fmt.Errorf("decoder: %s %d: need at least 1", f.name, f.v)
		}
	}
	switch {
	case c.Positions < 0 || c.Layers < 0:
		return fmt.Errorf("decoder: %d positions, %d layers: negative", c.Positions, c.Layers)
	case c.Heads%c.KVHeads != 0:
		return fmt.Errorf("decoder: %d key/value heads do not divide %d heads", c.KVHeads, c.Heads)
	case !(c.Eps > 0):
		return fmt.Errorf("decoder: normalisation eps %v: need a positive one", c.Eps)
	case c.RopeTheta < 0 || math.IsNaN(c.RopeTheta) || math.IsInf(c.RopeTheta, 0):
		return fmt.Errorf("decoder: rope theta %v: need a finite, positive one (0 for none)", c.RopeTheta)
	case c.RopeTheta > 0 && c.HeadDim%2 != 0:
		return fmt.Errorf("decoder: head width %d: rotary positions rotate two halves, so it must be even", c.HeadDim)
	case c.InitStd < 0:
		return fmt.Errorf("decoder: initialisation std %v: negative", c.InitStd)
	}
	for _, d := range []struct {
		name string
		p    float32
	}{{"embd_pdrop", c.EmbdDropout}, {"attn_pdrop", c.AttnDropout}, {"resid_pdrop", c.ResidDropout}} {
		if !(d.p >= 0 && d.p < 1) {
			return fmt.Errorf("decoder: %s %v outside [0, 1)", d.name, d.p)
		}
	}
	return nil
}

// mustCheck panics unless c is valid: building layers from an unchecked
// configuration is a programming error.
func (c DecoderConfig) mustCheck() {
	if err := c.Check(); err != nil {
		panic("models: " + err.Error())
	}
}

// initNormal draws p's value from N(0, std²), or leaves it for a
// shape-only build (no generator).
func (b *Builder) initNormal(p *Param, std float64) {
	if p != nil {
		Normal(b.Dev, p.Value, 0, std, b.Rng)
	}
}

// decoderLinear returns a projection in→out with the configured bias,
// initialised as both families' _init_weights: weight N(0, std²), bias 0.
func decoderLinear(b *Builder, in, out int, bias bool, std float64) *Linear {
	l := NewLinear(b.Dev, in, out, bias, nil)
	if b.Rng != nil {
		b.initNormal(l.Weight, std)
		if l.Bias != nil {
			Constant(b.Dev, l.Bias.Value, 0)
		}
	}
	return l
}
