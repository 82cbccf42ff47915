package models

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/pipecast/pipecast/tensor"
)

// An export is a .npz archive holding a zoo model's state_dict under
// torchvision's names, followed by one training step that torch can
// replay: the input, the targets, the logits, the loss and every
// parameter's gradient. These are its names beside the state_dict's.
const (
	ExportInput  = "input"  // float32 [B, sample...]
	ExportTarget = "target" // int64 [B]
	ExportLogits = "logits" // float32 [B, classes]
	ExportLoss   = "loss"   // float32 0-d, the mean cross entropy
	// ExportGradPrefix starts the names of the gradients: "grad." and
	// the parameter's state_dict name.
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

// ExportOptions choose the model and the step an export records.
type ExportOptions struct {
	Model  string
	Config Config // NoDropout is forced on, so that torch can replay the step
	Batch  int
	Seed   uint64
}

// ExportResult describes a written export.
type ExportResult struct {
	Names []string // the arrays written, in order
	Loss  float64
	Bytes int64 // the archive's size
}

// Export builds opts.Model on dev with parameters initialised from
// opts.Seed and writes to w, as a .npz archive: its state_dict before
// training (num_batches_tracked as int64 0-d arrays), then "input", a
// batch of opts.Batch samples drawn from N(0, 1), "target", classes
// drawn uniformly, and the "logits", the "loss" (cross entropy with
// mean reduction, torch's default) and the gradient "grad.<name>" of
// every parameter after one training-mode forward and backward. The
// same options on a device of as many threads write the same bytes.
func Export(dev tensor.Device, opts ExportOptions, w io.Writer) (ExportResult, error) {
	if opts.Batch < 1 {
		return ExportResult{}, fmt.Errorf("export %s: batch %d: need at least 1 sample", opts.Model, opts.Batch)
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

	nw := NewNPZWriter(w, false)
	res := ExportResult{}
	f32 := func(name string, shape tensor.Shape, data []float32) error {
		res.Names = append(res.Names, name)
		return nw.Float32(name, shape, data)
	}
	i64 := func(name string, shape tensor.Shape, data []int64) error {
		res.Names = append(res.Names, name)
		return nw.Int64(name, shape, data)
	}
	fail := func(err error) (ExportResult, error) {
		return ExportResult{}, fmt.Errorf("export %s: %w", opts.Model, err)
	}
	for _, e := range StateDict(m.Net) {
		if e.Kind == Int64Scalar {
			err = i64(e.Name, e.Shape, []int64{*e.Buffer.Count})
		} else {
			err = f32(e.Name, e.Shape, tensor.ToHost(e.Tensor()))
		}
		if err != nil {
			return fail(err)
		}
	}

	rng := rand.New(rand.NewPCG(opts.Seed, dataStream))
	inShape := append(tensor.Shape{opts.Batch}, m.Input...)
	input := make([]float32, inShape.Numel())
	for i := range input {
		input[i] = float32(rng.NormFloat64())
	}
	labels := make([]int32, opts.Batch)
	target := make([]int64, opts.Batch)
	for i := range labels {
		labels[i] = int32(rng.IntN(m.Config.Classes))
		target[i] = int64(labels[i])
	}
	logits, loss, err := trainStep(dev, m, opts.Seed, inShape, input, labels)
	if err != nil {
		return fail(err)
	}
	res.Loss = loss
	steps := []func() error{
		func() error { return f32(ExportInput, inShape, input) },
		func() error { return i64(ExportTarget, tensor.Shape{opts.Batch}, target) },
		func() error { return f32(ExportLogits, tensor.Shape{opts.Batch, m.Config.Classes}, logits) },
		func() error { return f32(ExportLoss, tensor.Shape{}, []float32{float32(loss)}) },
	}
	for _, np := range Params(m.Net) {
		steps = append(steps, func() error {
			return f32(ExportGradPrefix+np.Name, np.Param.Value.Shape(), tensor.ToHost(np.Param.Grad))
		})
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return fail(err)
		}
	}
	if err := nw.Close(); err != nil {
		return fail(err)
	}
	res.Bytes = nw.Bytes()
	return res, nil
}

// trainStep runs one training-mode forward of input through m, the mean
// cross entropy against labels and the backward, leaving the gradients
// in m's parameters. It returns the logits and the loss.
func trainStep(dev tensor.Device, m *Model, seed uint64, shape tensor.Shape, input []float32, labels []int32) ([]float32, float64, error) {
	x := tensor.FromHost(dev, tensor.Boundary, shape, input)
	defer x.Release()
	p := &Pass{Dev: dev, Train: true, Grad: true, Seed: seed}
	y, ctx := m.Net.Forward(p, x)
	defer y.Release()
	if want := (tensor.Shape{shape[0], m.Config.Classes}); !y.Shape().Equal(want) {
		ctx.Release()
		return nil, 0, fmt.Errorf("model output %v, want logits %v", y.Shape(), want)
	}
	loss, dy := CrossEntropy(p, y, labels, 1/float32(shape[0]))
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

// Imported is a zoo model loaded from an archive.
type Imported struct {
	Model *Model
	// Loaded counts the state_dict entries loaded.
	Loaded int
	// Converted names the float64 arrays rounded to float32 on loading.
	Converted []string
}

// Import builds the zoo model name on dev with cfg and loads its
// state_dict from src (see LoadStateDict). The caller releases the
// model.
func Import(dev tensor.Device, src StateSource, name string, cfg Config) (*Imported, error) {
	m, err := Build(dev, name, cfg, nil)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	converted, err := loadStateDict(m.Net, src)
	if err != nil {
		m.Release()
		return nil, fmt.Errorf("import %s: %w", name, err)
	}
	return &Imported{Model: m, Loaded: len(StateDict(m.Net)), Converted: converted}, nil
}

// IsExport reports whether src holds the training step of an export
// (input, target, logits and loss), which Replay can check.
func IsExport(src StateSource) bool {
	have := map[string]bool{}
	for _, k := range src.Keys() {
		have[k] = true
	}
	return have[ExportInput] && have[ExportTarget] && have[ExportLogits] && have[ExportLoss]
}

// ReplayResult compares a replayed training step with an export's.
// Each difference is relative: ‖got − want‖∞ / ‖want‖∞ for a tensor;
// see Replay for the gradients.
type ReplayResult struct {
	Logits float64
	Loss   float64
	// Grads is the largest difference over the gradients the export
	// holds, WorstGrad the parameter it belongs to; Grads is 0 and
	// WorstGrad empty when the export holds no gradients.
	Grads     float64
	WorstGrad string
	// GradsCompared counts the gradients compared.
	GradsCompared int
}

// Replay runs the training step an export recorded on m — a training
// forward of its input, the mean cross entropy against its targets, the
// backward — and compares the logits, the loss and the gradients with
// the export's. It zeroes m's gradients first and leaves the step's in
// them; the running statistics of batch norm advance, as in the
// exported step. Dropout must be off in m for the step to be the
// export's (Export builds with NoDropout).
//
// A gradient's difference is taken relative to the largest gradient
// element of the whole model, instead of its own largest, when the
// gradient is zero in exact arithmetic: a convolution's bias followed
// directly by training-mode batch norm, whose batch mean removes it.
// Its computed values are rounding noise of the size of the other
// gradients' rounding, which its own scale would magnify without bound.
func Replay(dev tensor.Device, m *Model, src StateSource) (*ReplayResult, error) {
	read := func(name string, wantType string) (*Array, error) {
		a, err := src.Read(name)
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		if (wantType == DTypeInt64) != (a.DType == DTypeInt64) {
			return nil, fmt.Errorf("replay: %s is %s, want %s", name, a.DType, wantType)
		}
		return a, nil
	}
	input, err := read(ExportInput, DTypeFloat32)
	if err != nil {
		return nil, err
	}
	target, err := read(ExportTarget, DTypeInt64)
	if err != nil {
		return nil, err
	}
	logits, err := read(ExportLogits, DTypeFloat32)
	if err != nil {
		return nil, err
	}
	loss, err := read(ExportLoss, DTypeFloat32)
	if err != nil {
		return nil, err
	}
	if len(input.Shape) == 0 || !input.Shape[1:].Equal(m.Input) {
		return nil, fmt.Errorf("replay: input %v does not fit the model's samples %v", []int(input.Shape), []int(m.Input))
	}
	b := input.Shape[0]
	if !target.Shape.Equal(tensor.Shape{b}) || !logits.Shape.Equal(tensor.Shape{b, m.Config.Classes}) || len(loss.Shape) != 0 {
		return nil, fmt.Errorf("replay: target %v, logits %v and loss %v do not fit a batch of %d samples and %d classes",
			[]int(target.Shape), []int(logits.Shape), []int(loss.Shape), b, m.Config.Classes)
	}
	labels := make([]int32, b)
	for i, c := range target.Int64 {
		if c < 0 || c >= int64(m.Config.Classes) {
			return nil, fmt.Errorf("replay: target %d of sample %d outside [0, %d)", c, i, m.Config.Classes)
		}
		labels[i] = int32(c)
	}
	if b == 1 && hasBatchNorm(m.Net) {
		return nil, errors.New("replay: batch 1: training-mode batch norm needs more than one sample")
	}
	ZeroGrads(dev, m.Net)
	got, gotLoss, err := trainStep(dev, m, 0, input.Shape, input.Float32, labels)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	res := &ReplayResult{
		Logits: relDiff(got, logits.Float32, 0),
		Loss:   relDiff([]float32{float32(gotLoss)}, loss.Float32, 0),
	}
	have := map[string]bool{}
	for _, k := range src.Keys() {
		have[k] = true
	}
	params := Params(m.Net)
	wants := map[string]*Array{}
	largest := 0.0
	for _, np := range params {
		name := ExportGradPrefix + np.Name
		if !have[name] {
			continue
		}
		a, err := read(name, DTypeFloat32)
		if err != nil {
			return nil, err
		}
		if !a.Shape.Equal(np.Param.Value.Shape()) {
			return nil, fmt.Errorf("replay: %s is %v, want %v", name, []int(a.Shape), []int(np.Param.Value.Shape()))
		}
		wants[np.Name] = a
		largest = max(largest, maxAbs32(a.Float32))
	}
	zero := biasesBeforeBatchNorm(m.Net)
	for _, np := range params {
		want := wants[np.Name]
		if want == nil {
			continue
		}
		floor := 0.0
		if zero[np.Param] {
			floor = largest
		}
		d := relDiff(tensor.ToHost(np.Param.Grad), want.Float32, floor)
		res.GradsCompared++
		if d > res.Grads || res.WorstGrad == "" {
			res.Grads, res.WorstGrad = d, np.Name
		}
	}
	return res, nil
}

// relDiff returns ‖got − want‖∞ / max(‖want‖∞, floor), 0 when both are
// zero, and +Inf for a NaN or an infinite difference.
func relDiff(got, want []float32, floor float64) float64 {
	diff := 0.0
	for i := range want {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		if math.IsNaN(d) {
			return math.Inf(1)
		}
		diff = max(diff, d)
	}
	scale := max(maxAbs32(want), floor)
	if diff == 0 {
		return 0
	}
	return diff / scale
}

func maxAbs32(v []float32) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, math.Abs(float64(x)))
	}
	return m
}

// biasesBeforeBatchNorm returns the biases of the convolutions whose
// output goes straight into a batch normalisation, following the order
// of Sequential containers (VGG's conv → bn pairs); the branches of
// other containers start chains of their own.
func biasesBeforeBatchNorm(l Layer) map[*Param]bool {
	out := map[*Param]bool{}
	var prev Layer
	var visit func(l Layer)
	visit = func(l Layer) {
		if s, ok := l.(*Sequential); ok {
			for _, c := range s.Layers {
				visit(c.Layer)
			}
			return
		}
		if _, ok := l.(*BatchNorm2D); ok {
			if c, ok := prev.(*Conv2D); ok && c.Bias != nil {
				out[c.Bias] = true
			}
		}
		for _, c := range l.Children() {
			prev = nil
			visit(c.Layer)
		}
		prev = l
	}
	visit(l)
	return out
}
