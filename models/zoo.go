package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/pipecast/pipecast/tensor"
)

// Config sizes a zoo model. Zero values select the model's defaults.
type Config struct {
	// Classes is the number of output classes (default 1000; the mlp's
	// default is the last of its Sizes).
	Classes int
	// Image is the input's height and width (default 224; 299 for
	// inceptionv3). Ignored by the mlp.
	Image int
	// Width multiplies every channel count and hidden width (default 1,
	// torchvision's network); counts are rounded and at least 1.
	Width float64
	// NoDropout builds dropout layers with probability 0, so a training
	// forward is deterministic.
	NoDropout bool
	// Sizes are the mlp's layer widths, input first and classes last
	// (default 784, 1024, 1024, 10).
	Sizes []int

	// Seq, Vocab and Layers size a language model (an Arch with Tokens)
	// and are 0 for every other model, which ignores them. A language
	// model's outputs are its vocabulary, a next-token distribution at
	// every position: its Classes is its Vocab, whatever Classes was
	// given, so that what reads Classes (the data's labels, the loss)
	// reads the vocabulary.

	// Seq is the sequence length: the tokens of one sample (default
	// Tokens.Seq).
	Seq int
	// Vocab is the vocabulary size: token ids are 0 … Vocab−1 (default
	// Tokens.Vocab).
	Vocab int
	// Layers is the number of decoder layers (default Tokens.Layers).
	Layers int
}

// Arch describes one network of the zoo.
type Arch struct {
	Name        string
	Description string
	// DefaultImage is the input size torchvision's weights expect; 0 for
	// models that take flat vectors.
	DefaultImage int
	// MinImage is the smallest input size the network accepts.
	MinImage int
	// Tokens is set for a language model, whose input is a sequence of
	// token ids (one sample: Config.Seq ids as float32 values) with a
	// label at every position: it holds the defaults of Config's Seq,
	// Vocab and Layers. A model without it (a CNN, the mlp) ignores
	// those fields and records them as 0, as the mlp does the image.
	Tokens *TokenSize
	// Optimizer is the optimizer the model's runs use unless told
	// otherwise (OptimizerOf): DefaultOptimizer when empty; AdamW for
	// the transformers, as they are trained.
	Optimizer string
	build     func(b *Builder) ([]*Block, error)
	defaults  func(c *Config)
	// field is how the family's files differ from its layers (hf.go);
	// nil where they do not.
	field fieldFormat
}

// Block is the smallest piece a pipeline may split the model at: a layer
// whose parameters carry their full state_dict names, with its shapes and
// costs per sample.
type Block struct {
	// Name identifies the block: "features.0", "layer1.0", "Mixed_5b".
	Name  string
	Layer Layer
	// In and Out are the shapes of one sample's input and output.
	In, Out tensor.Shape
	Cost    BlockCost
}

// BlockCost is what a block costs, per sample at the configured input.
type BlockCost struct {
	Params int64 // trainable scalars
	// MACs are the forward pass's multiply-accumulates in convolutions
	// and linear layers, the usual measure of a network's work.
	MACs int64
	// OutputBytes is the size of the block's output.
	OutputBytes int64
	// SavedBytes is what the block keeps for its backward after its
	// forward, its output not counted (the next block keeps that if it
	// needs it), its input counted when kept.
	SavedBytes int64
}

// Model is a network of the zoo, split into blocks.
type Model struct {
	Arch   Arch
	Config Config // with defaults filled in
	// Input is the shape of one sample: [3, H, W], or [features].
	Input  tensor.Shape
	Blocks []*Block
	// Net runs all blocks in order; its parameter names are the
	// state_dict names of the torchvision model.
	Net *Sequential
}

var archs = map[string]Arch{}

func register(a Arch) { archs[a.Name] = a }

