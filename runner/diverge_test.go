package runner

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
)

// TestDivergenceStopsTheRun trains with a learning rate that makes the
// weights overflow and checks that the run stops with a Fault naming
// where the first non-finite value appeared, instead of training on NaN.
func TestDivergenceStopsTheRun(t *testing.T) {
	ctx := watch(t, time.Minute)
	for _, o := range []schedule.Options{
		{Name: schedule.GPipe, Devices: 2, Micro: 2},
		{Name: schedule.Coop, Devices: 2, Micro: 2, Prefetch: 1},
	} {
		cfg := config.Config{Model: "mlp", ModelConfig: models.Config{Width: 0.25}, Batch: 8, Threads: 1, Seed: 1,
			Balance: config.BalanceMACs, Schedule: o, SGD: config.DefaultSGD()}
		cfg.SGD.LR = 1e30
		_, err := Run(ctx, cfg, RunOptions{Steps: 20})
		var f *Fault
		if !errors.As(err, &f) {
			t.Fatalf("%s: got %v, want a Fault", cfg, err)
		}
		if !strings.Contains(f.Reason, "non-finite") || f.Step < 1 || f.Op.Kind != schedule.Loss && (f.Op.Kind != schedule.Update || f.Block < 0) {
			t.Errorf("%s: %v: want a non-finite loss, or gradient of a named block, after the first step", cfg, err)
		}
		t.Logf("%s: %v", cfg, err)
	}
}
