package modeltest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/tensor"
)

// testDescribe checks the model at the reference configuration against
// c.Full, and the structure every model must have (checkChain).
func testDescribe(t *testing.T, c *Case) {
	m, err := models.Describe(c.Model, models.Config{})
	if err != nil {
		t.Fatal(err)
	}
	f := c.Full
	if lm := isLanguage(m); lm != (f.Seq != 0) || (lm && (f.Classes != 0 || f.Image != 0)) {
		t.Fatalf("the model is a language model: %v; the case gives Full.Seq %d, Classes %d, Image %d (a language model's Seq alone)",
			lm, f.Seq, f.Classes, f.Image)
	}
	if a := m.Arch; a.DefaultImage != f.Image || a.MinImage != f.MinImage {
		t.Errorf("arch: DefaultImage %d and MinImage %d, want %d and %d", a.DefaultImage, a.MinImage, f.Image, f.MinImage)
	}
	classes := f.Classes
	if isLanguage(m) {
		classes = f.Vocab
		if got := m.Arch.Tokens.MaxSeq; got != f.MaxSeq {
			t.Errorf("arch: longest sequence %d, want %d", got, f.MaxSeq)
		}
	}
	if cfg := m.Config; cfg.Classes != classes || cfg.Image != f.Image || cfg.Width != 1 {
		t.Errorf("defaults: got %d classes, image %d, width %v; want %d, %d, 1", cfg.Classes, cfg.Image, cfg.Width, classes, f.Image)
	}
	if cfg := m.Config; cfg.Seq != f.Seq || cfg.Vocab != f.Vocab || cfg.Layers != f.DecoderLayers {
		t.Errorf("defaults: got seq %d, vocab %d, %d layers; want %d, %d, %d", cfg.Seq, cfg.Vocab, cfg.Layers, f.Seq, f.Vocab, f.DecoderLayers)
	}
	if !m.Input.Equal(f.Input) {
		t.Errorf("input: got %v, want %v", m.Input, f.Input)
	}
	if got := m.Params(); got != f.Params {
		t.Errorf("params: got %d, want %d", got, f.Params)
	}
	if got := m.MACs(); got != f.MACs {
		t.Errorf("MACs per sample: got %d, want %d", got, f.MACs)
	}
	if got := m.ActivationBytes(); f.ActivationBytes != 0 && got != f.ActivationBytes {
		t.Errorf("activation bytes: got %d, want %d", got, f.ActivationBytes)
	}
	var names []string
	for _, b := range m.Blocks {
		names = append(names, b.Name)
	}
	if got, want := strings.Join(names, " "), strings.Join(f.Blocks, " "); got != want {
		t.Errorf("blocks:\ngot  %s\nwant %s", got, want)
	}
	for _, s := range f.Stages {
		checkStage(t, m, s)
	}
	kinds := map[string]int{}
	models.Walk(m.Net, func(_ string, l models.Layer) {
		kinds[strings.TrimPrefix(fmt.Sprintf("%T", l), "*models.")]++
	})
	for kind, want := range f.Layers {
		if kinds[kind] != want {
			t.Errorf("got %d layers of kind %s, want %d", kinds[kind], kind, want)
		}
	}
	checkChain(t, m)
}

// checkStage checks the blocks of stage s.
func checkStage(t *testing.T, m *models.Model, s Stage) {
	t.Helper()
	var params, macs, output, saved int64
	n := 0
	for _, b := range m.Blocks {
		if b.Name != s.Name && !strings.HasPrefix(b.Name, s.Name+".") {
			continue
		}
		n++
		params += b.Cost.Params
		macs += b.Cost.MACs
		output += b.Cost.OutputBytes
		saved += b.Cost.SavedBytes
		if !b.Out.Equal(s.Out) {
			t.Errorf("block %s: output %v, want %v", b.Name, b.Out, s.Out)
		}
	}
	switch {
	case n == 0:
		t.Errorf("stage %s: no such blocks", s.Name)
	case params != s.Params || macs != s.MACs:
		t.Errorf("%s: got %d params and %d MACs, want %d and %d", s.Name, params, macs, s.Params, s.MACs)
	case s.OutputBytes != 0 && output != s.OutputBytes:
		t.Errorf("%s: got %d output bytes, want %d", s.Name, output, s.OutputBytes)
	case s.SavedBytes != 0 && saved != s.SavedBytes:
		t.Errorf("%s: got %d saved bytes, want %d", s.Name, saved, s.SavedBytes)
	}
}

