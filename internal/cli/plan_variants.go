package cli

import (
	"errors"
	"fmt"
	"slices"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/predictor"
	"github.com/pipecast/pipecast/reports"
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

// parsePartition parses --partition into PartitionSizes and checks it
// before any work: as many stages as K, or K·v for interleaved at a
// chunk count the plan tries, and as many blocks as the model has. A
// configuration of another stage count is left out of the plan with a
// note (predictor.PlanSpace.Configs).
func (o *PlanOptions) parsePartition() error {
	if o.Partition == "" {
		return nil
	}
	sizes, err := config.ParsePartition(o.Partition)
	if err != nil {
		return usageErrorf("--partition %q: %v", o.Partition, err)
	}
	counts := []int{o.Devices}
	if o.Schedules == nil || slices.Contains(o.Schedules, schedule.Interleaved) {
		for _, v := range o.Variants.Or(predictor.PlanVariants()).Virtual {
			if v > 1 {
				counts = append(counts, o.Devices*v)
			}
		}
	}
	if !slices.Contains(counts, len(sizes)) {
		return usageErrorf("--partition %s: %d stages, but the plan cuts %s into %s", o.Partition, len(sizes), o.Model, stageCountsText(counts))
	}
	a, _ := models.LookupArch(o.Model) // validate checked it
	m, err := models.Describe(o.Model, o.Size.config(a))
	if err != nil {
		return err
	}
	if sum := config.BoundsOf(sizes)[len(sizes)]; sum != len(m.Blocks) {
		return usageErrorf("--partition %s: %d blocks, but %s has %d", o.Partition, sum, o.Model, len(m.Blocks))
	}
	o.PartitionSizes = sizes
	return nil
}

// stageCountsText names the stage counts a plan cuts a model into: "4
// (K), or 8 and 16 (K·v, interleaved)".
func stageCountsText(counts []int) string {
	text := fmt.Sprintf("%d (K)", counts[0])
	if len(counts) > 1 {
		var vs []string
		for _, c := range counts[1:] {
			vs = append(vs, fmt.Sprint(c))
		}
		text += ", or " + reports.JoinAnd(vs) + " (K·v, interleaved)"
	}
	return text
}
