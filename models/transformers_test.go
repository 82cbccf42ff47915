package models

import "testing"

// TestDecoderParamCounts checks the zoo's transformers against the
// parameter counts of Hugging Face's models at full size (GPT-2's tied
// LM head counted once, as PyTorch's parameters() counts it).
func TestDecoderParamCounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		want int64
	}{
		{"gpt2", 124_439_808},
		{"gpt2-medium", 354_823_168},
		{"gpt2-large", 774_030_080},
		{"gpt2-xl", 1_557_611_200},
		{"tinyllama-1.1b", 1_100_048_384},
		{"llama2-7b", 6_738_415_616},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Describe(tc.name, Config{})
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Params(); got != tc.want {
				t.Errorf("parameters: got %d, want %d", got, tc.want)
			}
			if want := m.Config.Layers + 2; len(m.Blocks) != want {
				t.Errorf("blocks: got %d, want %d (input, layers, head)", len(m.Blocks), want)
			}
		})
	}
}

// TestDecoderWidth checks how width scales a transformer: heads at the
// family's head width, grouped-query attention's key/value heads kept a
// divisor of the heads.
func TestDecoderWidth(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		width                    float64
		hidden, heads, kv, inter int
	}{
		{"gpt2", 1, 768, 12, 12, 3072},
		{"gpt2", 0.25, 192, 3, 3, 768},
		{"gpt2", 0.01, 64, 1, 1, 256},
		{"tinyllama-1.1b", 1, 2048, 32, 4, 5632},
		{"tinyllama-1.1b", 0.25, 512, 8, 1, 1408},
		{"tinyllama-1.1b", 0.5, 1024, 16, 2, 2816},
		{"llama2-7b", 0.125, 512, 4, 4, 1376},
	} {
		a, err := LookupArch(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		var shape decoderShape
		for _, s := range []decoderShape{gpt2Shape(768, 12), llamaShape(2048, 32, 4, 5632), llamaShape(4096, 32, 32, 11008)} {
			if (s.positions > 0) == (tc.name == "gpt2") && (s.hidden == 2048) == (tc.name == "tinyllama-1.1b") {
				shape = s
			}
		}
		cfg := shape.decoderConfig(a.resolve(Config{Width: tc.width}))
		if cfg.Hidden != tc.hidden || cfg.Heads != tc.heads || cfg.KVHeads != tc.kv || cfg.Intermediate != tc.inter {
			t.Errorf("%s ×%g: got hidden %d, %d heads, %d kv heads, intermediate %d; want %d, %d, %d, %d",
				tc.name, tc.width, cfg.Hidden, cfg.Heads, cfg.KVHeads, cfg.Intermediate, tc.hidden, tc.heads, tc.kv, tc.inter)
		}
	}
}
