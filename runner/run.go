package runner

import (
	"context"
	"fmt"
	"runtime"
)

// RunOptions are how many steps a run takes.
type RunOptions struct {
	Warmup int // steps run first and not measured
	Steps  int // measured steps
}

// Result is a run: its configuration with defaults filled in, the
// partition, and every measured step.
type Result struct {
	Config Config
	// Partition holds the stage bounds over the model's blocks.
	Partition []int
	// Cores is the machine's CPU count; Oversubscribed is set when the
	// devices' threads together exceed it.
	Cores          int
	Oversubscribed bool
	// Warmup holds the warm-up steps (their losses matter for
	// convergence; their times do not), Steps the measured ones.
	Warmup []StepResult
	Steps  []StepResult
}

// Run trains cfg for opts.Warmup warm-up and opts.Steps measured steps
// and returns what every step and device did. It is the library entry
// point of the profile command.
func Run(ctx context.Context, cfg Config, opts RunOptions) (*Result, error) {
	if opts.Warmup < 0 || opts.Steps < 1 {
		return nil, fmt.Errorf("run %d warm-up and %d measured steps: need warm-up ≥ 0 and steps ≥ 1", opts.Warmup, opts.Steps)
	}
	t, err := NewTrainer(cfg)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	res := &Result{
		Config:         t.cfg,
		Partition:      t.Partition(),
		Cores:          runtime.NumCPU(),
		Oversubscribed: t.cfg.Oversubscribed(),
	}
	for i := 0; i < opts.Warmup+opts.Steps; i++ {
		s, err := t.Step(ctx)
		if err != nil {
			return nil, err
		}
		if i < opts.Warmup {
			res.Warmup = append(res.Warmup, s)
		} else {
			res.Steps = append(res.Steps, s)
		}
	}
	return res, nil
}
