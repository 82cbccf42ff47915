package models

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/meta"
)

// smallGPT2 and smallLlama size the decoder layers of this file's tests:
// GPT-2 width 8, 2 heads of 4, MLP 32, 7 positions, 11 tokens, dropouts
// on unless off; Llama width 16, 4 heads of 4 sharing 2 key/value heads,
// MLP 24, 13 tokens.
func smallGPT2(dropout bool) DecoderConfig {
	c := DecoderConfig{Vocab: 11, Positions: 7, Layers: 2, Hidden: 8, Heads: 2, KVHeads: 2, HeadDim: 4,
		Intermediate: 32, Eps: 1e-5, Bias: true, InitStd: 0.02}
	if dropout {
		c.EmbdDropout, c.AttnDropout, c.ResidDropout = 0.1, 0.3, 0.2
	}
	return c
}

func smallLlama() DecoderConfig {
	return DecoderConfig{Vocab: 13, Layers: 2, Hidden: 16, Heads: 4, KVHeads: 2, HeadDim: 4,
		Intermediate: 24, Eps: 1e-6, RopeTheta: 10000, InitStd: 0.02}
}

// decoderBuild adapts a constructor of the decoder layers to a
// splitCase's build.
func decoderBuild(f func(b *Builder) Layer) func(tensor.Device, *rand.Rand) Layer {
	return func(dev tensor.Device, rng *rand.Rand) Layer { return f(&Builder{Dev: dev, Rng: rng}) }
}

// decoderSplitCases are the decoder transformers' layers at sequence
// length 5, batch 2, in training mode with dropout on.
func decoderSplitCases() []splitCase {
	train := Pass{Train: true, Seed: 7, Step: 2}
	g, l := smallGPT2(true), smallLlama()
	x, xl, ids := tensor.Shape{2, 5, 8}, tensor.Shape{2, 5, 16}, tensor.Shape{2, 5}
	c := func(in tensor.Shape, vocab int, f func(b *Builder) Layer) splitCase {
		return splitCase{build: decoderBuild(f), in: in, pass: train, randomize: true, vocab: vocab}
	}
	return sortedCases(map[string]splitCase{
		"embedding":          c(ids, 11, func(b *Builder) Layer { return NewEmbedding(b.Dev, 11, 8, b.Rng) }),
		"position embedding": c(x, 0, func(b *Builder) Layer { return NewPositionEmbedding(b.Dev, 7, 8, b.Rng) }),
		"gpt2 input":         c(ids, 11, func(b *Builder) Layer { return NewGPT2Input(b, g, NewTokenEmbedding(b, g)) }),
		"layer norm":         c(x, 0, func(b *Builder) Layer { return NewLayerNorm(b.Dev, 8, 1e-5) }),
		"rms norm":           c(x, 0, func(b *Builder) Layer { return NewRMSNorm(b.Dev, 8, 1e-6) }),
		"gelu":               c(x, 0, func(*Builder) Layer { return NewGELUTanh() }),
		"per-token linear":   c(x, 0, func(b *Builder) Layer { return NewPerToken(NewLinear(b.Dev, 8, 5, true, b.Rng)) }),
		"gpt2 attention":     c(x, 0, func(b *Builder) Layer { return NewGPT2Attention(b, g) }),
		"llama attention":    c(xl, 0, func(b *Builder) Layer { return NewLlamaAttention(b, l) }),
		"gpt2 mlp":           c(x, 0, func(b *Builder) Layer { return NewGPT2MLP(b, g) }),
		"llama mlp":          c(xl, 0, func(b *Builder) Layer { return NewLlamaMLP(b, l) }),
		"gpt2 decoder layer": c(x, 0, func(b *Builder) Layer { return NewGPT2DecoderLayer(b, g) }),
		"llama layer":        c(xl, 0, func(b *Builder) Layer { return NewLlamaDecoderLayer(b, l) }),
		"gpt2 head":          c(x, 0, func(b *Builder) Layer { return NewGPT2Head(b, g, nil) }),
		"llama head":         c(xl, 0, func(b *Builder) Layer { return NewLlamaHead(b, l, nil) }),
		"gpt2 input and tied head": c(ids, 11, func(b *Builder) Layer {
			wte := NewTokenEmbedding(b, g)
			return Seq(NewGPT2Input(b, g, wte), NewGPT2Head(b, g, wte.Weight))
		}),
	})
}

