package models

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pipecast/pipecast/tensor"
)

// Optimizer updates parameters from their gradients, as a torch.optim
// optimizer does. Its per-parameter state lives in each Param (State), so
// that it moves and is freed with the parameter; the optimizer holds the
// hyper-parameters and counts its steps.
type Optimizer interface {
	// Name is the name NewOptimizer knows the optimizer by ("sgd").
	Name() string
	// Slots is how many state tensors, each shaped as its value, the
	// optimizer keeps per parameter once the parameter has been updated
	// (SGD: the momentum buffer, or none without momentum). They are
	// allocated in the tensor.Optimizer category on the parameter's first
	// update.
	Slots() int
	// Step updates every parameter that has a gradient, skipping the
	// others as torch skips a parameter whose .grad is None.
	Step(dev tensor.Device, params []NamedParam)
	// Update is Step followed by zeroing the same gradients (ZeroGrads),
	// possibly in one pass over the values, with the same results.
	Update(dev tensor.Device, params []NamedParam)
	// Steps counts the calls to Step and Update.
	Steps() int
}

// Hyper holds the hyper-parameters of every optimizer NewOptimizer makes;
// each reads its own.
type Hyper struct {
	// SGD are torch.optim.SGD's.
	SGD tensor.SGDParams
	// AdamW are torch.optim.AdamW's.
	AdamW tensor.AdamWParams
}

// DefaultOptimizer is the optimizer of runs that name none, and of
// records that name none: every run before optimizers had names trained
// with SGD.
const DefaultOptimizer = "sgd"

// OptimizerOf returns the optimizer that runs of model use when they name
// none: the model's own (Arch.Optimizer), else DefaultOptimizer.
func OptimizerOf(model string) string {
	if a, err := LookupArch(model); err == nil && a.Optimizer != "" {
		return a.Optimizer
	}
	return DefaultOptimizer
}

// optimizerKind is what the package knows of an optimizer by its name:
// how to make one, and its hyper-parameters' record form both ways.
type optimizerKind struct {
	new func(Hyper) Optimizer
	// record fills r with the hyper-parameters of h the optimizer reads;
	// fromRecord sets those of h from r.
	record     func(h Hyper, r *OptimizerRecord)
	fromRecord func(r OptimizerRecord, h *Hyper)
}

// optimizers are the optimizers NewOptimizer knows, by name.
var optimizers = map[string]optimizerKind{
	"sgd": {
		new: func(h Hyper) Optimizer { return NewSGD(h.SGD) },
		record: func(h Hyper, r *OptimizerRecord) {
			r.LR, r.Momentum, r.WeightDecay = decimal(h.SGD.LR), decimal(h.SGD.Momentum), decimal(h.SGD.WeightDecay)
		},
		fromRecord: func(r OptimizerRecord, h *Hyper) {
			h.SGD.LR, h.SGD.Momentum, h.SGD.WeightDecay = float32(r.LR), float32(r.Momentum), float32(r.WeightDecay)
		},
	},
	"adamw": {
		new: func(h Hyper) Optimizer { return NewAdamW(h.AdamW) },
		record: func(h Hyper, r *OptimizerRecord) {
			p := h.AdamW
			r.LR, r.WeightDecay, r.Eps = decimal(p.LR), decimal(p.WeightDecay), decimal(p.Eps)
			r.Betas = []float64{decimal(p.Beta1), decimal(p.Beta2)}
		},
		fromRecord: func(r OptimizerRecord, h *Hyper) {
			p := &h.AdamW
			p.LR, p.WeightDecay, p.Eps = float32(r.LR), float32(r.WeightDecay), float32(r.Eps)
			if len(r.Betas) == 2 {
				p.Beta1, p.Beta2 = float32(r.Betas[0]), float32(r.Betas[1])
			}
		},
	},
}

// OptimizerNames returns the names NewOptimizer knows, sorted.
func OptimizerNames() []string {
	names := make([]string, 0, len(optimizers))
	for name := range optimizers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// NewOptimizer returns the optimizer called name, with its
// hyper-parameters from h.
func NewOptimizer(name string, h Hyper) (Optimizer, error) {
	kind, ok := optimizers[name]
	if !ok {
		return nil, fmt.Errorf("optimizer %q: unknown, want one of %s", name, strings.Join(OptimizerNames(), ", "))
	}
	return kind.new(h), nil
}

// stateFor returns p's optimizer state of the given number of slots and
// whether it was allocated just now, zeroed in the Optimizer category,
// as on the parameter's first update. A parameter without slots keeps a
// nil State.
func stateFor(dev tensor.Device, p *Param, slots int) (state []*tensor.Tensor, first bool) {
	if p.State != nil {
		if len(p.State) != slots {
			panic(fmt.Sprintf("models: optimizer state of %d slots, want %d", len(p.State), slots))
		}
		return p.State, false
	}
	if slots == 0 {
		return nil, false
	}
	p.State = make([]*tensor.Tensor, slots)
	for i := range p.State {
		p.State[i] = dev.Alloc(tensor.Optimizer, p.Value.Shape()...)
	}
	return p.State, true
}
