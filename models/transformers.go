package models

import (
	"fmt"
	"math"
	"strconv"

	"github.com/pipecast/pipecast/tensor"
)

// The decoder-only transformers of the zoo, as Hugging Face's
// GPT2LMHeadModel and LlamaForCausalLM compute them, under their
// state_dict names. Blocks: the input (GPT-2: transformer.wte and .wpe
// summed, then dropout; Llama: model.embed_tokens), each decoder layer
// (transformer.h.N, model.layers.N), and the head (the final norm and
// lm_head). GPT-2 ties lm_head.weight to transformer.wte.weight: one
// *Param in a whole model, a Tie whose copies a pipeline's AllReduce op
// sums when the two blocks fall on different devices.
//
// Width scales the number of heads, at each family's head width, and the
// MLP's hidden width, as it scales a CNN's channels: width 0.25 of gpt2
// has 3 heads of 64, a hidden size of 192.

// decoderShape is a family member's config.json beyond what TokenSize
// holds: the sizes width scales, and the constants of its family.
type decoderShape struct {
	hidden, heads, kvHeads, intermediate int
	positions                            int // GPT-2's n_positions; 0 with rotary positions
	eps                                  float32
	theta                                float64 // rope_theta; 0 for GPT-2
	dropout                              float32 // GPT-2's embd, attn and resid pdrop
	tied                                 bool
}

// gpt2Shape is GPT-2's config at n_layer, n_embd and n_head.
func gpt2Shape(hidden, heads int) decoderShape {
	return decoderShape{hidden: hidden, heads: heads, kvHeads: heads, intermediate: 4 * hidden,
		positions: 1024, eps: 1e-5, dropout: 0.1, tied: true}
}

// llamaShape is a Llama-style config (RMSNorm ε 1e-5, rope_theta 10000,
// untied head).
func llamaShape(hidden, heads, kvHeads, intermediate int) decoderShape {
	return decoderShape{hidden: hidden, heads: heads, kvHeads: kvHeads, intermediate: intermediate,
		eps: 1e-5, theta: 10000}
}

func init() {
	gpt2 := []struct {
		name           string
		layers, hidden int
		heads          int
		params         string
	}{
		{"gpt2", 12, 768, 12, "124.4 M"},
		{"gpt2-medium", 24, 1024, 16, "354.8 M"},
		{"gpt2-large", 36, 1280, 20, "774.0 M"},
		{"gpt2-xl", 48, 1600, 25, "1557.6 M"},
	}
	for _, g := range gpt2 {
		registerDecoder(g.name, fmt.Sprintf("GPT-2 (%s parameters), as Hugging Face's GPT2LMHeadModel", g.params),
			TokenSize{Seq: 1024, Vocab: 50257, Layers: g.layers, MaxSeq: 1024}, gpt2Shape(g.hidden, g.heads))
	}
	registerDecoder("tinyllama-1.1b", "TinyLlama-1.1B (1100.0 M parameters, grouped-query attention), as Hugging Face's LlamaForCausalLM",
		TokenSize{Seq: 2048, Vocab: 32000, Layers: 22}, llamaShape(2048, 32, 4, 5632))
	registerDecoder("llama2-7b", "Llama-2-7B (6738.4 M parameters), as Hugging Face's LlamaForCausalLM",
		TokenSize{Seq: 4096, Vocab: 32000, Layers: 32}, llamaShape(4096, 32, 32, 11008))
}

// registerDecoder registers a decoder transformer of the given defaults
// and shape.
func registerDecoder(name, description string, tokens TokenSize, shape decoderShape) {
	register(Arch{
		Name:        name,
		Description: description,
		Tokens:      &tokens,
		Optimizer:   "adamw",
		build:       func(b *Builder) ([]*Block, error) { return buildDecoder(b, shape) },
		field:       shape,
	})
}

// decoderConfig returns the layers' configuration of shape at c's size.
func (s decoderShape) decoderConfig(c Config) DecoderConfig {
	headDim := s.hidden / s.heads
	heads := scaleCount(s.heads, c.Width)
	kv := heads
	if s.kvHeads != s.heads {
		// Grouped-query attention keeps its ratio where it can: the
		// most key/value heads, at most the scaled count, that divide
		// the heads.
		kv = scaleCount(s.kvHeads, c.Width)
		for heads%kv != 0 {
			kv--
		}
	}
	cfg := DecoderConfig{
		Vocab: c.Vocab, Positions: s.positions, Layers: c.Layers,
		Hidden: heads * headDim, Heads: heads, KVHeads: kv, HeadDim: headDim,
		Intermediate: scaleCount(s.intermediate, c.Width),
		Eps:          s.eps, RopeTheta: s.theta, Bias: s.theta == 0, InitStd: 0.02,
	}
	if s.positions > 0 {
		// GPT-2's MLP is four times its (scaled) hidden size.
		cfg.Intermediate = 4 * cfg.Hidden
	}
	if !c.NoDropout {
		cfg.EmbdDropout, cfg.AttnDropout, cfg.ResidDropout = s.dropout, s.dropout, s.dropout
	}
	return cfg
}

// scaleCount returns n scaled by width, rounded, at least 1.
func scaleCount(n int, width float64) int {
	return max(1, int(math.Round(float64(n)*width)))
}

// buildDecoder builds the blocks of a decoder transformer of shape at
// b's size: input, layers, head.
func buildDecoder(b *Builder, s decoderShape) ([]*Block, error) {
	c := b.Config
	cfg := s.decoderConfig(c)
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	b.Input = tensor.Shape{c.Seq}
	embed := NewTokenEmbedding(b, cfg)
	var blocks []*Block
	layerName, headName := "model.layers.", "lm_head"
	if s.positions > 0 {
		layerName = "transformer.h."
		blocks = append(blocks, b.Block("transformer.wte", Child{Layer: NewGPT2Input(b, cfg, embed)}))
	} else {
		blocks = append(blocks, b.Block("model.embed_tokens", Child{Layer: NewLlamaInput(embed)}))
	}
	for i := range c.Layers {
		name := layerName + strconv.Itoa(i)
		var layer Layer
		if s.positions > 0 {
			layer = NewGPT2DecoderLayer(b, cfg)
		} else {
			layer = NewLlamaDecoderLayer(b, cfg)
		}
		blocks = append(blocks, b.Block(name, Child{name, layer}))
	}
	var tied *Param
	if s.tied {
		tied = embed.Weight
	}
	var head Layer
	if s.positions > 0 {
		head = NewGPT2Head(b, cfg, tied)
	} else {
		head = NewLlamaHead(b, cfg, tied)
	}
	blocks = append(blocks, b.Block(headName, Child{Layer: head}))
	return blocks, nil
}
