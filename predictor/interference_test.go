package predictor

import (
	"context"
	"testing"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

// TestForecastAppliesInterferenceWhereDevicesOverlap fits the validation
// dataset's single-device vgg16bn records, once without their measured
// interference and once with one of 1.2 at two devices, and checks that the
// forecast of gpipe at K = 2 and M = 4 (devices overlapping in the middle
// of the step) is slower with it, by less than 1.2 times, that a forecast
// of one device is not, and that a fit that includes a K = 2 record
// applies none. (The simulator's own test shows ops that never overlap
// keeping their times at K > 1.)
func TestForecastAppliesInterferenceWhereDevicesOverlap(t *testing.T) {
	var single, withK2 []profiler.Record
	for _, r := range readValidation(t) {
		if r.Config.Model != "vgg16bn" {
			continue
		}
		r.Env.Interference = nil
		if r.Config.Devices == 1 {
			single = append(single, r)
		}
		withK2 = append(withK2, r)
	}
	interfered := make([]profiler.Record, len(single))
	for i, r := range single {
		r.Env.Interference = &profiler.Interference{Work: "test", Levels: []profiler.InterferenceLevel{
			{Devices: 1, Factor: 1, Min: 1, Max: 1}, {Devices: 2, Factor: 1.2, Min: 1.15, Max: 1.25}}}
		interfered[i] = r
	}
	fit := func(recs []profiler.Record) *CostModel {
		t.Helper()
		fits, err := Fit(recs)
		if err != nil {
			t.Fatal(err)
		}
		if len(fits) != 1 {
			t.Fatalf("%d cost models, want 1", len(fits))
		}
		for _, c := range fits {
			return c
		}
		return nil
	}
	plain, slowed, mixed := fit(single), fit(interfered), fit(append(withK2, interfered...))
	if plain.Interference() != nil || mixed.Interference() != nil {
		t.Errorf("interference %v without measurements and %v with K = 2 records, want none", plain.Interference(), mixed.Interference())
	}
	if lv := slowed.Interference(); len(lv) != 2 || lv[1].Factor != 1.2 {
		t.Fatalf("interference %v, want level 2 at 1.2", lv)
	}
	step := func(c *CostModel, devices, micro int) float64 {
		t.Helper()
		cfg, err := config.FromRecord(&single[0])
		if err != nil {
			t.Fatal(err)
		}
		cfg.Schedule = schedule.Options{Name: schedule.GPipe, Devices: devices, Micro: micro, Checkpoint: schedule.Never}
		cfg.Bounds = nil
		rec, err := Predict(context.Background(), c, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return float64(rec.Summary.StepNanosMedian)
	}
	if a, b := step(plain, 2, 4), step(slowed, 2, 4); !(b > a*1.01 && b < a*1.2) {
		t.Errorf("gpipe K=2 M=4: %.0f ns with interference, %.0f without; want slower by 1–20 %%", b, a)
	}
	if a, b := step(plain, 1, 4), step(slowed, 1, 4); b != a {
		t.Errorf("gpipe K=1 M=4: %.0f ns with interference, %.0f without; one device overlaps nothing", b, a)
	}
}
