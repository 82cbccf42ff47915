package models

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// Small transformers: an export of either takes a fraction of a second.
var (
	gpt2Small  = Config{Layers: 2, Seq: 8, Vocab: 50, Width: 1.0 / 12} // 1 head of 64
	llamaSmall = Config{Layers: 2, Seq: 8, Vocab: 40, Width: 1.0 / 16} // 2 heads of 64, 1 key/value head
)

func TestFieldTransposed(t *testing.T) {
	tests := []struct {
		model, name string
		want        bool
	}{
		{"gpt2", "transformer.h.0.attn.c_attn.weight", true},
		{"gpt2", "transformer.h.11.attn.c_proj.weight", true},
		{"gpt2", "transformer.h.3.mlp.c_fc.weight", true},
		{"gpt2", "transformer.h.3.mlp.c_proj.weight", true},
		{"gpt2", ExportGradPrefix + "transformer.h.3.mlp.c_proj.weight", true},
		{"gpt2", "transformer.h.3.mlp.c_proj.bias", false},
		{"gpt2", "transformer.h.0.ln_1.weight", false},
		{"gpt2", "transformer.wte.weight", false},
		{"gpt2", "lm_head.weight", false},
		{"gpt2", "transformer.h.x.attn.c_attn.weight", false},
		{"gpt2", "h.0.attn.c_attn.weight", false},
		{"tinyllama-1.1b", "model.layers.0.self_attn.q_proj.weight", false},
		{"tinyllama-1.1b", "model.layers.0.mlp.down_proj.weight", false},
		{"resnet50", "fc.weight", false},
	}
	for _, tc := range tests {
		a, err := LookupArch(tc.model)
		if err != nil {
			t.Fatal(err)
		}
		l := fieldLayout{format: a.field}
		if got := l.transposed(tc.name); got != tc.want {
			t.Errorf("%s %s: got %v, want %v", tc.model, tc.name, got, tc.want)
		}
	}
	for _, name := range []string{"mlp", "vgg16bn", "resnet50", "inceptionv3"} {
		if a, err := LookupArch(name); err == nil && a.field != nil {
			t.Errorf("%s: has a field format; its files are its state_dict as it is", name)
		}
	}
}

func TestTranspose2D(t *testing.T) {
	shape, got := transpose2D("w", tensor.Shape{2, 3}, []float32{1, 2, 3, 4, 5, 6})
	if !shape.Equal(tensor.Shape{3, 2}) || !slices.Equal(got, []float32{1, 4, 2, 5, 3, 6}) {
		t.Errorf("got %v %v, want [3 2] [1 4 2 5 3 6]", shape, got)
	}
	mustPanic(t, "a vector", "not a matrix", func() { transpose2D("b", tensor.Shape{3}, []float32{1, 2, 3}) })
}

