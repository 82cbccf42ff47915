package models

import (
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/meta"
)

// The float32 values a training forward of each decoder layer keeps for
// its backward beyond its input and output, as the layers' comments
// document them, for m sequences of s tokens.

// attentionSaved is Attention's: q, k, v; the probabilities and, with
// attention dropout on, their dropped copy; the heads' context.
func attentionSaved(c DecoderConfig, m, s int, dropped bool) int {
	n := m * s
	probs := m * c.Heads * s * s
	if dropped {
		probs *= 2
	}
	return n*(c.Heads+2*c.KVHeads)*c.HeadDim + probs + n*c.Heads*c.HeadDim
}

// decoderLayerSaved is DecoderLayer's: each norm's statistics (stats
// values a token: 2 for LayerNorm's mean and rstd, 1 for RMSNorm's
// rstd) and output, the residual sum h between the halves, and the
// attention's and MLP's own.
func decoderLayerSaved(c DecoderConfig, m, s, stats, attn, mlp int) int {
	n := m * s
	return 2*stats*n + 3*n*c.Hidden + attn + mlp
}

// TestDecoderMetaMemory runs each layer's training forward and backward
// on the meta backend and checks the activations its context holds
// against the documented sizes, and that the backward frees them all.
func TestDecoderMetaMemory(t *testing.T) {
	const m, s = 2, 5
	n := m * s
	g, gOff, l := smallGPT2(true), smallGPT2(false), smallLlama()
	train := Pass{Train: true, Seed: 3}
	attnG := attentionSaved(g, m, s, true)
	attnL := attentionSaved(l, m, s, false)
	tests := []struct {
		name  string
		build func(b *Builder) Layer
		in    tensor.Shape
		pass  Pass
		saved int
	}{
		{"embedding", func(b *Builder) Layer { return NewEmbedding(b.Dev, 11, 8, nil) }, tensor.Shape{m, s}, train, 0},
		{"position embedding", func(b *Builder) Layer { return NewPositionEmbedding(b.Dev, 7, 8, nil) }, tensor.Shape{m, s, 8}, train, 0},
		{"gpt2 input", func(b *Builder) Layer { return NewGPT2Input(b, g, NewTokenEmbedding(b, g)) }, tensor.Shape{m, s}, train, 0},
		{"layer norm", func(b *Builder) Layer { return NewLayerNorm(b.Dev, 8, 1e-5) }, tensor.Shape{m, s, 8}, train, 2 * n},
		{"rms norm", func(b *Builder) Layer { return NewRMSNorm(b.Dev, 8, 1e-5) }, tensor.Shape{m, s, 8}, train, n},
		{"gpt2 attention, dropout on", func(b *Builder) Layer { return NewGPT2Attention(b, g) }, tensor.Shape{m, s, 8}, train, attnG},
		{"gpt2 attention, dropout off", func(b *Builder) Layer { return NewGPT2Attention(b, gOff) }, tensor.Shape{m, s, 8}, train,
			attentionSaved(gOff, m, s, false)},
		{"gpt2 attention, eval", func(b *Builder) Layer { return NewGPT2Attention(b, g) }, tensor.Shape{m, s, 8}, Pass{},
			attentionSaved(g, m, s, false)},
		{"llama attention", func(b *Builder) Layer { return NewLlamaAttention(b, l) }, tensor.Shape{m, s, 16}, train, attnL},
		{"gpt2 mlp", func(b *Builder) Layer { return NewGPT2MLP(b, g) }, tensor.Shape{m, s, 8}, train, 2 * n * g.Intermediate},
		{"llama mlp", func(b *Builder) Layer { return NewLlamaMLP(b, l) }, tensor.Shape{m, s, 16}, train, 3 * n * l.Intermediate},
		{"gpt2 decoder layer", func(b *Builder) Layer { return NewGPT2DecoderLayer(b, g) }, tensor.Shape{m, s, 8}, train,
			decoderLayerSaved(g, m, s, 2, attnG, 2*n*g.Intermediate)},
		{"llama decoder layer", func(b *Builder) Layer { return NewLlamaDecoderLayer(b, l) }, tensor.Shape{m, s, 16}, train,
			decoderLayerSaved(l, m, s, 1, attnL, 3*n*l.Intermediate)},
		// ln_f's statistics and output, lm_head's input.
		{"gpt2 head", func(b *Builder) Layer { return NewGPT2Head(b, g, nil) }, tensor.Shape{m, s, 8}, train, 2*n + n*g.Hidden},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dev := meta.New()
			layer := tc.build(&Builder{Dev: dev})
			defer ReleaseLayer(layer)
			p := tc.pass
			p.Dev, p.Grad = dev, true
			x := dev.Alloc(tensor.Boundary, tc.in...)
			defer x.Release()
			y, ctx := layer.Forward(&p, x)
			want := int64(tc.saved)*tensor.BytesPerElement + y.Bytes()
			checkLive(t, dev, "activations after the forward (saved and y)", tensor.Activations, want)
			dy := dev.Alloc(tensor.Boundary, y.Shape()...)
			defer dy.Release()
			y.Release()
			dx := layer.Backward(&p, ctx, dy)
			if dx != nil && !dx.Shape().Equal(tc.in) {
				t.Errorf("dx %v, want %v", dx.Shape(), tc.in)
			}
			dx.Release()
			checkLive(t, dev, "activations after the backward", tensor.Activations, 0)
		})
	}
}
