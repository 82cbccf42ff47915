package models

import (
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strings"

	"github.com/pipecast/pipecast/tensor"
)

// An export is a file of weights, an .npz archive or a .safetensors file,
// holding a zoo model's state_dict in the field's format (torchvision's
// names for the CNNs; Hugging Face's names, layouts and config.json for
// the transformers: see hf.go), followed by one training step that torch
// can replay: the input, the targets, the logits, the loss and every
// parameter's gradient. These are its names beside the state_dict's.
const (
	// ExportInput is the batch: float32 [B, sample...], or a language
	// model's token ids, int64 [B, S].
	ExportInput = "input"
	// ExportTarget is the labels: int64 [B], one class a sample, or
	// int64 [B, S], the token that follows each position.
	ExportTarget = "target"
	// ExportLogits is float32 [B, classes], or [B, S, V].
	ExportLogits = "logits"
	// ExportLoss is float32 0-d: the mean cross entropy over every label.
	ExportLoss = "loss"
	// ExportGradPrefix starts the names of the gradients: "grad." and
	// the parameter's state_dict name, in the field's layout as the
	// parameter is.
	ExportGradPrefix = "grad."
)

// IsExportKey reports whether name is one of an export's arrays beyond
// the state_dict. No state_dict name of the zoo is one: torch's names
// always end in a parameter or buffer name after a module's, and no
// module of the zoo is named "grad".
func IsExportKey(name string) bool {
	switch name {
	case ExportInput, ExportTarget, ExportLogits, ExportLoss:
		return true
	}
	return strings.HasPrefix(name, ExportGradPrefix)
}

// Seeds are split into streams, so that the input does not change when
// an initialiser draws differently.
const (
	initStream = 0x696e6974 // "init": the parameters
	dataStream = 0x64617461 // "data": the input and targets
)

// WeightFormat is the format of a file of weights.
type WeightFormat string

// The formats of files of weights, each named by its file extension.
const (
	// FormatNPZ is numpy's .npz archive (npz.go); the zero WeightFormat
	// means it too.
	FormatNPZ WeightFormat = "npz"
	// FormatSafetensors is Hugging Face's .safetensors (safetensors.go).
	FormatSafetensors WeightFormat = "safetensors"
)

// WeightFormatOf returns the format a path's extension names: .npz or
// .safetensors.
func WeightFormatOf(path string) (WeightFormat, error) {
	switch ext := filepath.Ext(path); ext {
	case ".npz":
		return FormatNPZ, nil
	case ".safetensors":
		return FormatSafetensors, nil
	case "":
		return "", fmt.Errorf("%s: no extension to name the format: name the file .npz or .safetensors", path)
	default:
		return "", fmt.Errorf("%s: unknown format %q: name the file .npz or .safetensors", path, ext)
	}
}

// NewArrayWriter returns a writer of format to w (stored .npz entries, as
// numpy.savez writes them).
func NewArrayWriter(format WeightFormat, w io.Writer) (ArrayWriter, error) {
	switch format {
	case FormatNPZ, "":
		return NewNPZWriter(w, false), nil
	case FormatSafetensors:
		return NewSafetensorsWriter(w), nil
	}
	return nil, fmt.Errorf("unknown weight format %q (have %s, %s)", format, FormatNPZ, FormatSafetensors)
}

// WeightsFile is an open file of weights: *NPZReader or
// *SafetensorsReader.
type WeightsFile interface {
	StateSource
	// FieldConfig returns the config.json the file holds, or nil.
	FieldConfig() ([]byte, error)
	Close() error
}

// OpenWeightsFile opens the file at path in the format its extension
// names (WeightFormatOf).
func OpenWeightsFile(path string) (WeightsFile, error) {
	format, err := WeightFormatOf(path)
	if err != nil {
		return nil, err
	}
	if format == FormatSafetensors {
		return OpenSafetensorsFile(path)
	}
	return OpenNPZFile(path)
}