// Archs returns the zoo's networks sorted by name.
func Archs() []Arch {
	out := make([]Arch, 0, len(archs))
	for _, a := range archs {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// LookupArch returns the network registered under name.
func LookupArch(name string) (Arch, error) {
	a, ok := archs[name]
	if !ok {
		var names []string
		for _, a := range Archs() {
			names = append(names, a.Name)
		}
		return Arch{}, fmt.Errorf("unknown model %q (the zoo has: %s)", name, strings.Join(names, ", "))
	}
	return a, nil
}

// Build constructs a zoo model on dev with parameters initialised as
// torchvision initialises them, from rng. With a nil rng parameters keep
// their allocated values (a shape-only build). Block costs are
// Describe's, measured on a meta device of their own: they cost neither
// time nor memory, and no kernel runs on dev, so its accounting (or the
// record of a device that wraps another to note the kernels it runs)
// holds the model alone.
func Build(dev tensor.Device, name string, cfg Config, rng *rand.Rand) (*Model, error) {
	m, err := build(dev, name, cfg, rng)
	if err != nil {
		return nil, err
	}
	costs, err := Describe(name, cfg)
	if err != nil {
		m.Release()
		return nil, err
	}
	for i, b := range m.Blocks {
		b.Cost = costs.Blocks[i].Cost
	}
	return m, nil
}

// Describe returns a model's structure and costs without allocating its
// parameters: its layers live on a meta device and must not be run for
// training. The meta backend is opened by name through the tensor
// registry; a program that describes models (or builds them, which
// describes them too) must link it, with a blank import of
// github.com/pipecast/pipecast/tensor/meta.
func Describe(name string, cfg Config) (*Model, error) {
	dev, counter, err := openCounting(tensor.MetaBackend)
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", name, err)
	}
	m, err := build(dev, name, cfg, nil)
	if err != nil {
		return nil, err
	}
	return m, analyze(dev, counter, m)
}

// openCounting opens a device of the named backend (the meta backend's,
// on which Describe builds and measures models) and returns it with its
// count of multiply-accumulates.
func openCounting(backend string) (tensor.Device, tensor.MACCounter, error) {
	if _, err := tensor.Lookup(backend); err != nil {
		return nil, nil, fmt.Errorf("no %q backend registered: the program must import _ %q",
			backend, "github.com/pipecast/pipecast/tensor/meta")
	}
	dev, err := tensor.Open(backend, tensor.Options{Threads: 1})
	if err != nil {
		return nil, nil, err
	}
	counter, ok := dev.(tensor.MACCounter)
	if !ok {
		dev.Close()
		return nil, nil, fmt.Errorf("the %q backend's device %s does not count multiply-accumulates", backend, dev.Name())
	}
	return dev, counter, nil
}

// Resolved returns cfg as the model called name is built from it: the
// model's defaults filled in where cfg leaves them zero (its classes, its
// input size, width 1). Two configurations that resolve alike build the
// same model.
func Resolved(name string, cfg Config) (Config, error) {
	a, err := LookupArch(name)
	if err != nil {
		return cfg, err
	}
	return a.resolve(cfg), nil
}

func (a Arch) resolve(cfg Config) Config {
	cfg = a.resolveTokens(cfg)
	if a.defaults != nil {
		a.defaults(&cfg)
	}
	if cfg.Width == 0 {
		cfg.Width = 1
	}
	return cfg
}

func build(dev tensor.Device, name string, cfg Config, rng *rand.Rand) (*Model, error) {
	a, err := LookupArch(name)
	if err != nil {
		return nil, err
	}
	cfg = a.resolve(cfg)
	switch {
	case cfg.Width < 0 || math.IsNaN(cfg.Width) || math.IsInf(cfg.Width, 0):
		return nil, fmt.Errorf("%s: width %v must be positive", name, cfg.Width)
	case a.Tokens == nil && cfg.Classes < 1:
		// A language model's classes are its vocabulary, which
		// checkTokens names when it is wrong.
		return nil, fmt.Errorf("%s: %d classes: need at least 1", name, cfg.Classes)
	case a.DefaultImage > 0 && cfg.Image < a.MinImage:
		return nil, fmt.Errorf("%s: input size %d is below the smallest the network accepts, %d", name, cfg.Image, a.MinImage)
	}
	if err := a.checkTokens(cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	b := &Builder{Dev: dev, Rng: rng, Config: cfg}
	blocks, err := a.build(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	m := &Model{Arch: a, Config: cfg, Input: b.Input, Blocks: blocks}
	children := make([]Child, len(blocks))
	for i, bl := range blocks {
		children[i] = Child{Layer: bl.Layer}
	}
	m.Net = NewSequential(children...)
	shape := m.Input
	for _, bl := range blocks {
		bl.In = shape.Clone()
		out, err := bl.Layer.OutShape(append(tensor.Shape{1}, shape...))
		if err != nil {
			m.Release()
			return nil, fmt.Errorf("%s: block %s: %w", name, bl.Name, err)
		}
		bl.Out = out[1:].Clone()
		bl.Cost.Params = int64(ParamCount(bl.Layer))
		shape = bl.Out
	}
	return m, nil
}

// costBatch is the batch the meta analysis runs at: 2, since batch-norm
// in training mode needs more than one value per channel.
const costBatch = 2

// analyze runs every block's training forward on the meta device dev and
// reads the MACs counter counted (counter is dev's) and the bytes left
// live.
func analyze(dev tensor.Device, counter tensor.MACCounter, m *Model) error {
	for _, bl := range m.Blocks {
		x := dev.Alloc(tensor.Boundary, append(tensor.Shape{costBatch}, bl.In...)...)
		before := dev.Memory().LiveTotalBytes - x.Bytes()
		macs := counter.MACs()
		p := &Pass{Dev: dev, Train: true, Grad: true}
		y, ctx := bl.Layer.Forward(p, x)
		x.Release()
		live := dev.Memory().LiveTotalBytes - before
		bl.Cost.MACs = (counter.MACs() - macs) / costBatch
		bl.Cost.OutputBytes = y.Bytes() / costBatch
		bl.Cost.SavedBytes = (live - y.Bytes()) / costBatch
		// Gradients are allocated by backwards only, so the forward's
		// live bytes are activations alone.
		if ctx != nil {
			ctx.Release()
		}
		y.Release()
	}
	return nil
}

// Params returns the model's trainable scalars, a parameter that blocks
// share (a Tie) counted once: blocks' Cost.Params each count it, since
// each stage holding one of its uses holds a copy.
func (m *Model) Params() int64 {
	return int64(ParamCount(m.Net))
}

// MACs returns the forward multiply-accumulates per sample.
func (m *Model) MACs() int64 {
	var n int64
	for _, b := range m.Blocks {
		n += b.Cost.MACs
	}
	return n
}

// ActivationBytes returns the bytes a training forward keeps per sample:
// every block's saved bytes and the final output.
func (m *Model) ActivationBytes() int64 {
	var n int64
	for _, b := range m.Blocks {
		n += b.Cost.SavedBytes
	}
	if len(m.Blocks) > 0 {
		n += m.Blocks[len(m.Blocks)-1].Cost.OutputBytes
	}
	return n
}

// Stage returns blocks [lo, hi) as one layer, for a pipeline stage; the
// parameter names stay the model's.
func (m *Model) Stage(lo, hi int) *Sequential {
	children := make([]Child, 0, hi-lo)
	for _, b := range m.Blocks[lo:hi] {
		children = append(children, Child{Layer: b.Layer})
	}
	return NewSequential(children...)
}

// Release frees every parameter, gradient, optimizer buffer and buffer
// of the model.
func (m *Model) Release() { ReleaseLayer(m.Net) }

// ReleaseLayer frees every parameter (value, gradient, optimizer state)
// and tensor buffer of l and its children.
func ReleaseLayer(l Layer) {
	for _, p := range Params(l) {
		p.Param.Release()
	}
	for _, b := range Buffers(l) {
		if b.Buffer.Value != nil {
			b.Buffer.Value.Release()
			b.Buffer.Value = nil
		}
	}
}

// Builder is what a zoo network's constructor builds with: the device,
// the initialising generator (nil for shape-only builds), and the
// configuration with defaults filled in.
type Builder struct {
	Dev    tensor.Device
	Rng    *rand.Rand
	Config Config
	// Input is set by the constructor: the shape of one sample.
	Input     tensor.Shape
	dropoutID uint64
}

// Channels scales a channel count or hidden width of torchvision's
// network by the configured width: rounded, at least 1.
func (b *Builder) Channels(c int) int {
	return max(1, int(math.Round(float64(c)*b.Config.Width)))
}

// Dropout returns a dropout layer with probability p (0 under NoDropout)
// and the next dropout id, so that every dropout of a model draws its own
// mask.
func (b *Builder) Dropout(p float32) *Dropout {
	if b.Config.NoDropout {
		p = 0
	}
	b.dropoutID++
	return NewDropout(p, b.dropoutID)
}

// Block makes a block of the named children: full state_dict names,
// e.g. Child{"features.0", conv}.
func (b *Builder) Block(name string, children ...Child) *Block {
	return &Block{Name: name, Layer: NewSequential(children...)}
}

// RandomInput returns n samples of input the model takes, drawn from rng,
// for measurements that need no real data: standard normal values for an
// image or vector model, uniform token ids in [0, Vocab) for a language
// model (whose embedding refuses anything else).
func (m *Model) RandomInput(rng *rand.Rand, n int) []float32 {
	in := make([]float32, n*m.Input.Numel())
	for i := range in {
		if m.Arch.Tokens != nil {
			in[i] = float32(rng.IntN(m.Config.Vocab))
		} else {
			in[i] = float32(rng.NormFloat64())
		}
	}
	return in
}
