package predictor

import (
	"context"
	"slices"
	"testing"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

// TestPartitionBalancesRecordedTimes checks the order a forecast's
// partition by time takes its block times in: the configuration's own,
// then those the records balanced at the micro-batch size, then the
// fitted ones; and that the forecast's record names the times it used.
func TestPartitionBalancesRecordedTimes(t *testing.T) {
	var k1 []profiler.Record
	for _, r := range readValidation(t) {
		if r.Config.Model == "resnet50" && r.Config.Devices == 1 {
			r.Config.Balance = string(config.BalanceTime)
			k1 = append(k1, r)
		}
	}
	cfg, err := config.FromRecord(&k1[0])
	if err != nil {
		t.Fatal(err)
	}
	cfg.Schedule = schedule.Options{Name: schedule.GPipe, Devices: 2, Micro: 4, Checkpoint: schedule.ExceptLast}.WithDefaults()
	cfg.Bounds, cfg.BalanceTimes = nil, nil
	forecast := func(recs []profiler.Record, cfg config.Config) profiler.Record {
		t.Helper()
		fits, err := Fit(recs)
		if err != nil {
			t.Fatal(err)
		}
		pred, err := Predict(context.Background(), fits[KeyOf(&recs[0])], cfg)
		if err != nil {
			t.Fatal(err)
		}
		return pred
	}
	fitted := forecast(k1, cfg)
	n := len(fitted.Blocks)
	if len(fitted.Config.BalanceNanos) != n {
		t.Fatalf("the forecast names %d balance times for %d blocks", len(fitted.Config.BalanceNanos), n)
	}

	// Times that put nearly all the work in the first block split after
	// it, wherever the fitted times split.
	skewed := make([]int64, n)
	for i := range skewed {
		skewed[i] = 1000
	}
	skewed[0] = 1e12
	withTimes := slices.Clone(k1)
	for i := range withTimes {
		if withTimes[i].Config.MicroBatchSize() == cfg.MicroBatchSize() {
			withTimes[i].Config.BalanceNanos = skewed
		}
	}
	if b := fitted.Bounds(); b[1] == 1 {
		t.Fatalf("the fitted times split at %v already; the test needs another split", b)
	}
	got := forecast(withTimes, cfg)
	if b := got.Bounds(); !slices.Equal(b, []int{0, 1, n}) {
		t.Errorf("with the records' times the forecast splits at %v, want [0 1 %d]", b, n)
	}
	if !slices.Equal(got.Config.BalanceNanos, skewed) {
		t.Errorf("the forecast names balance times %v, want the records'", got.Config.BalanceNanos[:3])
	}

	// At another micro-batch size the records hold no times: fitted.
	other := cfg
	other.Schedule.Micro = 2
	a, f := forecast(withTimes, other), forecast(k1, other)
	if b, want := a.Bounds(), f.Bounds(); !slices.Equal(b, want) {
		t.Errorf("at m=%d the forecast splits at %v, want the fitted times' %v", other.MicroBatchSize(), b, want)
	}

	// The configuration's own times come first.
	own := cfg
	own.BalanceTimes = make([]float64, n)
	for i := range own.BalanceTimes {
		own.BalanceTimes[i] = 1
	}
	own.BalanceTimes[n-1] = 1e12
	mine := forecast(withTimes, own)
	if b := mine.Bounds(); !slices.Equal(b, []int{0, n - 1, n}) {
		t.Errorf("with the configuration's times the forecast splits at %v, want [0 %d %d]", b, n-1, n)
	}
}