// ExportOptions choose the model and the step an export records.
type ExportOptions struct {
	Model  string
	Config Config // NoDropout is forced on, so that torch can replay the step
	Batch  int
	Seed   uint64
	// Format is the file's format; FormatNPZ when empty.
	Format WeightFormat
}

// ExportResult describes a written export.
type ExportResult struct {
	// Names are the arrays written, in the order given to the writer (a
	// .safetensors file orders them as its format does).
	Names []string
	Loss  float64
	Bytes int64 // the file's size
}

// Export builds opts.Model on dev with parameters initialised from
// opts.Seed and writes to w, in opts.Format: its state_dict before
// training in the field's format (WriteStateDict: num_batches_tracked as
// int64 0-d arrays; a transformer's config.json, its Conv1D weights
// transposed, its tied head once), then "input", a batch of opts.Batch
// samples drawn from N(0, 1) or, for a language model, of token ids drawn
// uniformly, "target", classes drawn uniformly or each position's next
// token, and the "logits", the "loss" (cross entropy with mean reduction
// over every label, torch's default) and the gradient "grad.<name>" of
// every parameter after one training-mode forward and backward. The same
// options on a device of as many threads write the same bytes.
func Export(dev tensor.Device, opts ExportOptions, w io.Writer) (ExportResult, error) {
	if opts.Batch < 1 {
		return ExportResult{}, fmt.Errorf("export %s: batch %d: need at least 1 sample", opts.Model, opts.Batch)
	}
	aw, err := NewArrayWriter(opts.Format, w)
	if err != nil {
		return ExportResult{}, fmt.Errorf("export %s: %w", opts.Model, err)
	}
	cfg := opts.Config
	cfg.NoDropout = true
	m, err := Build(dev, opts.Model, cfg, rand.New(rand.NewPCG(opts.Seed, initStream)))
	if err != nil {
		return ExportResult{}, fmt.Errorf("export: %w", err)
	}
	defer m.Release()
	if opts.Batch == 1 && hasBatchNorm(m.Net) {
		// Training-mode batch norm of one sample fails on 1×1 feature
		// maps, which the zoo's networks reach at small inputs; torch
		// raises there too.
		return ExportResult{}, fmt.Errorf("export %s: batch 1: training-mode batch norm needs more than one sample", opts.Model)
	}
	fail := func(err error) (ExportResult, error) {
		return ExportResult{}, fmt.Errorf("export %s: %w", opts.Model, err)
	}
	res := ExportResult{}
	if res.Names, err = writeStateDict(aw, m); err != nil {
		return fail(err)
	}
	f32 := func(name string, shape tensor.Shape, data []float32) error {
		res.Names = append(res.Names, name)
		return aw.Float32(name, shape, data)
	}
	i64 := func(name string, shape tensor.Shape, data []int64) error {
		res.Names = append(res.Names, name)
		return aw.Int64(name, shape, data)
	}

	step := drawStep(m, opts.Batch, rand.New(rand.NewPCG(opts.Seed, dataStream)))
	logits, loss, err := trainStep(dev, m, opts.Seed, step.shape, step.input, step.labels)
	if err != nil {
		return fail(err)
	}
	res.Loss = loss
	in, target, out := stepShapes(m, opts.Batch)
	writeInput := func() error { return f32(ExportInput, in, step.input) }
	if step.ids != nil {
		writeInput = func() error { return i64(ExportInput, in, step.ids) }
	}
	steps := []func() error{
		writeInput,
		func() error { return i64(ExportTarget, target, step.target()) },
		func() error { return f32(ExportLogits, out, logits) },
		func() error { return f32(ExportLoss, tensor.Shape{}, []float32{float32(loss)}) },
	}
	layout := layoutOf(m)
	for _, np := range Params(m.Net) {
		steps = append(steps, func() error {
			name := ExportGradPrefix + np.Name
			shape, data := layout.toField(name, np.Param.Value.Shape(), tensor.ToHost(np.Param.Grad))
			return f32(name, shape, data)
		})
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return fail(err)
		}
	}
	if err := aw.Close(); err != nil {
		return fail(err)
	}
	res.Bytes = aw.Bytes()
	return res, nil
}

