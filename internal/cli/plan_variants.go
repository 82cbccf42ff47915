package cli

import (
	"errors"

	"github.com/pipecast/pipecast/schedule"
)

// validateVariants checks the schedule options to try on their own
// (schedule.Variants.Check): every look-ahead and chunk count at least 1.
// A chunk count that cuts the model into more stages than
// it has blocks is left out of the plan with a note
// (predictor.PlanSpace.Configs), since the default chunk counts need not
// suit a small model.
func (o *PlanOptions) validateVariants() error {
	var oe *schedule.OptionError
	if err := o.Variants.Check(); errors.As(err, &oe) {
		return usageErrorf("--%s %v: %s", oe.Field, oe.Value, oe.Why)
	}
	return nil
}
