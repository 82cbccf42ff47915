package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/datasets"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/runner"
)

// expandSweep returns the configurations of every runnable combination
// of the list flags, in flag order, and notes on the combinations it
// skipped (config.Sweep.Expand), so that every invalid combination is
// found before the first run starts.
func expandSweep(o *ProfileOptions) ([]config.Config, []string, error) {
	cfgs, notes, err := o.Sweep.Expand()
	if err != nil {
		return nil, notes, sweepError(err, notes)
	}
	return cfgs, notes, nil
}

// sweepError turns a sweep's error into the command line's: a value at
// fault names its flag, and a sweep of which nothing can run says why
// with the notes; both are usage errors.
func sweepError(err error, notes []string) error {
	var fe *config.FieldError
	switch {
	case errors.As(err, &fe):
		return &UsageError{Err: fmt.Errorf("--%w", err)}
	case errors.Is(err, config.ErrNothingRuns):
		return usageErrorf("no combination of the flags can run: %s", strings.Join(notes, "; "))
	}
	return err
}

// checkDatasets opens the training data once for every model input and
// class count of the sweep, so that data that does not exist, cannot be
// read or does not fit a model is refused (exit 2) before the first run
// rather than a failure in the middle of the sweep.
func checkDatasets(cfgs []config.Config) error {
	described, opened := map[string]bool{}, map[string]bool{}
	for _, cfg := range cfgs {
		// A sized model's input and classes are the same in every
		// pipeline configuration of it: describe it once.
		sized := fmt.Sprintf("%s %+v", cfg.Model, cfg.ModelConfig)
		if described[sized] {
			continue
		}
		described[sized] = true
		m, err := models.Describe(cfg.Model, cfg.ModelConfig)
		if err != nil {
			return err
		}
		in := runner.DataInput(m)
		data := fmt.Sprintf("%s %+v", cfg.Dataset, in)
		if opened[data] {
			continue
		}
		opened[data] = true
		if _, err := datasets.Open(cfg.Dataset, in, cfg.Seed); err != nil {
			return &InputError{Err: fmt.Errorf("--dataset: %w (for %s)", err, cfg.Model)}
		}
	}
	return nil
}
