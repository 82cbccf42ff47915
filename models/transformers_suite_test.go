package models_test

import (
	"math"
	"strconv"
	"strings"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/models/modeltest"
	"github.com/pipecast/pipecast/tensor"
)

// The suite's cases of the decoder transformers, at Hugging Face's
// configurations (config.json, shared/REFERENCES.md). Parameter counts
// are sum(p.numel() for p in model.parameters()), GPT-2's tied head
// counted once. MACs per sample count every product of a forward at the
// model's full sequence, as PyTorch's eager attention computes it: the
// projections and the LM head (tokens × in × out each), and the
// attention's two products, q·kᵀ and probabilities·v, over the whole
// S×S matrix before the causal mask (S²·head_dim a head each).
//
// gpt2 by hand, S = 1024, d = 768, V = 50257, 12 layers: a layer's
// projections are c_attn S·d·3d, c_proj S·d², c_fc S·d·4d and the MLP's
// c_proj S·4d·d, together 12·S·d² = 7,247,757,312; its attention
// 2·S²·d = 1,610,612,736; so 8,858,370,048 a layer, 106,300,440,576
// for twelve. The head is S·d·V = 39,523,713,024. The whole forward:
// 145,824,153,600 MACs per sequence.
//
// llama2-7b by hand, S = 4096, d = 4096, I = 11008, 32 heads of 128 (as
// many key/value heads): q, k, v and o 4·S·d² = 274,877,906,944; the
// MLP's gate, up and down 3·S·d·I = 554,050,781,184; attention 2·S²·d =
// 137,438,953,472; 966,367,641,600 a layer, 30,923,764,531,200 for 32;
// lm_head S·d·V = 536,870,912,000; in all 31,460,635,443,200.
//
// Activation bytes are what a training forward keeps, in float32 (the
// sizes the layers' comments document and TestDecoderMetaMemory checks),
// per layer: its input, each norm's statistics and output, the residual
// sum between the halves, the attention's q, k, v, probabilities (GPT-2:
// and their dropped copy, attn_pdrop being on) and context, and the
// MLP's hidden activations (GPT-2: c_fc's output and gelu's; Llama:
// gate's, up's and silu(gate)·up); then the head's, and the logits.

// smallDecoder is the configuration the cases run at: 8 tokens of a
// 64-token vocabulary, two layers, a sixteenth of the heads (gpt2,
// gpt2-medium and gpt2-large: one of 64, hidden size 64, one small
// network; gpt2-xl: two, 128; TinyLlama: two of 64 sharing one
// key/value head; Llama-2: two of 128, as many key/value heads), which
// keeps each subtest well under a second.
var smallDecoder = models.Config{Seq: 8, Vocab: 64, Layers: 2, Width: 1.0 / 16}

// gpt2Case is the case of a GPT-2 of layers layers, hidden size d and
// heads heads, whose totals Describe gives as params, macs and act.
func gpt2Case(name string, layers, d, heads int, params, macs, act int64) modeltest.Case {
	const s, v, positions = 1024, 50257, 1024
	L, D, S, V := int64(layers), int64(d), int64(s), int64(v)
	// Per layer: ln_1 and ln_2 2d each, c_attn 3d² + 3d, c_proj d² + d,
	// c_fc 4d² + 4d, the MLP's c_proj 4d² + d: 12d² + 13d.
	perLayer := 12*D*D + 13*D
	// Kept by a layer, in floats: its input, ln_1's and ln_2's mean,
	// rstd and output, the residual sum, q, k, v, the context, c_fc's and
	// gelu's outputs (4d each): 16·S·d + 4·S; the probabilities and
	// their dropped copy, 2·heads·S².
	layerSaved := 4 * (S*(16*D+4) + 2*int64(heads)*S*S)
	q, small := int64(scaledHidden(d, heads, 0.25)), scaledHidden(d, heads, smallDecoder.Width)
	return modeltest.Case{
		Model:  name,
		Config: smallDecoder,
		Full: modeltest.Full{
			Seq: s, Vocab: v, DecoderLayers: layers, MaxSeq: positions, Input: tensor.Shape{s},
			Params: params, MACs: macs, ActivationBytes: act,
			Blocks: decoderBlocks("transformer.wte", "transformer.h.", layers),
			Stages: []modeltest.Stage{
				// wte and wpe; the ids kept for wte's backward.
				{Name: "transformer.wte", Out: tensor.Shape{s, d}, Params: V*D + positions*D,
					OutputBytes: 4 * S * D, SavedBytes: 4 * S},
				{Name: "transformer.h", Out: tensor.Shape{s, d}, Params: L * perLayer,
					MACs: L * (12*S*D*D + 2*S*S*D), OutputBytes: L * 4 * S * D, SavedBytes: L * layerSaved},
				// ln_f and lm_head, whose weight is wte's: the block
				// holds a copy. It keeps ln_f's input, statistics and
				// output.
				{Name: "lm_head", Out: tensor.Shape{s, v}, Params: 2*D + V*D, MACs: S * D * V,
					OutputBytes: 4 * S * V, SavedBytes: 4 * (2*S*D + 2*S)},
			},
			Layers: map[string]int{
				"Embedding": 1, "PositionEmbedding": 1, "DecoderLayer": layers, "Attention": layers,
				"LayerNorm": 2*layers + 1, "GELUTanh": layers,
				// c_attn, c_proj, c_fc and c_proj a layer; lm_head.
				"Linear": 4*layers + 1, "PerToken": 2*layers + 1,
				// transformer.drop; attn_dropout, resid_dropout and the
				// MLP's dropout a layer.
				"Dropout": 3*layers + 1,
			},
		},
		Sizes: []modeltest.Size{
			{Name: "1 layer", Config: models.Config{Layers: 1}, Params: params - (L-1)*perLayer},
			// A quarter of the heads, of 64 each.
			{Name: "width 0.25", Config: models.Config{Width: 0.25, Seq: 16},
				Params: V*q + positions*q + L*(12*q*q+13*q) + 2*q,
				Outs:   map[string]tensor.Shape{"transformer.h.0": {16, int(q)}, "lm_head": {16, v}}},
			{Name: "small", Config: smallDecoder, Outs: map[string]tensor.Shape{
				"transformer.wte": {8, small}, "transformer.h.1": {8, small}, "lm_head": {8, 64}}},
		},
		Head: []string{"transformer.wte.weight"},
		Names: modeltest.Names{
			// wte, wpe, twelve a layer, ln_f's two.
			Params: 12*layers + 4,
			Golden: "testdata/statedict_" + name + ".txt",
			Slices: []modeltest.Slice{
				{What: "the tied head listed once, as wte", Of: modeltest.StateDictNames, At: -3, Want: []string{
					"transformer.h." + strconv.Itoa(layers-1) + ".mlp.c_proj.bias", "transformer.ln_f.weight", "transformer.ln_f.bias"}},
			},
		},
		Init: modeltest.Init{Rule: hfInit(true)},
		Step: decoderStep,
		Grad: decoderGrad,
	}
}

