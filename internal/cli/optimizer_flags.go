package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
)

// addOptimizerFlags adds --optimizer and the flags of its
// hyper-parameters, named as records name them, that fill s. Each left
// unset keeps the chosen optimizer's own value, so that --optimizer adamw
// alone trains with torch's AdamW defaults rather than with SGD's
// learning rate; an optimizer without a hyper-parameter ignores its flag,
// as schedules ignore the options of others.
func addOptimizerFlags(f *pflag.FlagSet, s *config.Sweep) {
	f.StringVar(&s.Optimizer, "optimizer", "", "optimizer: "+strings.Join(models.OptimizerNames(), "|")+
		" (default: the model's, adamw for the transformers, "+models.DefaultOptimizer+" otherwise)")
	f.Float64Var(&s.LR, "lr", 0, "learning rate, the optimizer's own where unset or 0 ("+
		optimizerDefaults(func(r models.OptimizerRecord) (string, bool) { return formatFloat(r.LR), true })+
		"): a divergence is reproduced by its learning rate")
	f.Var(optionalFloat{&s.WeightDecay}, "weight-decay", "weight decay (SGD's L2 term, AdamW's decoupled decay), the optimizer's own where unset ("+
		optimizerDefaults(func(r models.OptimizerRecord) (string, bool) { return formatFloat(r.WeightDecay), true })+")")
	f.Float64SliceVar(&s.Betas, "betas", nil, "`β1,β2`: the decay rates of the moment estimates, the optimizer's own where unset ("+
		optimizerDefaults(func(r models.OptimizerRecord) (string, bool) {
			if r.Betas == nil {
				return "", false
			}
			return formatFloat(r.Betas[0]) + "," + formatFloat(r.Betas[1]), true
		})+"); optimizers without them ignore it")
	f.Lookup("betas").DefValue = "" // help leaves out an empty default list, as addListFlag does
	f.Var(optionalFloat{&s.Eps}, "eps", "the term added to the denominator for stability, the optimizer's own where unset ("+
		optimizerDefaults(func(r models.OptimizerRecord) (string, bool) { return formatFloat(r.Eps), r.Eps != 0 })+
		"); optimizers without it ignore it")
}

// optimizerDefaults says, for each optimizer that has it, its default of
// one hyper-parameter as value reads it from the record form: "adamw
// 0.001, sgd 0.01".
func optimizerDefaults(value func(models.OptimizerRecord) (string, bool)) string {
	h := config.DefaultHyper()
	var parts []string
	for _, name := range models.OptimizerNames() {
		if v, ok := value(h.Record(name)); ok {
			parts = append(parts, name+" "+v)
		}
	}
	return strings.Join(parts, ", ")
}

func formatFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// optionalFloat is the pflag.Value of a number that may be left unset
// (nil), where a plain float flag's default could not be told from the
// same value given.
type optionalFloat struct{ p **float64 }

func (v optionalFloat) String() string {
	if v.p == nil || *v.p == nil {
		return ""
	}
	return formatFloat(**v.p)
}

func (v optionalFloat) Set(s string) error {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("%q: not a number", s)
	}
	*v.p = &x
	return nil
}

func (v optionalFloat) Type() string { return "float" }