// checkChain checks what every model must be: uniquely named blocks,
// each taking the previous one's output, whose parameter counts add up to
// the network's (a tied parameter, which every block that uses it
// counts, once), with an output of four bytes per float32 element, and
// with multiply-accumulates wherever a convolution or a linear layer is.
func checkChain(t *testing.T, m *models.Model) {
	t.Helper()
	if len(m.Blocks) == 0 {
		t.Fatal("no blocks")
	}
	seen := map[string]bool{}
	in := m.Input
	var params int64
	// A tied parameter is in the cost of every block that uses it, and
	// in the network's once.
	owner := map[*models.Param]bool{}
	var copies int64
	for _, b := range m.Blocks {
		for _, np := range models.Params(b.Layer) {
			if owner[np.Param] {
				copies += int64(np.Param.Value.Len())
			}
			owner[np.Param] = true
		}
		if b.Name == "" || seen[b.Name] {
			t.Errorf("block name %q: empty or not unique", b.Name)
		}
		seen[b.Name] = true
		if !b.In.Equal(in) {
			t.Errorf("block %s: input %v, want the previous output %v", b.Name, b.In, in)
		}
		in = b.Out
		if got := int64(models.ParamCount(b.Layer)); b.Cost.Params != got {
			t.Errorf("block %s: cost has %d params, its layers %d", b.Name, b.Cost.Params, got)
		}
		params += b.Cost.Params
		if want := 4 * int64(b.Out.Numel()); b.Cost.OutputBytes != want {
			t.Errorf("block %s: %d output bytes, want %d (4 × %v)", b.Name, b.Cost.OutputBytes, want, b.Out)
		}
		if b.Cost.SavedBytes < 0 || b.Cost.MACs < 0 {
			t.Errorf("block %s: negative cost %+v", b.Name, b.Cost)
		}
		if hasMACs(b.Layer) && b.Cost.MACs == 0 {
			t.Errorf("block %s: no multiply-accumulates counted", b.Name)
		}
	}
	if got := int64(models.ParamCount(m.Net)); got != params-copies || m.Params() != params-copies {
		t.Errorf("params: network %d, Params() %d, blocks %d less %d of tied copies", got, m.Params(), params, copies)
	}
	if (copies > 0) != (len(m.Ties()) > 0) {
		t.Errorf("%d tied parameters, but the blocks hold %d values of copies", len(m.Ties()), copies)
	}
	if m.ActivationBytes() <= 0 {
		t.Errorf("activation bytes %d, want some", m.ActivationBytes())
	}
	out, err := m.Net.OutShape(append(tensor.Shape{3}, m.Input...))
	if want := append(tensor.Shape{3}, in...); err != nil || !out.Equal(want) {
		t.Errorf("network's OutShape: got %v (%v), want %v", out, err, want)
	}
}

// hasMACs reports whether l holds a layer that multiplies and
// accumulates.
func hasMACs(l models.Layer) bool {
	found := false
	models.Walk(l, func(_ string, l models.Layer) {
		switch l.(type) {
		case *models.Conv2D, *models.Linear:
			found = true
		}
	})
	return found
}

