package models

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// fakeLM is a language model's Arch for the tests of the size fields: it
// takes token sequences with GPT-2's defaults at 1024 positions, and
// builds a single linear layer from the sequence to the vocabulary, no
// transformer.
var fakeLM = Arch{
	Name:        "fakelm",
	Description: "a language model's sizes on one linear layer",
	Tokens:      &TokenSize{Seq: 1024, Vocab: 50257, Layers: 12, MaxSeq: 1024},
	build: func(b *Builder) ([]*Block, error) {
		b.Input = tensor.Shape{b.Config.Seq}
		return []*Block{b.Block("lm_head", Child{"0", NewLinear(b.Dev, b.Config.Seq, b.Config.Classes, false, b.Rng)})}, nil
	},
}

// withArch registers a in the zoo for the rest of the test.
func withArch(t *testing.T, a Arch) {
	t.Helper()
	if _, ok := archs[a.Name]; ok {
		t.Fatalf("the zoo already has %s", a.Name)
	}
	register(a)
	t.Cleanup(func() { delete(archs, a.Name) })
}

func TestSizeRecordJSON(t *testing.T) {
	tests := []struct {
		name string
		r    SizeRecord
		want string
	}{
		// A CNN's record reads and writes as before the language
		// models' fields.
		{"cnn", SizeRecord{Image: 32, Classes: 10, Width: 0.25}, `{"image":32,"classes":10,"width":0.25}`},
		{"mlp", SizeRecord{Classes: 10, Width: 1}, `{"image":0,"classes":10,"width":1}`},
		{"language model", SizeRecord{Classes: 50257, Width: 0.25, Seq: 64, Vocab: 50257, Layers: 4},
			`{"image":0,"classes":50257,"width":0.25,"seq":64,"vocab":50257,"layers":4}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.r)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("got %s, want %s", b, tc.want)
			}
			var back SizeRecord
			if err := json.Unmarshal(b, &back); err != nil || back != tc.r {
				t.Errorf("read back %+v (%v), want %+v", back, err, tc.r)
			}
			if got := tc.r.Config().Record(); got != tc.r {
				t.Errorf("Config().Record() = %+v, want %+v", got, tc.r)
			}
		})
	}
}

func TestSizeRecordCheckAndDescribe(t *testing.T) {
	tests := []struct {
		name     string
		r        SizeRecord
		describe string
		err      string
	}{
		{"cnn", SizeRecord{Image: 32, Classes: 10, Width: 0.25}, "image 32, 10 classes, width 0.25", ""},
		{"language model", SizeRecord{Classes: 256, Width: 1, Seq: 64, Vocab: 256, Layers: 2}, "seq 64, vocab 256, 2 layers, width 1", ""},
		{"negative image", SizeRecord{Image: -1}, "", "image -1 is negative"},
		{"negative seq", SizeRecord{Seq: -64, Vocab: 5, Layers: 1}, "", "seq -64 is negative"},
		{"negative vocab", SizeRecord{Seq: 64, Vocab: -5, Layers: 1}, "", "vocab -5 is negative"},
		{"negative layers", SizeRecord{Seq: 64, Vocab: 5, Layers: -1}, "", "layers -1 is negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.r.Check()
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Errorf("Check: got %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Errorf("Check: %v", err)
			}
			if got := tc.r.Describe(); got != tc.describe {
				t.Errorf("Describe: got %q, want %q", got, tc.describe)
			}
		})
	}
}

func TestSizeRecordLabel(t *testing.T) {
	withArch(t, fakeLM)
	lm := func(width float64, seq, vocab, layers int) SizeRecord {
		return SizeRecord{Classes: vocab, Width: width, Seq: seq, Vocab: vocab, Layers: layers}
	}
	tests := []struct {
		name, model string
		r           SizeRecord
		want        string
	}{
		{"cnn at defaults", "resnet50", SizeRecord{Image: 224, Classes: 1000, Width: 1}, "resnet50"},
		{"cnn", "resnet50", SizeRecord{Image: 32, Classes: 10, Width: 0.25}, "resnet50 32px ×0.25"},
		{"mlp", "mlp", SizeRecord{Classes: 10, Width: 0.5}, "mlp ×0.5"},
		{"language model at defaults", "fakelm", lm(1, 1024, 50257, 12), "fakelm"},
		{"language model", "fakelm", lm(0.25, 64, 50257, 4), "fakelm ×0.25 seq 64 4 layers"},
		{"language model's vocabulary", "fakelm", lm(1, 1024, 256, 12), "fakelm vocab 256"},
		{"unknown model", "gpt9", lm(1, 64, 100, 2), "gpt9 seq 64 vocab 100 2 layers"},
		{"unknown model of images", "alexnet", SizeRecord{Image: 224, Classes: 1000, Width: 1}, "alexnet 224px"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Label(tc.model); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestResolvedTokens checks the defaults of a language model's fields,
// its classes as its vocabulary, and that other models clear the fields.
func TestResolvedTokens(t *testing.T) {
	withArch(t, fakeLM)
	tests := []struct {
		name, model string
		cfg, want   Config
	}{
		{"defaults", "fakelm", Config{}, Config{Classes: 50257, Width: 1, Seq: 1024, Vocab: 50257, Layers: 12}},
		{"given", "fakelm", Config{Seq: 64, Vocab: 300, Layers: 2, Width: 0.5}, Config{Classes: 300, Width: 0.5, Seq: 64, Vocab: 300, Layers: 2}},
		{"classes are the vocabulary", "fakelm", Config{Classes: 10, Image: 32}, Config{Classes: 50257, Width: 1, Seq: 1024, Vocab: 50257, Layers: 12}},
		{"a cnn ignores them", "resnet50", Config{Seq: 64, Vocab: 300, Layers: 2}, Config{Classes: 1000, Image: 224, Width: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolved(tc.model, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got.Record() != tc.want.Record() {
				t.Errorf("got %+v, want %+v", got.Record(), tc.want.Record())
			}
		})
	}
	m, err := Describe("fakelm", Config{Seq: 8, Vocab: 20})
	if err != nil {
		t.Fatal(err)
	}
	if !m.Input.Equal(tensor.Shape{8}) || m.Config.Classes != 20 || m.Config.Layers != 12 {
		t.Errorf("described input %v, %d classes, %d layers; want [8], 20, 12", m.Input, m.Config.Classes, m.Config.Layers)
	}
}

func TestBuildTokenErrors(t *testing.T) {
	withArch(t, fakeLM)
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"sequence too long", Config{Seq: 1025}, "sequence length 1025 is longer than the model takes, 1024"},
		{"negative sequence", Config{Seq: -1}, "sequence length -1: need at least 1"},
		{"negative layers", Config{Layers: -2}, "layers -2: need at least 1"},
		{"negative vocabulary", Config{Vocab: -3}, "vocabulary -3: need at least 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Describe("fakelm", tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "fakelm: ") {
				t.Errorf("got %v, want an error of fakelm containing %q", err, tc.want)
			}
		})
	}
}

func TestSizedAndCheckSize(t *testing.T) {
	withArch(t, fakeLM)
	all := Config{Image: 64, Classes: 10, Width: 0.5, Seq: 2048, Vocab: 300, Layers: 2}
	tests := []struct {
		name      string
		model     string
		cfg       Config
		sized     Config
		field, in string // the *SizeError's field and a part of its reason; "" for none
	}{
		{"cnn", "resnet50", all, Config{Image: 64, Classes: 10, Width: 0.5}, "", ""},
		{"mlp", "mlp", all, Config{Classes: 10, Width: 0.5}, "", ""},
		{"language model", "fakelm", all, Config{Width: 0.5, Seq: 2048, Vocab: 300, Layers: 2}, "seq", "a sequence of 2048 tokens is longer than fakelm takes, 1024"},
		{"language model in range", "fakelm", Config{Seq: 1024}, Config{Seq: 1024}, "", ""},
		{"image below the minimum", "inceptionv3", Config{Image: 32, Seq: 1 << 20}, Config{Image: 32}, "image", "below the smallest inceptionv3 accepts"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := LookupArch(tc.model)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.Sized(tc.cfg); got.Record() != tc.sized.Record() {
				t.Errorf("Sized: got %+v, want %+v", got.Record(), tc.sized.Record())
			}
			err = a.CheckSize(tc.cfg)
			var se *SizeError
			switch {
			case tc.field == "" && err != nil:
				t.Errorf("CheckSize: %v", err)
			case tc.field != "" && (!errors.As(err, &se) || se.Field != tc.field || !strings.Contains(se.Why, tc.in)):
				t.Errorf("CheckSize: got %v, want a *SizeError of %s containing %q", err, tc.field, tc.in)
			}
		})
	}
}

func TestSizeVariantsOfTokens(t *testing.T) {
	withArch(t, fakeLM)
	v := SizeVariants{Images: []int{32}, Classes: []int{10, 100}, Widths: []float64{0.5}, Seqs: []int{64, 128}, Layers: []int{2}}
	lm, _ := LookupArch("fakelm")
	want := []Config{{Width: 0.5, Seq: 64, Layers: 2}, {Width: 0.5, Seq: 128, Layers: 2}}
	if got := v.Of(lm); !sameRecords(got, want) {
		t.Errorf("fakelm: got %+v, want %+v (classes and image ignored)", got, want)
	}
	cnn, _ := LookupArch("resnet50")
	want = []Config{{Image: 32, Classes: 10, Width: 0.5}, {Image: 32, Classes: 100, Width: 0.5}}
	if got := v.Of(cnn); !sameRecords(got, want) {
		t.Errorf("resnet50: got %+v, want %+v (seq and layers ignored)", got, want)
	}
	// The lists vary in the order of the fields, the last fastest.
	v = SizeVariants{Widths: []float64{1, 2}, Seqs: []int{8, 16}}
	want = []Config{{Width: 1, Seq: 8}, {Width: 1, Seq: 16}, {Width: 2, Seq: 8}, {Width: 2, Seq: 16}}
	if got := v.Of(lm); !sameRecords(got, want) {
		t.Errorf("order: got %+v, want %+v", got, want)
	}
}

func sameRecords(got, want []Config) bool {
	return slices.EqualFunc(got, want, func(a, b Config) bool { return a.Record() == b.Record() })
}

func TestSizeVariantsAddOr(t *testing.T) {
	var v SizeVariants
	v.Add(SizeRecord{Image: 32, Classes: 10, Width: 1})
	v.Add(SizeRecord{Classes: 256, Width: 1, Seq: 64, Vocab: 256, Layers: 2})
	v.Add(SizeRecord{Classes: 256, Width: 1, Seq: 64, Vocab: 256, Layers: 4})
	want := SizeVariants{Images: []int{32, 0}, Classes: []int{10, 256}, Widths: []float64{1}, Seqs: []int{0, 64}, Vocabs: []int{0, 256}, Layers: []int{0, 2, 4}}
	if !sameVariants(v, want) {
		t.Errorf("Add: got %+v, want %+v", v, want)
	}
	got := SizeVariants{Seqs: []int{8}}.Or(want)
	want.Seqs = []int{8}
	if !sameVariants(got, want) {
		t.Errorf("Or: got %+v, want %+v", got, want)
	}
}

func sameVariants(a, b SizeVariants) bool {
	return slices.Equal(a.Images, b.Images) && slices.Equal(a.Classes, b.Classes) && slices.Equal(a.Widths, b.Widths) &&
		slices.Equal(a.Seqs, b.Seqs) && slices.Equal(a.Vocabs, b.Vocabs) && slices.Equal(a.Layers, b.Layers)
}

// sizeFlag returns the size flag called name.
func sizeFlag(t *testing.T, name string) SizeFlag {
	t.Helper()
	for _, f := range SizeFlags() {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no size flag %q", name)
	return SizeFlag{}
}

func TestSizeFlagsTokens(t *testing.T) {
	withArch(t, fakeLM)
	for _, name := range []string{"seq", "vocab", "layers"} {
		t.Run(name, func(t *testing.T) {
			f := sizeFlag(t, name)
			var v SizeVariants
			for _, s := range []string{"64", "0"} {
				if err := f.Add(&v, s); err != nil {
					t.Fatal(err)
				}
			}
			if got := f.Values(v); !slices.Equal(got, []string{"64", "0"}) || !f.Whole {
				t.Errorf("values %v (whole %v), want [64 0] (whole)", got, f.Whole)
			}
			if err := f.Add(&v, "x"); err == nil || !strings.Contains(err.Error(), "not a whole number") {
				t.Errorf("Add(x): got %v, want not a whole number", err)
			}
			if err := v.Check(); err != nil {
				t.Errorf("Check: %v", err)
			}
			f.Add(&v, "-1")
			var se *SizeError
			if err := v.Check(); !errors.As(err, &se) || se.Field != name || se.Value != "-1" {
				t.Errorf("Check of -1: got %v, want a *SizeError of %s", err, name)
			}
			f.Clear(&v)
			if got := f.Values(v); len(got) != 0 {
				t.Errorf("after Clear: %v", got)
			}
			if why := f.Ignored(fakeLM); why != "" {
				t.Errorf("fakelm ignores --%s: %s", name, why)
			}
			cnn, _ := LookupArch("resnet50")
			if why := f.Ignored(cnn); why != "resnet50 takes no token sequences" {
				t.Errorf("resnet50 and --%s: got %q", name, why)
			}
		})
	}
	for name, want := range map[string]string{"image": "fakelm takes token sequences", "classes": "fakelm's classes are its vocabulary (--vocab)", "width": ""} {
		if got := sizeFlag(t, name).Ignored(fakeLM); got != want {
			t.Errorf("fakelm and --%s: got %q, want %q", name, got, want)
		}
	}
	mlp, _ := LookupArch("mlp")
	if got := sizeFlag(t, "image").Ignored(mlp); got != "mlp takes flat vectors" {
		t.Errorf("mlp and --image: got %q", got)
	}
}

// TestSizeFlagsSelect checks which recorded runs a value selects: its
// own, the default's for 0, and every run of a model that ignores the
// field.
func TestSizeFlagsSelect(t *testing.T) {
	withArch(t, fakeLM)
	lm := SizeRecord{Classes: 50257, Width: 1, Seq: 1024, Vocab: 50257, Layers: 4}
	cnn := SizeRecord{Image: 224, Classes: 1000, Width: 1}
	tests := []struct {
		name, flag, value, model string
		r                        SizeRecord
		want                     bool
	}{
		{"seq", "seq", "1024", "fakelm", lm, true},
		{"other seq", "seq", "64", "fakelm", lm, false},
		{"default seq", "seq", "0", "fakelm", lm, true},
		{"default layers", "layers", "0", "fakelm", lm, false}, // the default is 12
		{"layers", "layers", "4", "fakelm", lm, true},
		{"vocab", "vocab", "50257", "fakelm", lm, true},
		{"other vocab", "vocab", "256", "fakelm", lm, false},
		{"classes of a language model", "classes", "10", "fakelm", lm, true},
		{"image of a language model", "image", "32", "fakelm", lm, true},
		{"seq of a cnn", "seq", "64", "resnet50", cnn, true},
		{"image of a cnn", "image", "0", "resnet50", cnn, true},
		{"other image of a cnn", "image", "32", "resnet50", cnn, false},
		{"default classes of a cnn", "classes", "0", "resnet50", cnn, true},
		{"seq of an unknown model", "seq", "64", "gpt9", SizeRecord{Seq: 64}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := sizeFlag(t, tc.flag)
			var v SizeVariants
			if err := f.Add(&v, tc.value); err != nil {
				t.Fatal(err)
			}
			if got := f.Selects(v, 0, tc.model, tc.r); got != tc.want {
				t.Errorf("--%s %s of %s selects %+v: got %v, want %v", tc.flag, tc.value, tc.model, tc.r, got, tc.want)
			}
		})
	}
}
