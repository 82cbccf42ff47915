package runner

import (
	"runtime"
	"testing"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
)

// TestCalibrateInterference checks the measurement's shape: level 1 at
// factor 1, then one level per device the machine runs without
// oversubscription, each factor, forward and backward, positive and
// inside its own extremes; and
// a run whose threads fill the machine measures level 1 alone.
func TestCalibrateInterference(t *testing.T) {
	ctx := watch(t, time.Minute)
	cfg := config.Config{
		Model: "mlp", ModelConfig: models.Config{Sizes: []int{256, 256, 10}},
		Batch: 8, Seed: 1, Threads: 1,
		Schedule: schedule.Options{Name: schedule.GPipe, Devices: 2, Micro: 2},
	}
	got, err := CalibrateInterference(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := min(runtime.NumCPU(), maxInterferenceDevices)
	if len(got.Levels) != want {
		t.Fatalf("%d levels, want %d (one per device up to %d cores)", len(got.Levels), want, runtime.NumCPU())
	}
	for i, l := range got.Levels {
		if l.Devices != i+1 || !(l.Factor > 0) || l.Min > l.Factor || l.Factor > l.Max {
			t.Errorf("level %d: %+v", i, l)
		}
		if !(l.BackwardFactor > 0) || l.BackwardMin > l.BackwardFactor || l.BackwardFactor > l.BackwardMax {
			t.Errorf("level %d backward: %+v", i, l)
		}
	}
	if l := got.Levels[0]; l.Factor != 1 || l.BackwardFactor != 1 {
		t.Errorf("level 1 factor %v, want 1", l.Factor)
	}
	t.Logf("%s: %+v", got.Work, got.Levels)
	cfg.Threads = runtime.NumCPU()
	if got, err = CalibrateInterference(ctx, cfg); err != nil || len(got.Levels) != 1 {
		t.Errorf("threads = cores: %v levels, error %v; want level 1 alone", got, err)
	}
}
