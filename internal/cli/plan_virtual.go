package cli

// validateVirtual checks that every v of --virtual-stages is at least 1.
// A v that cuts the model into more stages than it has blocks is left
// out of the plan with a note (predictor.PlanSpace.Configs), since the
// default chunk counts need not suit a small model.
func (o *PlanOptions) validateVirtual() error {
	for _, v := range o.Virtual {
		if v < 1 {
			return usageErrorf("--virtual-stages %d: need at least 1 model chunk per device", v)
		}
	}
	return nil
}
