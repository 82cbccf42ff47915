package models_test

import (
	"fmt"
	"testing"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/models/modeltest"
	"github.com/pipecast/pipecast/tensor"
)

// decoderTestConfig is a small decoder: width 8, 2 heads of 4, 4·8 in
// the MLP, 7 positions, 11 tokens, and dropouts that are on unless off.
func decoderTestConfig(dropout bool) models.DecoderConfig {
	c := models.DecoderConfig{Vocab: 11, Positions: 7, Layers: 2, Hidden: 8, Heads: 2, KVHeads: 2, HeadDim: 4,
		Intermediate: 32, Eps: 1e-5, Bias: true, InitStd: 0.02}
	if dropout {
		c.EmbdDropout, c.AttnDropout, c.ResidDropout = 0.1, 0.3, 0.2
	}
	return c
}

// llamaTestConfig is a small Llama: width 16, 4 query heads of 4 sharing
// kv key/value heads, MLP width 24, no biases, rotary base theta.
func llamaTestConfig(kv int, theta float64) models.DecoderConfig {
	return models.DecoderConfig{Vocab: 13, Layers: 2, Hidden: 16, Heads: 4, KVHeads: kv, HeadDim: 4,
		Intermediate: 24, Eps: 1e-6, RopeTheta: theta, InitStd: 0.02}
}

// decoderCase builds one layer for TestDecoderLayers.
type decoderCase struct {
	name  string
	build func(b *models.Builder) models.Layer
	in    tensor.Shape
	pass  models.Pass
	// vocab > 0: the input is token ids below it.
	vocab int
	// leaf: held to the single-layer tolerances, else to the blocks'.
	leaf bool
}