// stepShapes returns the shapes of a step's input, targets and logits
// for a batch of b samples of m: [b, sample...], [b] and [b, classes];
// for a language model, labelled at each of its S positions, [b, S], [b,
// S] and [b, S, V].
func stepShapes(m *Model, b int) (input, target, logits tensor.Shape) {
	input = append(tensor.Shape{b}, m.Input...)
	target = tensor.Shape{b}
	if m.Arch.Tokens != nil {
		target = tensor.Shape{b, m.Config.Seq}
	}
	return input, target, append(target.Clone(), m.Config.Classes)
}

// exportStep is the batch of an export's step.
type exportStep struct {
	shape  tensor.Shape // the input's
	input  []float32    // as the model takes it: token ids as whole float32 values
	ids    []int64      // a language model's token ids, as the file holds them; nil otherwise
	labels []int32
}

// target returns the labels as the file holds them.
func (s exportStep) target() []int64 {
	out := make([]int64, len(s.labels))
	for i, c := range s.labels {
		out[i] = int64(c)
	}
	return out
}

// drawStep draws a batch of b samples for m from rng: values from N(0, 1)
// and a class for each sample; for a language model, as
// datasets.SyntheticTokens draws a sequence, S+1 ids for each sample, the
// first S its input and the last S its labels.
func drawStep(m *Model, b int, rng *rand.Rand) exportStep {
	in, _, _ := stepShapes(m, b)
	s := exportStep{shape: in, input: make([]float32, in.Numel())}
	if m.Arch.Tokens == nil {
		for i := range s.input {
			s.input[i] = float32(rng.NormFloat64())
		}
		s.labels = make([]int32, b)
		for i := range s.labels {
			s.labels[i] = int32(rng.IntN(m.Config.Classes))
		}
		return s
	}
	seq, vocab := m.Config.Seq, m.Config.Vocab
	s.ids = make([]int64, len(s.input))
	s.labels = make([]int32, len(s.input))
	for i := range b {
		prev := rng.IntN(vocab)
		for p := i * seq; p < (i+1)*seq; p++ {
			next := rng.IntN(vocab)
			s.ids[p], s.input[p], s.labels[p] = int64(prev), float32(prev), int32(next)
			prev = next
		}
	}
	return s
}

// trainStep runs one training-mode forward of input through m, the mean
// cross entropy against labels (one a sample, or one a position) and the
// backward, leaving the gradients in m's parameters. It returns the
// logits and the loss.
func trainStep(dev tensor.Device, m *Model, seed uint64, shape tensor.Shape, input []float32, labels []int32) ([]float32, float64, error) {
	x := tensor.FromHost(dev, tensor.Boundary, shape, input)
	defer x.Release()
	p := &Pass{Dev: dev, Train: true, Grad: true, Seed: seed}
	y, ctx := m.Net.Forward(p, x)
	defer y.Release()
	if _, _, want := stepShapes(m, shape[0]); !y.Shape().Equal(want) {
		ctx.Release()
		return nil, 0, fmt.Errorf("model output %v, want logits %v", y.Shape(), want)
	}
	loss, dy := CrossEntropy(p, y, labels, 1/float32(len(labels)))
	defer dy.Release()
	m.Net.Backward(p, ctx, dy).Release()
	for _, np := range Params(m.Net) {
		if np.Param.Grad == nil {
			return nil, 0, fmt.Errorf("parameter %s got no gradient", np.Name)
		}
	}
	return tensor.ToHost(y), loss, nil
}

// hasBatchNorm reports whether l holds a batch normalisation.
func hasBatchNorm(l Layer) bool {
	found := false
	Walk(l, func(_ string, l Layer) {
		_, bn := l.(*BatchNorm2D)
		found = found || bn
	})
	return found
}
