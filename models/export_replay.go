package models

import (
	"errors"
	"fmt"
	"math"

	"github.com/pipecast/pipecast/tensor"
)

// Imported is a zoo model loaded from a file of weights.
type Imported struct {
	Model *Model
	// Loaded counts the state_dict entries loaded.
	Loaded int
	// Converted names the float64 arrays rounded to float32 on loading.
	Converted []string
}

// Import builds the zoo model name on dev with cfg and loads its
// state_dict from src, a file in the field's format (see hf.go): entries
// its family stores transposed are turned back, a tied parameter stored
// once loads into every use, and a file holding it under several names
// must hold the same values under each; a config.json in the file must
// agree with the model's where both have a key. See LoadStateDict for the
// rest. The caller releases the model.
func Import(dev tensor.Device, src StateSource, name string, cfg Config) (*Imported, error) {
	m, err := Build(dev, name, cfg, nil)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	layout := layoutOf(m)
	converted, err := func() ([]string, error) {
		if err := checkFieldConfig(m, src); err != nil {
			return nil, err
		}
		if err := layout.checkTied(src); err != nil {
			return nil, err
		}
		return loadStateDict(m.Net, layout.source(src))
	}()
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
// backward — and compares the logits, the loss and the gradients (read
// in the field's layout, as Import reads the weights) with the
// export's. It zeroes m's gradients first and leaves the step's in
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
	src = layoutOf(m).source(src)
	tokens := m.Arch.Tokens != nil
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
	inputType := DTypeFloat32
	if tokens {
		inputType = DTypeInt64
	}
	input, err := read(ExportInput, inputType)
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
	_, wantTarget, wantLogits := stepShapes(m, b)
	if !target.Shape.Equal(wantTarget) || !logits.Shape.Equal(wantLogits) || len(loss.Shape) != 0 {
		return nil, fmt.Errorf("replay: target %v, logits %v and loss %v do not fit a batch of %d samples and %d classes (target %v, logits %v)",
			[]int(target.Shape), []int(logits.Shape), []int(loss.Shape), b, m.Config.Classes, []int(wantTarget), []int(wantLogits))
	}
	labels := make([]int32, len(target.Int64))
	for i, c := range target.Int64 {
		if c < 0 || c >= int64(m.Config.Classes) {
			return nil, fmt.Errorf("replay: target %d of label %d outside [0, %d)", c, i, m.Config.Classes)
		}
		labels[i] = int32(c)
	}
	values := input.Float32
	if tokens {
		values = make([]float32, len(input.Int64))
		for i, id := range input.Int64 {
			if id < 0 || id >= int64(m.Config.Vocab) {
				return nil, fmt.Errorf("replay: token id %d at input position %d outside [0, %d)", id, i, m.Config.Vocab)
			}
			values[i] = float32(id)
		}
	}
	if b == 1 && hasBatchNorm(m.Net) {
		return nil, errors.New("replay: batch 1: training-mode batch norm needs more than one sample")
	}
	ZeroGrads(dev, m.Net)
	got, gotLoss, err := trainStep(dev, m, 0, input.Shape, values, labels)
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