// TestDecoderLayers checks every layer of the decoder transformers
// against its float64 mirror, forward and backward (modeltest.CheckLayer
// and CheckTokenLayer), at sequence lengths 1 and 5, batch 2, with
// dropout on and off in training mode, and in evaluation mode.
func TestDecoderLayers(t *testing.T) {
	train := models.Pass{Train: true, Seed: 11, Step: 3, Sample: 5}
	eval := models.Pass{}
	gpt2, gpt2Off := decoderTestConfig(true), decoderTestConfig(false)
	gqa, mqa, mha := llamaTestConfig(2, 10000), llamaTestConfig(1, 500), llamaTestConfig(4, 10000)
	var cases []decoderCase
	for _, s := range []int{1, 5} {
		seq := tensor.Shape{2, s}
		x := tensor.Shape{2, s, 8}
		xl := tensor.Shape{2, s, 16}
		for _, c := range []decoderCase{
			{name: "embedding", vocab: 11, in: seq, pass: train, leaf: true, build: func(b *models.Builder) models.Layer {
				return models.NewEmbedding(b.Dev, 11, 8, b.Rng)
			}},
			{name: "position embedding", in: x, pass: train, leaf: true, build: func(b *models.Builder) models.Layer {
				return models.NewPositionEmbedding(b.Dev, 7, 8, b.Rng)
			}},
			{name: "gpt2 input, dropout on", vocab: 11, in: seq, pass: train, build: func(b *models.Builder) models.Layer {
				return models.NewGPT2Input(b, gpt2, models.NewTokenEmbedding(b, gpt2))
			}},
			{name: "gpt2 input, eval", vocab: 11, in: seq, pass: eval, build: func(b *models.Builder) models.Layer {
				return models.NewGPT2Input(b, gpt2, models.NewTokenEmbedding(b, gpt2))
			}},
			{name: "llama input", vocab: 13, in: seq, pass: train, build: func(b *models.Builder) models.Layer {
				return models.NewLlamaInput(models.NewTokenEmbedding(b, mha))
			}},
			{name: "layer norm", in: x, pass: train, leaf: true, build: func(b *models.Builder) models.Layer {
				return models.NewLayerNorm(b.Dev, 8, 1e-5)
			}},
			{name: "rms norm", in: x, pass: train, leaf: true, build: func(b *models.Builder) models.Layer {
				return models.NewRMSNorm(b.Dev, 8, 1e-6)
			}},
			{name: "gelu", in: x, pass: train, leaf: true, build: func(*models.Builder) models.Layer { return models.NewGELUTanh() }},
			{name: "per-token linear", in: x, pass: train, leaf: true, build: func(b *models.Builder) models.Layer {
				return models.NewPerToken(models.NewLinear(b.Dev, 8, 5, true, b.Rng))
			}},
			{name: "gpt2 attention, dropout on", in: x, pass: train, build: func(b *models.Builder) models.Layer { return models.NewGPT2Attention(b, gpt2) }},
			{name: "gpt2 attention, dropout off", in: x, pass: train, build: func(b *models.Builder) models.Layer { return models.NewGPT2Attention(b, gpt2Off) }},
			{name: "gpt2 attention, eval", in: x, pass: eval, build: func(b *models.Builder) models.Layer { return models.NewGPT2Attention(b, gpt2) }},
			{name: "llama attention, 2 kv heads", in: xl, pass: train, build: func(b *models.Builder) models.Layer { return models.NewLlamaAttention(b, gqa) }},
			{name: "llama attention, 1 kv head, theta 500", in: xl, pass: train, build: func(b *models.Builder) models.Layer { return models.NewLlamaAttention(b, mqa) }},
			{name: "llama attention, multi-head", in: xl, pass: train, build: func(b *models.Builder) models.Layer { return models.NewLlamaAttention(b, mha) }},
			{name: "gpt2 mlp, dropout on", in: x, pass: train, build: func(b *models.Builder) models.Layer { return models.NewGPT2MLP(b, gpt2) }},
			{name: "llama mlp", in: xl, pass: train, build: func(b *models.Builder) models.Layer { return models.NewLlamaMLP(b, gqa) }},
			{name: "gpt2 decoder layer, dropout on", in: x, pass: train, build: func(b *models.Builder) models.Layer { return models.NewGPT2DecoderLayer(b, gpt2) }},
			{name: "gpt2 decoder layer, dropout off", in: x, pass: train, build: func(b *models.Builder) models.Layer { return models.NewGPT2DecoderLayer(b, gpt2Off) }},
			{name: "llama decoder layer", in: xl, pass: train, build: func(b *models.Builder) models.Layer { return models.NewLlamaDecoderLayer(b, gqa) }},
			{name: "gpt2 head", in: x, pass: train, build: func(b *models.Builder) models.Layer { return models.NewGPT2Head(b, gpt2, nil) }},
			{name: "llama head", in: xl, pass: train, build: func(b *models.Builder) models.Layer { return models.NewLlamaHead(b, gqa, nil) }},
			// The head's lm_head uses wte's weight: the mirror
			// accumulates both uses into the one gradient.
			{name: "gpt2 input and tied head", vocab: 11, in: seq, pass: train, build: func(b *models.Builder) models.Layer {
				wte := models.NewTokenEmbedding(b, gpt2)
				return models.Seq(models.NewGPT2Input(b, gpt2, wte), models.NewGPT2Head(b, gpt2, wte.Weight))
			}},
			{name: "tiny gpt2", vocab: 11, in: seq, pass: train, build: func(b *models.Builder) models.Layer {
				return tinyDecoder(b, gpt2, models.NewGPT2Input, models.NewGPT2DecoderLayer, models.NewGPT2Head)
			}},
			{name: "tiny llama", vocab: 13, in: seq, pass: train, build: func(b *models.Builder) models.Layer {
				in := func(_ *models.Builder, _ models.DecoderConfig, e *models.Embedding) *models.Sequential {
					return models.NewLlamaInput(e)
				}
				return tinyDecoder(b, gqa, in, models.NewLlamaDecoderLayer, models.NewLlamaHead)
			}},
		} {
			c.name = fmt.Sprintf("%s, S %d", c.name, s)
			cases = append(cases, c)
		}
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dev := modeltest.NewDevice(t)
			rng := modeltest.NewRand(uint64(900 + i))
			l := tc.build(&models.Builder{Dev: dev, Rng: rng})
			modeltest.RandomizeParams(dev, l, rng)
			rtol, atol := modeltest.BlockRTol, modeltest.BlockATol
			if tc.leaf {
				rtol, atol = modeltest.LayerRTol, modeltest.LayerATol
			}
			if tc.vocab > 0 {
				modeltest.CheckTokenLayer(t, dev, l, tc.pass, tc.in, tc.vocab, rng, rtol, atol)
			} else {
				modeltest.CheckLayer(t, dev, l, tc.pass, tc.in, rng, rtol, atol)
			}
			models.ReleaseLayer(l)
			modeltest.CheckNoLeak(t, dev)
		})
	}
}

// tinyDecoder is a whole decoder: input, two layers, head (GPT-2's tied
// to the token embedding, Llama's not).
func tinyDecoder(b *models.Builder, cfg models.DecoderConfig,
	input func(*models.Builder, models.DecoderConfig, *models.Embedding) *models.Sequential,
	layer func(*models.Builder, models.DecoderConfig) *models.DecoderLayer,
	head func(*models.Builder, models.DecoderConfig, *models.Param) *models.Sequential) models.Layer {
	emb := models.NewTokenEmbedding(b, cfg)
	var tied *models.Param
	if cfg.RopeTheta == 0 {
		tied = emb.Weight
	}
	return models.NewSequential(
		models.Child{Layer: input(b, cfg, emb)},
		models.Child{Name: "transformer.h.0", Layer: layer(b, cfg)},
		models.Child{Name: "transformer.h.1", Layer: layer(b, cfg)},
		models.Child{Layer: head(b, cfg, tied)},
	)
}