// TestSplitBackwardDecoder checks BackwardInput and Run against Backward
// for the decoder transformers' layers: the embeddings, projections and
// lm_head defer their weight gradients; the norms keep theirs in B.
func TestSplitBackwardDecoder(t *testing.T) {
	runSplitCases(t, decoderSplitCases())
}

// TestTiedHeadGradientsSum checks that lm_head tied to wte accumulates
// both uses into the one gradient: the tied model's gradient equals the
// sum of the gradients of an untied copy's embedding and head, which
// hold the same values.
func TestTiedHeadGradientsSum(t *testing.T) {
	dev := newDevice(t)
	cfg := smallGPT2(true)
	build := func(tie bool) (net *Sequential, wte, head *Param) {
		b := &Builder{Dev: dev, Rng: newRand(5)}
		emb := NewTokenEmbedding(b, cfg)
		in := NewGPT2Input(b, cfg, emb) // before the head, which draws only when untied
		var tied *Param
		if tie {
			tied = emb.Weight
		}
		h := NewGPT2Head(b, cfg, tied)
		lm := h.Layers[1].Layer.(*PerToken).Layer.(*Linear)
		if !tie {
			dev.Copy(lm.Weight.Value, emb.Weight.Value)
		}
		return Seq(in, h), emb.Weight, lm.Weight
	}
	tied, wte, lm := build(true)
	if wte != lm {
		t.Fatal("the tied head has a weight of its own")
	}
	untied, wte2, lm2 := build(false)
	defer ReleaseLayer(tied)
	defer ReleaseLayer(untied)

	rng := newRand(6)
	ids := splitCase{in: tensor.Shape{2, 5}, vocab: cfg.Vocab}.input(dev, rng)
	defer ids.Release()
	dy, _ := uploadRand(dev, tensor.Boundary, rng, 2, 5, cfg.Vocab)
	defer dy.Release()
	p := Pass{Dev: dev, Train: true, Grad: true, Seed: 1}
	for _, net := range []Layer{tied, untied} {
		y, ctx := net.Forward(&p, ids)
		y.Release()
		if dx := net.Backward(&p, ctx, dy); dx != nil {
			t.Errorf("token ids got a gradient %v", dx.Shape())
			dx.Release()
		}
	}
	sum := dev.Alloc(tensor.Gradients, cfg.Vocab, cfg.Hidden)
	defer sum.Release()
	dev.Add(sum, wte2.Grad, lm2.Grad)
	// Tolerance: the two sums of the same float32 terms differ in the
	// order they are added, a few ulps of the largest.
	compare(t, "tied gradient", host(wte.Grad), host(sum), 1e-5, 1e-6)
	if maxAbs(host(wte2.Grad)) == 0 || maxAbs(host(lm2.Grad)) == 0 {
		t.Error("a use's gradient is zero: the test proves nothing")
	}
}