// llamaCase is the case of a Llama of layers layers, hidden size d,
// heads heads of which kv are key/value heads, MLP width inter, whose
// totals Describe gives as params, macs and act.
func llamaCase(name string, s, layers, d, heads, kv, inter int, params, macs, act int64) modeltest.Case {
	const v = 32000
	L, D, S, V, I := int64(layers), int64(d), int64(s), int64(v), int64(inter)
	KV := int64(kv * d / heads) // the key/value heads' width
	// Per layer: q and o d² each, k and v d·KV each, gate, up and down
	// d·I each, two RMSNorms of d.
	perLayer := 2*D*D + 2*D*KV + 3*D*I + 2*D
	// Kept by a layer, in floats: its input, each RMSNorm's rstd and
	// output, the residual sum, q (rotated), k and v (rotated; KV wide),
	// the context, the MLP's three hidden activations, and the
	// probabilities, heads·S² (no dropout).
	layerSaved := 4 * (S*(6*D+2+2*KV+3*I) + int64(heads)*S*S)
	small := scaledHidden(d, heads, smallDecoder.Width)
	return modeltest.Case{
		Model:  name,
		Config: smallDecoder,
		Full: modeltest.Full{
			Seq: s, Vocab: v, DecoderLayers: layers, Input: tensor.Shape{s},
			Params: params, MACs: macs, ActivationBytes: act,
			Blocks: decoderBlocks("model.embed_tokens", "model.layers.", layers),
			Stages: []modeltest.Stage{
				{Name: "model.embed_tokens", Out: tensor.Shape{s, d}, Params: V * D, OutputBytes: 4 * S * D, SavedBytes: 4 * S},
				{Name: "model.layers", Out: tensor.Shape{s, d}, Params: L * perLayer,
					MACs: L * (2*S*D*D + 2*S*D*KV + 3*S*D*I + 2*S*S*D), OutputBytes: L * 4 * S * D, SavedBytes: L * layerSaved},
				// model.norm and the untied lm_head; norm's input, rstd
				// and output kept.
				{Name: "lm_head", Out: tensor.Shape{s, v}, Params: D + V*D, MACs: S * D * V,
					OutputBytes: 4 * S * V, SavedBytes: 4 * (2*S*D + S)},
			},
			Layers: map[string]int{
				"Embedding": 1, "DecoderLayer": layers, "Attention": layers, "GatedMLP": layers,
				"RMSNorm": 2*layers + 1, "PerToken": 1,
				// q, k, v, o, gate, up and down a layer; lm_head.
				"Linear": 7*layers + 1, "Dropout": 0, "LayerNorm": 0,
			},
		},
		Sizes: []modeltest.Size{
			{Name: "1 layer", Config: models.Config{Layers: 1}, Params: params - (L-1)*perLayer},
			{Name: "small", Config: smallDecoder, Outs: map[string]tensor.Shape{
				"model.embed_tokens": {8, small}, "model.layers.1": {8, small}, "lm_head": {8, 64}}},
			// No learned positions: any length.
			{Name: "twice the default sequence", Config: models.Config{Seq: 2 * s, Width: 1.0 / 16},
				Outs: map[string]tensor.Shape{"lm_head": {2 * s, v}}},
		},
		Head: []string{"model.embed_tokens.weight", "lm_head.weight"},
		Names: modeltest.Names{
			// embed_tokens, nine a layer, norm, lm_head.
			Params: 9*layers + 3,
			Golden: "testdata/statedict_" + name + ".txt",
		},
		Init: modeltest.Init{Rule: hfInit(false)},
		Step: decoderStep,
		Grad: decoderGrad,
	}
}

