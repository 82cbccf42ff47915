package models

import (
	"fmt"
	"strconv"
)

// OptimizerRecord is an optimizer and its hyper-parameters as run
// records hold them (embedded whole in profiler.RunConfig), under
// torch's names (a param_group's keys). Each optimizer fills the
// hyper-parameters it reads (see the optimizers table) and leaves the
// others zero, and out of the record where they may be left out.
type OptimizerRecord struct {
	// Optimizer names the optimizer; a record without it trained with
	// SGD, the only optimizer before they had names, so SGD's runs leave
	// it out.
	Optimizer string `json:"optimizer,omitempty"`
	// LR and WeightDecay are every optimizer's; Momentum is SGD's, 0 for
	// the others.
	LR          float64 `json:"lr"`
	Momentum    float64 `json:"momentum"`
	WeightDecay float64 `json:"weight_decay"`
	// Betas (β1, β2) and Eps are AdamW's, left out for SGD.
	Betas []float64 `json:"betas,omitempty"`
	Eps   float64   `json:"eps,omitempty"`
}

// Record returns the optimizer called name with its hyper-parameters
// from h in record form, each widened to the float64 nearest its
// shortest decimal form, so that a learning rate of 0.01 is recorded as
// 0.01 and not as float32's 0.009999999776. A name NewOptimizer does not
// know is recorded alone.
func (h Hyper) Record(name string) OptimizerRecord {
	var r OptimizerRecord
	if name != DefaultOptimizer {
		r.Optimizer = name
	}
	if kind, ok := optimizers[name]; ok {
		kind.record(h, &r)
	}
	return r
}

// Hyper returns the record's optimizer name (DefaultOptimizer where it
// names none) and base with that optimizer's hyper-parameters taken
// from the record; the others keep base's values, as do AdamW's betas
// where the record holds none.
//
// Since the record form names every optimizer's hyper-parameters, it is
// also how values given by name (a command line's --lr) reach the
// optimizer that reads them: base.Record(name), those fields set, then
// Hyper(base).
func (r OptimizerRecord) Hyper(base Hyper) (string, Hyper) {
	name := r.Optimizer
	if name == "" {
		name = DefaultOptimizer
	}
	if kind, ok := optimizers[name]; ok {
		kind.fromRecord(r, &base)
	}
	return name, base
}

// Check reports hyper-parameters no optimizer records: betas that are
// not a pair.
func (r OptimizerRecord) Check() error {
	if r.Betas != nil && len(r.Betas) != 2 {
		return fmt.Errorf("betas %v: want a pair", r.Betas)
	}
	return nil
}

// decimal widens x to the float64 nearest its shortest decimal form.
func decimal(x float32) float64 {
	v, err := strconv.ParseFloat(strconv.FormatFloat(float64(x), 'g', -1, 32), 64)
	if err != nil {
		return float64(x) // unreachable: FormatFloat's output parses
	}
	return v
}