// TestDecoderStateDictNames checks the Hugging Face names, in the
// transformers library's module order, of each block.
func TestDecoderStateDictNames(t *testing.T) {
	dev := meta.New()
	b := &Builder{Dev: dev}
	g, l := smallGPT2(true), smallLlama()
	wte := NewTokenEmbedding(b, g)
	tests := []struct {
		name  string
		layer Layer
		want  []string
	}{
		{"gpt2 input", NewGPT2Input(b, g, wte), []string{"transformer.wte.weight [11 8]", "transformer.wpe.weight [7 8]"}},
		{"gpt2 layer", NewSequential(Child{"transformer.h.0", NewGPT2DecoderLayer(b, g)}), []string{
			"transformer.h.0.ln_1.weight [8]", "transformer.h.0.ln_1.bias [8]",
			// nn.Linear's [out, in], where GPT-2's Conv1D stores [in, out].
			"transformer.h.0.attn.c_attn.weight [24 8]", "transformer.h.0.attn.c_attn.bias [24]",
			"transformer.h.0.attn.c_proj.weight [8 8]", "transformer.h.0.attn.c_proj.bias [8]",
			"transformer.h.0.ln_2.weight [8]", "transformer.h.0.ln_2.bias [8]",
			"transformer.h.0.mlp.c_fc.weight [32 8]", "transformer.h.0.mlp.c_fc.bias [32]",
			"transformer.h.0.mlp.c_proj.weight [8 32]", "transformer.h.0.mlp.c_proj.bias [8]",
		}},
		{"gpt2 tied head", NewGPT2Head(b, g, wte.Weight), []string{
			"transformer.ln_f.weight [8]", "transformer.ln_f.bias [8]", "lm_head.weight [11 8]"}},
		{"llama input", NewLlamaInput(NewTokenEmbedding(b, l)), []string{"model.embed_tokens.weight [13 16]"}},
		{"llama layer", NewSequential(Child{"model.layers.3", NewLlamaDecoderLayer(b, l)}), []string{
			"model.layers.3.self_attn.q_proj.weight [16 16]", "model.layers.3.self_attn.k_proj.weight [8 16]",
			"model.layers.3.self_attn.v_proj.weight [8 16]", "model.layers.3.self_attn.o_proj.weight [16 16]",
			"model.layers.3.mlp.gate_proj.weight [24 16]", "model.layers.3.mlp.up_proj.weight [24 16]",
			"model.layers.3.mlp.down_proj.weight [16 24]",
			"model.layers.3.input_layernorm.weight [16]", "model.layers.3.post_attention_layernorm.weight [16]",
		}},
		{"llama head", NewLlamaHead(b, l, nil), []string{"model.norm.weight [16]", "lm_head.weight [13 16]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range StateDict(tc.layer) {
				got = append(got, e.Name+" "+e.Shape.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestDecoderOutShapeErrors checks that each layer refuses an input it
// cannot take, saying why.
func TestDecoderOutShapeErrors(t *testing.T) {
	dev := meta.New()
	b := &Builder{Dev: dev}
	g, l := smallGPT2(false), smallLlama()
	tests := []struct {
		name  string
		layer Layer
		in    tensor.Shape
		want  string
	}{
		{"embedding of embeddings", NewEmbedding(dev, 11, 8, nil), tensor.Shape{2, 5, 8}, "is not token ids [m, S]"},
		{"positions beyond the table", NewPositionEmbedding(dev, 7, 8, nil), tensor.Shape{2, 8, 8}, "longer than the 7 positions"},
		{"positions of another width", NewPositionEmbedding(dev, 7, 8, nil), tensor.Shape{2, 5, 6}, "is not [m, S, 8]"},
		{"layer norm of another width", NewLayerNorm(dev, 8, 1e-5), tensor.Shape{2, 5, 6}, "is not [..., 8] rows"},
		{"rms norm of a vector", NewRMSNorm(dev, 8, 1e-5), tensor.Shape{8}, "is not [..., 8] rows"},
		{"attention of rows", NewGPT2Attention(b, g), tensor.Shape{10, 8}, "is not [m, S, 8]"},
		{"llama attention of another width", NewLlamaAttention(b, l), tensor.Shape{2, 5, 8}, "is not [m, S, 16]"},
		{"gated mlp of another width", NewLlamaMLP(b, l), tensor.Shape{2, 5, 8}, "is not [m, S, 16]"},
		{"per-token linear of another width", NewPerToken(NewLinear(dev, 8, 3, false, nil)), tensor.Shape{2, 5, 6}, "per token: linear 8→3"},
		{"decoder layer of another width", NewGPT2DecoderLayer(b, g), tensor.Shape{2, 5, 6}, "decoder layer: "},
		{"gpt2 input of too many tokens", NewGPT2Input(b, g, NewTokenEmbedding(b, g)), tensor.Shape{2, 9}, "longer than the 7 positions"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.layer.OutShape(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("OutShape(%v): got %v, want an error mentioning %q", tc.in, err, tc.want)
			}
		})
	}
}

// TestDecoderConfigCheck checks that Check refuses each inconsistent
// size.
func TestDecoderConfigCheck(t *testing.T) {
	if err := smallGPT2(true).Check(); err != nil {
		t.Errorf("gpt2: %v", err)
	}
	if err := smallLlama().Check(); err != nil {
		t.Errorf("llama: %v", err)
	}
	tests := []struct {
		name   string
		change func(*DecoderConfig)
		want   string
	}{
		{"no vocabulary", func(c *DecoderConfig) { c.Vocab = 0 }, "vocabulary 0"},
		{"kv heads not dividing", func(c *DecoderConfig) { c.KVHeads = 3 }, "do not divide"},
		{"odd head width under rope", func(c *DecoderConfig) { c.HeadDim = 5 }, "must be even"},
		{"zero eps", func(c *DecoderConfig) { c.Eps = 0 }, "eps 0"},
		{"negative theta", func(c *DecoderConfig) { c.RopeTheta = -1 }, "rope theta -1"},
		{"dropout of one", func(c *DecoderConfig) { c.AttnDropout = 1 }, "attn_pdrop 1 outside"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := smallLlama()
			tc.change(&c)
			if err := c.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// TestDecoderDropoutIDs checks that every dropout of a decoder has a
// mask key of its own.
func TestDecoderDropoutIDs(t *testing.T) {
	b := &Builder{Dev: meta.New()}
	g := smallGPT2(true)
	net := Seq(NewGPT2Input(b, g, NewTokenEmbedding(b, g)), NewGPT2DecoderLayer(b, g), NewGPT2DecoderLayer(b, g))
	seen := map[uint64]string{}
	Walk(net, func(path string, l Layer) {
		d, ok := l.(*Dropout)
		if !ok {
			return
		}
		if other, dup := seen[d.ID]; dup {
			t.Errorf("%s and %s share dropout id %d", other, path, d.ID)
		}
		seen[d.ID] = path
	})
	if len(seen) != 1+2*3 { // drop; attn_dropout, resid_dropout, mlp.dropout per layer
		t.Errorf("%d dropouts, want 7", len(seen))
	}
}

// TestDecoderDropoutPerSample checks that a decoder layer drops the same
// units of a sample however the batch is split (Pass.Sample numbering
// the samples): a batch of two equals its two halves run apart.
func TestDecoderDropoutPerSample(t *testing.T) {
	dev := newDevice(t)
	l := NewGPT2DecoderLayer(&Builder{Dev: dev, Rng: newRand(8)}, smallGPT2(true))
	defer ReleaseLayer(l)
	x, _ := uploadRand(dev, tensor.Boundary, newRand(9), 2, 5, 8)
	defer x.Release()
	p := Pass{Dev: dev, Train: true, Seed: 4, Step: 6, Sample: 10}
	whole, _ := l.Forward(&p, x)
	defer whole.Release()
	for i := range 2 {
		half := x.Slice(i, i+1)
		q := p
		q.Sample = p.Sample + i
		y, _ := l.Forward(&q, half)
		want := whole.Slice(i, i+1)
		// Tolerance: the halves' products may round apart from the
		// whole's, by an ulp or so of the largest output.
		compare(t, fmt.Sprintf("half %d", i), host(y), host(want), 1e-6, 1e-6)
		y.Release()
		want.Release()
		half.Release()
	}
}
