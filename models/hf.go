package models

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// The field's format of weights is Hugging Face's: a model's state_dict
// under the transformers library's names (which pipecast's already are),
// in its modules' layouts, with a tied tensor stored once, and beside it
// the config.json that sizes the model. Where a family's modules differ
// from pipecast's layers in layout (GPT-2's Conv1D, whose weight is [in,
// out] where pipecast's Linear holds [out, in]), the family says so
// (fieldFormat) and the export and import convert: files hold the field's
// layout, models pipecast's. A family without a fieldFormat (the CNNs, the
// mlp) stores its state_dict as it is, without a config.

// FieldConfigKey is the key of a .safetensors file's metadata holding the
// model's config.json, as a JSON string.
const FieldConfigKey = "config"

// FieldConfigEntry is the entry of an .npz archive holding the model's
// config.json.
const FieldConfigEntry = "config.json"

// fieldFormat is what a family's files hold in another form than
// pipecast's layers do.
type fieldFormat interface {
	// transposed reports whether the 2-D state_dict entry name is stored
	// transposed in the field's format.
	transposed(name string) bool
	// fieldConfig returns the config.json of m, a model of the family,
	// under the transformers library's keys.
	fieldConfig(m *Model) map[string]any
}

// gpt2Conv1D are the modules of each GPT-2 block (transformer.h.N) that
// the transformers library builds as Conv1D, y = x·W + b with W stored
// [in, out]; pipecast builds them as Linear, W [out, in]. Llama's
// projections are nn.Linear, as pipecast's.
var gpt2Conv1D = []string{"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"}

// gpt2 reports whether s is GPT-2's family: learned positions, where
// Llama's rotates.
func (s decoderShape) gpt2() bool { return s.positions > 0 }

// transposed reports whether name is the weight of one of GPT-2's
// Conv1D modules.
func (s decoderShape) transposed(name string) bool {
	if !s.gpt2() {
		return false
	}
	rest, ok := strings.CutPrefix(name, "transformer.h.")
	if !ok {
		return false
	}
	index, rest, ok := strings.Cut(rest, ".")
	if _, err := strconv.Atoi(index); !ok || err != nil {
		return false
	}
	module, ok := strings.CutSuffix(rest, ".weight")
	return ok && slices.Contains(gpt2Conv1D, module)
}

// fieldConfig returns the config.json of m as the transformers library's
// GPT2Config or LlamaConfig writes it, with m's sizes (its layers, and
// its heads and widths as Width scales them).
func (s decoderShape) fieldConfig(m *Model) map[string]any {
	cfg := s.decoderConfig(m.Config)
	eps := shortestFloat32(cfg.Eps)
	if s.gpt2() {
		return map[string]any{
			"model_type":          "gpt2",
			"architectures":       []string{"GPT2LMHeadModel"},
			"vocab_size":          cfg.Vocab,
			"n_positions":         cfg.Positions,
			"n_embd":              cfg.Hidden,
			"n_layer":             cfg.Layers,
			"n_head":              cfg.Heads,
			"layer_norm_epsilon":  eps,
			"activation_function": "gelu_new",
			"resid_pdrop":         shortestFloat32(s.dropout),
			"embd_pdrop":          shortestFloat32(s.dropout),
			"attn_pdrop":          shortestFloat32(s.dropout),
			"initializer_range":   cfg.InitStd,
			"tie_word_embeddings": s.tied,
		}
	}
	// Rotary positions take any length: max_position_embeddings is the
	// family's context, as its config.json gives it, whatever --seq.
	positions := m.Arch.Tokens.Seq
	return map[string]any{
		"model_type":              "llama",
		"architectures":           []string{"LlamaForCausalLM"},
		"vocab_size":              cfg.Vocab,
		"hidden_size":             cfg.Hidden,
		"intermediate_size":       cfg.Intermediate,
		"num_hidden_layers":       cfg.Layers,
		"num_attention_heads":     cfg.Heads,
		"num_key_value_heads":     cfg.KVHeads,
		"rms_norm_eps":            eps,
		"rope_theta":              cfg.RopeTheta,
		"max_position_embeddings": positions,
		"tie_word_embeddings":     s.tied,
		"hidden_act":              "silu",
		"attention_bias":          cfg.Bias,
		"initializer_range":       cfg.InitStd,
	}
}

// shortestFloat32 returns the float64 of x's shortest decimal form, so
// that 1e-5 as a float32 writes as 1e-05 and not 9.99999974737875e-06.
func shortestFloat32(x float32) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(x), 'g', -1, 32), 64)
	return v
}

// FieldConfig returns m's config.json under the transformers library's
// keys (sorted, as its to_json_string writes them), or nil for a model
// whose family has none.
func FieldConfig(m *Model) []byte {
	f := m.Arch.field
	if f == nil {
		return nil
	}
	b, err := json.MarshalIndent(f.fieldConfig(m), "", "  ")
	if err != nil {
		panic("models: config.json: " + err.Error())
	}
	return append(b, '\n')
}