// testSizes checks the configurations of c.Sizes, the ones no model
// accepts, and that the classes (a language model's vocabulary) change
// the head alone.
func testSizes(t *testing.T, c *Case) {
	a, err := models.LookupArch(c.Model)
	if err != nil {
		t.Fatal(err)
	}
	language := a.Tokens != nil
	sizes := []Size{{Name: "negative width", Config: models.Config{Width: -0.5}, Err: "width"}}
	if f := c.Full; !language {
		sizes = append(sizes, Size{Name: "negative classes", Config: models.Config{Classes: -1}, Err: "classes"})
	} else {
		// A language model's classes are its vocabulary, whatever
		// Classes says (checkHead); its own fields are checked instead.
		sizes = append(sizes,
			Size{Name: "negative sequence length", Config: models.Config{Seq: -1}, Err: "sequence length"},
			Size{Name: "negative vocabulary", Config: models.Config{Vocab: -1}, Err: "vocabulary"},
			Size{Name: "negative layers", Config: models.Config{Layers: -1}, Err: "layers"},
			Size{Name: "one token", Config: models.Config{Seq: 1}},
		)
		if f.MaxSeq > 0 {
			sizes = append(sizes,
				Size{Name: "above the longest sequence", Config: models.Config{Seq: f.MaxSeq + 1}, Err: strconv.Itoa(f.MaxSeq)},
				Size{Name: "the longest sequence", Config: models.Config{Seq: f.MaxSeq}})
		}
	}
	sizes = append(sizes, c.Sizes...)
	if f := c.Full; f.Image > 0 {
		sizes = append(sizes, Size{Name: "negative image", Config: models.Config{Image: -1}, Err: "below the smallest"})
		if f.MinImage > 1 {
			sizes = append(sizes, Size{Name: "below the smallest image", Config: models.Config{Image: f.MinImage - 1}, Err: strconv.Itoa(f.MinImage)})
		}
		sizes = append(sizes, Size{Name: "the smallest image", Config: models.Config{Image: f.MinImage}})
	}
	for _, s := range sizes {
		t.Run(s.Name, func(t *testing.T) {
			m, err := models.Describe(c.Model, s.Config)
			if s.Err != "" {
				if err == nil || !strings.Contains(err.Error(), s.Err) {
					t.Errorf("got error %v, want one containing %q", err, s.Err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Params != 0 && m.Params() != s.Params {
				t.Errorf("params: got %d, want %d", m.Params(), s.Params)
			}
			if s.MACs != 0 && m.MACs() != s.MACs {
				t.Errorf("MACs: got %d, want %d", m.MACs(), s.MACs)
			}
			for _, b := range m.Blocks {
				if want, ok := s.Outs[b.Name]; ok && !b.Out.Equal(want) {
					t.Errorf("block %s: output %v, want %v", b.Name, b.Out, want)
				}
			}
			for name := range s.Outs {
				if !hasBlock(m, name) {
					t.Errorf("no block %s", name)
				}
			}
			checkChain(t, m)
			// Nothing smaller than the smallest image goes through.
			if img := m.Config.Image; img > 0 && img == c.Full.MinImage {
				if _, err := m.Net.OutShape(tensor.Shape{1, m.Input[0], img - 1, img - 1}); err == nil {
					t.Errorf("OutShape of a %d×%d input: got no error", img-1, img-1)
				}
			}
		})
	}
	t.Run("classes change the head alone", func(t *testing.T) { checkHead(t, c) })
	if language {
		t.Run("the sequence length changes no parameter", func(t *testing.T) { checkSeqNoParams(t, c) })
	}
}

// hasBlock reports whether m has a block called name.
func hasBlock(m *models.Model, name string) bool {
	for _, b := range m.Blocks {
		if b.Name == name {
			return true
		}
	}
	return false
}

// checkHead checks that another number of classes changes the first
// dimension of the parameters c.Head names and no other shape. A
// language model's classes are its vocabulary: Classes changes nothing
// (checked too), Vocab its embedding and lm_head.
func checkHead(t *testing.T, c *Case) {
	full, err := models.Describe(c.Model, models.Config{})
	if err != nil {
		t.Fatal(err)
	}
	classes := 10
	if full.Config.Classes == classes {
		classes = 7
	}
	cfg := models.Config{Classes: classes}
	if isLanguage(full) {
		cfg = models.Config{Vocab: classes}
		ignored, err := models.Describe(c.Model, models.Config{Classes: classes})
		if err != nil {
			t.Fatal(err)
		}
		if got := ignored.Config.Classes; got != full.Config.Vocab {
			t.Errorf("%d classes asked of a language model: got %d classes, want its vocabulary %d", classes, got, full.Config.Vocab)
		}
		checkSameParams(t, full, ignored, fmt.Sprintf("%d classes asked", classes))
	}
	small, err := models.Describe(c.Model, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if small.Config.Classes != classes {
		t.Errorf("got %d classes, want %d", small.Config.Classes, classes)
	}
	head := map[string]bool{}
	for _, name := range c.Head {
		head[name] = true
	}
	a, b := models.Params(full.Net), models.Params(small.Net)
	if len(a) != len(b) {
		t.Fatalf("got %d parameters with %d classes, want %d", len(b), classes, len(a))
	}
	found := 0
	for i := range a {
		want := a[i].Param.Value.Shape().Clone()
		if head[a[i].Name] {
			found++
			want[0] = classes
		}
		if got := b[i].Param.Value.Shape(); b[i].Name != a[i].Name || !got.Equal(want) {
			t.Errorf("parameter %d with %d classes: got %s %v, want %s %v", i, classes, b[i].Name, got, a[i].Name, want)
		}
	}
	if found != len(c.Head) {
		t.Errorf("found %d of the head's parameters %v", found, c.Head)
	}
}

// checkSeqNoParams checks that a language model's sequence length
// changes no parameter: GPT-2's learned positions are n_positions rows
// whatever the sequence, Llama's rotary positions have none.
func checkSeqNoParams(t *testing.T, c *Case) {
	full, err := models.Describe(c.Model, models.Config{})
	if err != nil {
		t.Fatal(err)
	}
	short, err := models.Describe(c.Model, models.Config{Seq: 8})
	if err != nil {
		t.Fatal(err)
	}
	if !short.Input.Equal(tensor.Shape{8}) {
		t.Errorf("input at seq 8: got %v, want [8]", short.Input)
	}
	checkSameParams(t, full, short, "seq 8")
}

// checkSameParams checks that b has a's parameters: names and shapes.
func checkSameParams(t *testing.T, a, b *models.Model, what string) {
	t.Helper()
	pa, pb := models.Params(a.Net), models.Params(b.Net)
	if len(pa) != len(pb) {
		t.Fatalf("%s: got %d parameters, want %d", what, len(pb), len(pa))
	}
	for i := range pa {
		if pa[i].Name != pb[i].Name || !pa[i].Param.Value.Shape().Equal(pb[i].Param.Value.Shape()) {
			t.Errorf("%s: parameter %d is %s %v, want %s %v", what, i, pb[i].Name, pb[i].Param.Value.Shape(),
				pa[i].Name, pa[i].Param.Value.Shape())
		}
	}
}

// testStructure builds the model at c.Config on the CPU device and checks
// it against Describe's at the same configuration: the same blocks,
// shapes and costs; and releasing it frees everything.
func testStructure(t *testing.T, c *Case) {
	d, err := models.Describe(c.Model, c.Config)
	if err != nil {
		t.Fatal(err)
	}
	checkChain(t, d)
	dev := NewDevice(t)
	m, err := models.Build(dev, c.Model, c.Config, NewRand(1))
	if err != nil {
		t.Fatal(err)
	}
	checkChain(t, m)
	if len(m.Blocks) != len(d.Blocks) {
		t.Fatalf("built %d blocks, described %d", len(m.Blocks), len(d.Blocks))
	}
	for i, b := range m.Blocks {
		w := d.Blocks[i]
		if b.Name != w.Name || !b.In.Equal(w.In) || !b.Out.Equal(w.Out) || b.Cost != w.Cost {
			t.Errorf("block %d: built %s %v→%v %+v, described %s %v→%v %+v", i, b.Name, b.In, b.Out, b.Cost, w.Name, w.In, w.Out, w.Cost)
		}
	}
	if got := models.ParamCount(m.Stage(0, len(m.Blocks))); int64(got) != m.Params() {
		t.Errorf("a stage of every block: %d params, want %d", got, m.Params())
	}
	m.Release()
	CheckNoLeak(t, dev)
}