// scaledHidden is the hidden size of a decoder of hidden size d and
// heads heads at width w: the heads scaled, rounded, at least one, each
// as wide as before.
func scaledHidden(d, heads int, w float64) int {
	return max(1, int(math.Round(float64(heads)*w))) * (d / heads)
}

// decoderBlocks returns a decoder's block names: input, layers, head.
func decoderBlocks(input, layer string, layers int) []string {
	names := []string{input}
	for i := range layers {
		names = append(names, layer+strconv.Itoa(i))
	}
	return append(names, "lm_head")
}

// hfInit is Hugging Face's _init_weights of GPT2PreTrainedModel and
// LlamaPreTrainedModel (initializer_range 0.02): nn.Linear and Conv1D
// weights N(0, 0.02²), biases 0; nn.Embedding N(0, 0.02²); LayerNorm
// weight 1 and bias 0, LlamaRMSNorm weight 1. GPT-2 (gpt2 set) draws
// every c_proj.weight, attention's and the MLP's, from N(0, (0.02 /
// √(2·n_layer))²), Radford et al. 2019's scaling of the residual
// path; n_layer is the layers the model is built with, smallDecoder's.
func hfInit(gpt2 bool) func(path string, l models.Layer, param string) (modeltest.Dist, bool) {
	const std = 0.02
	return func(path string, l models.Layer, param string) (modeltest.Dist, bool) {
		switch l.(type) {
		case *models.LayerNorm, *models.RMSNorm:
			return map[string]modeltest.Dist{"weight": modeltest.Const(1), "bias": modeltest.Const(0)}[param], true
		case *models.Embedding, *models.PositionEmbedding:
			return modeltest.Normal(0, std), param == "weight"
		case *models.Linear:
			if param == "bias" {
				return modeltest.Const(0), true
			}
			if gpt2 && strings.HasSuffix(path, ".c_proj") {
				return modeltest.Normal(0, std/math.Sqrt(2*float64(smallDecoder.Layers))), true
			}
			return modeltest.Normal(0, std), true
		}
		return modeltest.Dist{}, false
	}
}

// The training steps against the float64 mirror, dropout on, the
// weights as Hugging Face draws them and the norms moved off 1 and 0.
// The loss starts within 0.15 of log 64: the logits, sums of d
// normalised activations (γ in [0.5, 1.5), β in [−0.5, 0.5): mean
// square 7/6) times weights of std 0.02, have variance d·(7/6)·0.02²,
// 0.12 at the widest small model's d = 256, and add about half their
// variance to the expected log-sum-exp, log V. Over seeds 52 to 59 the
// worst errors against the mirror were 6.5e-7 of the largest logit
// (llama2-7b; gpt2 2.7e-7) and 5.8e-7 of the largest gradient (gpt2-xl),
// a few float32 ulps of the terms: held to the bound of composed blocks,
// fifteen times over.
var decoderStep = modeltest.Step{Randomize: modeltest.RandomizeNorms, LossNear: 0.15,
	OutTol: modeltest.BlockATol, GradTol: modeltest.BlockATol}

// decoderGrad checks the whole network in training mode, dropout on,
// against the mirror and the mirror against central differences at 16
// sampled parameter tensors, with weights of order one (RandomizeFanIn)
// so that no attention softmax is one-hot.
var decoderGrad = modeltest.Grad{
	Pass: models.Pass{Train: true, Seed: 3, Step: 1}, Randomize: modeltest.RandomizeFanIn,
	Samples: 16, Alive: 1e-3,
}

// transformerCases are the zoo's decoder transformers.
func transformerCases() []modeltest.Case {
	return []modeltest.Case{
		gpt2Case("gpt2", 12, 768, 12, 124_439_808, 145_824_153_600, 2_024_292_352),
		gpt2Case("gpt2-medium", 24, 1024, 16, 354_823_168, 413_475_536_896, 5_046_484_992),
		gpt2Case("gpt2-large", 36, 1280, 20, 774_030_080, 887_285_350_400, 9_276_637_184),
		gpt2Case("gpt2-xl", 48, 1600, 25, 1_557_611_200, 1_753_351_782_400, 15_319_252_992),
		llamaCase("tinyllama-1.1b", 2048, 22, 2048, 32, 4, 5632, 1_100_048_384, 2_496_449_740_800, 17_459_167_232),
		llamaCase("llama2-7b", 4096, 32, 4096, 32, 32, 11008, 6_738_415_616, 31_460_635_443_200, 103_873_019_904),
	}
}