// TestConv1DLayout checks the stored layout of GPT-2's c_attn against a
// weight built by hand: pipecast's Linear holds W[o][i] = 100·o + i, the
// file must hold Hugging Face's Conv1D weight V[i][o] = W[o][i], and x·V
// + b must be what the Linear computes.
func TestConv1DLayout(t *testing.T) {
	dev := newDevice(t)
	m, err := Build(dev, "gpt2", gpt2Small, newRand(1))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	var qkv *Linear
	Walk(m.Net, func(path string, l Layer) {
		if a, ok := l.(*Attention); ok && path == "transformer.h.0.attn" {
			qkv = a.QKV
		}
	})
	if qkv == nil {
		t.Fatal("no transformer.h.0.attn")
	}
	d, out := qkv.In, qkv.Out
	w := make([]float32, out*d)
	for o := range out {
		for i := range d {
			w[o*d+i] = float32(100*o + i)
		}
	}
	dev.Upload(qkv.Weight.Value, w)

	var buf bytes.Buffer
	sw := NewSafetensorsWriter(&buf)
	if err := WriteStateDict(sw, m); err != nil {
		t.Fatal(err)
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	r := openSafetensorsBytes(t, buf.Bytes())
	v, err := r.Read("transformer.h.0.attn.c_attn.weight")
	if err != nil {
		t.Fatal(err)
	}
	if !v.Shape.Equal(tensor.Shape{d, out}) {
		t.Fatalf("c_attn.weight stored %v, want Conv1D's [in %d, out %d]", v.Shape, d, out)
	}
	for i := range d {
		for o := range out {
			if got := v.Float32[i*out+o]; got != float32(100*o+i) {
				t.Fatalf("stored [%d][%d]: got %v, want %v", i, o, got, 100*o+i)
			}
		}
	}

	// Conv1D's forward on the stored weight is the Linear's.
	rng := newRand(2)
	x, xv := uploadRand(dev, tensor.Activations, rng, 1, d)
	defer x.Release()
	bias := host(qkv.Bias.Value)
	y, _ := qkv.Forward(&Pass{Dev: dev}, x)
	defer y.Release()
	want := make([]float64, out)
	for o := range out {
		want[o] = bias[o]
		for i := range d {
			want[o] += xv[i] * float64(v.Float32[i*out+o])
		}
	}
	compare(t, "x·V + b", host(y), want, 1e-5, 0)
}

// exportArrays exports model at cfg in format and returns the file's
// bytes and arrays.
func exportArrays(t *testing.T, dev tensor.Device, model string, cfg Config, format WeightFormat) ([]byte, WeightsFile, Arrays) {
	t.Helper()
	var buf bytes.Buffer
	if _, err := Export(dev, ExportOptions{Model: model, Config: cfg, Batch: 2, Seed: 5, Format: format}, &buf); err != nil {
		t.Fatal(err)
	}
	var f WeightsFile
	var err error
	if format == FormatSafetensors {
		f, err = OpenSafetensors(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	} else {
		f, err = OpenNPZ(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	}
	if err != nil {
		t.Fatal(err)
	}
	arrays := Arrays{}
	for _, k := range f.Keys() {
		a, err := f.Read(k)
		if err != nil {
			t.Fatal(err)
		}
		arrays[k] = a
	}
	return buf.Bytes(), f, arrays
}

func TestExportImportTransformers(t *testing.T) {
	tests := []struct {
		model  string
		cfg    Config
		format WeightFormat
	}{
		{"gpt2", gpt2Small, FormatSafetensors},
		{"gpt2", gpt2Small, FormatNPZ},
		{"tinyllama-1.1b", llamaSmall, FormatSafetensors},
		{"tinyllama-1.1b", llamaSmall, FormatNPZ},
	}
	for _, tc := range tests {
		t.Run(tc.model+"/"+string(tc.format), func(t *testing.T) {
			dev := newDevice(t)
			_, f, arrays := exportArrays(t, dev, tc.model, tc.cfg, tc.format)
			cfg := tc.cfg
			cfg.NoDropout = true
			want, err := Build(dev, tc.model, cfg, rand.New(rand.NewPCG(5, initStream)))
			if err != nil {
				t.Fatal(err)
			}
			defer want.Release()
			gpt2 := tc.model == "gpt2"

			// The file: Hugging Face's names and layouts, the tied head
			// once, the step's arrays, the config.
			for _, e := range StateDict(want.Net) {
				a, ok := arrays[e.Name]
				if e.Name == "lm_head.weight" && gpt2 {
					if ok || arrays[ExportGradPrefix+e.Name] != nil {
						t.Errorf("%s stored beside transformer.wte.weight, which it is", e.Name)
					}
					continue
				}
				if !ok {
					t.Errorf("%s: not in the file", e.Name)
					continue
				}
				wantShape := e.Shape
				if strings.HasSuffix(e.Name, ".c_attn.weight") || strings.HasSuffix(e.Name, ".c_fc.weight") || strings.HasSuffix(e.Name, "c_proj.weight") {
					wantShape = tensor.Shape{e.Shape[1], e.Shape[0]}
				}
				if !a.Shape.Equal(wantShape) {
					t.Errorf("%s: stored %v, want %v", e.Name, a.Shape, wantShape)
				}
			}
			raw, err := f.FieldConfig()
			if err != nil {
				t.Fatal(err)
			}
			var config map[string]any
			if err := json.Unmarshal(raw, &config); err != nil {
				t.Fatalf("config.json %q: %v", raw, err)
			}
			wantConfig := map[string]any{"model_type": "llama", "num_hidden_layers": 2.0, "hidden_size": 128.0,
				"num_attention_heads": 2.0, "num_key_value_heads": 1.0, "vocab_size": 40.0, "rms_norm_eps": 1e-5,
				"rope_theta": 10000.0, "tie_word_embeddings": false, "intermediate_size": 352.0, "max_position_embeddings": 2048.0}
			if gpt2 {
				wantConfig = map[string]any{"model_type": "gpt2", "n_layer": 2.0, "n_embd": 64.0, "n_head": 1.0,
					"n_positions": 1024.0, "vocab_size": 50.0, "layer_norm_epsilon": 1e-5}
			}
			for k, v := range wantConfig {
				if config[k] != v {
					t.Errorf("config.json %s: got %v, want %v", k, config[k], v)
				}
			}

			// The step: token ids, each position's next token, logits of
			// every position, the mean cross entropy over them.
			in, target, logits, loss := arrays[ExportInput], arrays[ExportTarget], arrays[ExportLogits], arrays[ExportLoss]
			b, s, v := 2, tc.cfg.Seq, tc.cfg.Vocab
			if in.DType != DTypeInt64 || !in.Shape.Equal(tensor.Shape{b, s}) || !target.Shape.Equal(tensor.Shape{b, s}) ||
				!logits.Shape.Equal(tensor.Shape{b, s, v}) || len(loss.Shape) != 0 {
				t.Fatalf("step: input %s %v, target %v, logits %v, loss %v", in.DType, in.Shape, target.Shape, logits.Shape, loss.Shape)
			}
			ce := 0.0
			for i, c := range target.Int64 {
				if p := i % s; p < s-1 && in.Int64[i+1] != c {
					t.Errorf("target %d: got %d, want the next input token %d", i, c, in.Int64[i+1])
				}
				row := widen(logits.Float32[i*v : (i+1)*v])
				m := slices.Max(row)
				sum := 0.0
				for _, x := range row {
					sum += math.Exp(x - m)
				}
				ce += m + math.Log(sum) - row[c]
			}
			ce /= float64(b * s)
			if math.Abs(float64(loss.Float32[0])-ce) > 1e-5*ce {
				t.Errorf("loss: got %v, want the mean over %d positions %v", loss.Float32[0], b*s, ce)
			}

			// Import gives the weights an independent build from the
			// same seed has, and the step replays exactly.
			imp, err := Import(dev, f, tc.model, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer imp.Model.Release()
			got := StateDict(imp.Model.Net)
			for i, e := range StateDict(want.Net) {
				equalValues(t, e.Name, host(got[i].Tensor()), host(e.Tensor()))
			}
			if imp.Loaded != len(got) {
				t.Errorf("Loaded %d, want %d", imp.Loaded, len(got))
			}
			rep, err := Replay(dev, imp.Model, f)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Logits != 0 || rep.Loss != 0 || rep.Grads != 0 || rep.GradsCompared != len(Params(want.Net)) {
				t.Errorf("replay: got %+v, want no differences over %d gradients", rep, len(Params(want.Net)))
			}
			checkLive(t, dev, "activations after export and replay", tensor.Activations, 0)
		})
	}
}

func TestExportTransformersDeterministic(t *testing.T) {
	dev := newDevice(t)
	a, _, _ := exportArrays(t, dev, "gpt2", gpt2Small, FormatSafetensors)
	b, _, _ := exportArrays(t, dev, "gpt2", gpt2Small, FormatSafetensors)
	if !bytes.Equal(a, b) {
		t.Error("two exports with the same options differ")
	}
}

// configArrays are arrays with a config.json, as a file holds them.
type configArrays struct {
	Arrays
	config []byte
}

func (c configArrays) FieldConfig() ([]byte, error) { return c.config, nil }

func TestImportTiedHead(t *testing.T) {
	dev := newDevice(t)
	_, _, arrays := exportArrays(t, dev, "gpt2", gpt2Small, FormatSafetensors)
	wte := arrays["transformer.wte.weight"]
	cfg := gpt2Small
	cfg.NoDropout = true
	importHead := func(t *testing.T, src StateSource) (*Imported, error) {
		t.Helper()
		imp, err := Import(dev, src, "gpt2", cfg)
		if err == nil {
			t.Cleanup(imp.Model.Release)
			var head *Linear
			Walk(imp.Model.Net, func(path string, l Layer) {
				if lin, ok := l.(*Linear); ok && path == "lm_head" {
					head = lin
				}
			})
			equalValues(t, "lm_head.weight", host(head.Weight.Value), widen(wte.Float32))
		}
		return imp, err
	}
	t.Run("stored once", func(t *testing.T) {
		if _, err := importHead(t, arrays); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("stored twice, equal", func(t *testing.T) {
		both := maps.Clone(arrays)
		both["lm_head.weight"] = &Array{ArrayInfo: wte.ArrayInfo, Float32: slices.Clone(wte.Float32)}
		if _, err := importHead(t, both); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("stored twice, different", func(t *testing.T) {
		both := maps.Clone(arrays)
		other := slices.Clone(wte.Float32)
		other[7] += 1
		both["lm_head.weight"] = &Array{ArrayInfo: wte.ArrayInfo, Float32: other}
		_, err := Import(dev, both, "gpt2", cfg)
		if err == nil || !strings.Contains(err.Error(), "lm_head.weight differs from transformer.wte.weight") {
			t.Fatalf("got %v, want an error saying the tied copies differ", err)
		}
		checkLive(t, dev, "weights after a failed import", tensor.Weights, 0)
	})
	t.Run("stored as lm_head alone", func(t *testing.T) {
		head := maps.Clone(arrays)
		head["lm_head.weight"] = wte
		delete(head, "transformer.wte.weight")
		if _, err := importHead(t, head); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		none := maps.Clone(arrays)
		delete(none, "transformer.wte.weight")
		_, err := Import(dev, none, "gpt2", cfg)
		if err == nil || !strings.Contains(err.Error(), "missing: ") || !strings.Contains(err.Error(), "transformer.wte.weight") {
			t.Fatalf("got %v, want transformer.wte.weight missing", err)
		}
	})
}

func TestImportFieldConfig(t *testing.T) {
	dev := newDevice(t)
	_, f, arrays := exportArrays(t, dev, "tinyllama-1.1b", llamaSmall, FormatNPZ)
	raw, _ := f.FieldConfig()
	var config map[string]any
	if err := json.Unmarshal(raw, &config); err != nil {
		t.Fatal(err)
	}
	cfg := llamaSmall
	cfg.NoDropout = true
	tests := []struct {
		name   string
		change func(c map[string]any)
		want   string // part of the error; "" for none
	}{
		{"the same", func(map[string]any) {}, ""},
		{"keys of the library's own", func(c map[string]any) { c["torch_dtype"] = "float32"; c["bos_token_id"] = 1 }, ""},
		{"keys left out or null", func(c map[string]any) { delete(c, "rope_theta"); c["max_position_embeddings"] = nil }, ""},
		{"another theta and eps", func(c map[string]any) { c["rope_theta"] = 500000; c["rms_norm_eps"] = 1e-6 },
			"rms_norm_eps 1e-06, model 1e-05; rope_theta 500000, model 10000"},
		{"another family", func(c map[string]any) { c["model_type"] = "mistral" }, "model_type mistral, model llama"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := map[string]any{}
			for k, v := range config {
				c[k] = v
			}
			tc.change(c)
			b, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			imp, err := Import(dev, configArrays{arrays, b}, "tinyllama-1.1b", cfg)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				imp.Model.Release()
				return
			}
			if err == nil {
				imp.Model.Release()
				t.Fatal("got no error")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "describes another model") {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// A file's config of another size: layers differ, and so do the
	// names, but the config says why first.
	other := llamaSmall
	other.Layers = 3
	other.NoDropout = true
	if _, err := Import(dev, f, "tinyllama-1.1b", other); err == nil || !strings.Contains(err.Error(), "num_hidden_layers 2, model 3") {
		t.Errorf("another size: got %v", err)
	}
}

func TestFieldConfigOnlyForTransformers(t *testing.T) {
	m, err := Describe("mlp", Config{Sizes: []int{4, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if c := FieldConfig(m); c != nil {
		t.Errorf("mlp: got config %s, want none", c)
	}
	g, err := Describe("gpt2", Config{})
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(FieldConfig(g), &c); err != nil {
		t.Fatal(err)
	}
	// Hugging Face's gpt2 config.json.
	for k, v := range map[string]any{"n_layer": 12.0, "n_embd": 768.0, "n_head": 12.0, "n_positions": 1024.0, "vocab_size": 50257.0,
		"layer_norm_epsilon": 1e-5, "activation_function": "gelu_new", "resid_pdrop": 0.1} {
		if c[k] != v {
			t.Errorf("gpt2 %s: got %v, want %v", k, c[k], v)
		}
	}
	if a, _ := c["architectures"].([]any); len(a) != 1 || a[0] != "GPT2LMHeadModel" {
		t.Errorf("gpt2 architectures: got %v", c["architectures"])
	}
}
