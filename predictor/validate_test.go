package predictor

import (
	"errors"
	"math"
	"testing"

	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner/schedule"
)

func TestKendallTau(t *testing.T) {
	// Each want is counted by hand: concordant, discordant, and pairs
	// tied in x (n₁) and in y (n₂) among the n(n−1)/2 pairs.
	tests := []struct {
		name string
		x, y []float64
		want float64
	}{
		{name: "same order", x: []float64{1, 2, 3}, y: []float64{10, 20, 30}, want: 1},
		{name: "reversed", x: []float64{1, 2, 3}, y: []float64{3, 2, 1}, want: -1},
		// 4 concordant, 2 discordant of 6 pairs.
		{name: "two swaps", x: []float64{1, 2, 3, 4}, y: []float64{2, 1, 4, 3}, want: 2.0 / 6},
		// 4 concordant; pair (1,2) tied in x, pair (2,3) tied in y:
		// 4/√((6−1)(6−1)).
		{name: "ties in x and y", x: []float64{1, 2, 2, 3}, y: []float64{1, 2, 3, 3}, want: 0.8},
		// 4 discordant, one tie in each: −4/5.
		{name: "ties discordant", x: []float64{1, 1, 2, 3}, y: []float64{3, 2, 1, 1}, want: -0.8},
		// The pair tied in both counts in n₁ and n₂: 2/√((3−1)(3−1)).
		{name: "joint tie", x: []float64{1, 1, 2}, y: []float64{5, 5, 7}, want: 1},
		// 2 concordant, 1 tied in y only: 2/√(3·2).
		{name: "tie in y only", x: []float64{1, 2, 3}, y: []float64{1, 2, 2}, want: 2 / math.Sqrt(6)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := KendallTau(tc.x, tc.y); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("KendallTau(%v, %v) = %v, want %v", tc.x, tc.y, got, tc.want)
			}
			// τ is symmetric in its arguments.
			if got := KendallTau(tc.y, tc.x); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("KendallTau(%v, %v) = %v, want %v", tc.y, tc.x, got, tc.want)
			}
		})
	}
	undefined := []struct {
		name string
		x, y []float64
	}{
		{name: "empty"},
		{name: "one value", x: []float64{1}, y: []float64{2}},
		{name: "all tied in x", x: []float64{1, 1, 1}, y: []float64{1, 2, 3}},
	}
	for _, tc := range undefined {
		t.Run(tc.name, func(t *testing.T) {
			if got := KendallTau(tc.x, tc.y); !math.IsNaN(got) {
				t.Errorf("KendallTau(%v, %v) = %v, want NaN", tc.x, tc.y, got)
			}
		})
	}
}

func TestFoldsBy(t *testing.T) {
	var recs []profiler.Record
	for i, k := range []int{2, 1, 2, 4} {
		recs = append(recs, profiler.Record{ID: string(rune('a' + i)), Config: profiler.RunConfig{Devices: k}})
	}
	folds := foldsBy(recs, func(_ int, r *profiler.Record) (int, string) {
		return r.Config.Devices, string(rune('0' + r.Config.Devices))
	})
	ids := func(rs []profiler.Record) string {
		s := ""
		for _, r := range rs {
			s += r.ID
		}
		return s
	}
	want := []struct{ name, test, train string }{
		{name: "1", test: "b", train: "acd"},
		{name: "2", test: "ac", train: "bd"},
		{name: "4", test: "d", train: "abc"},
	}
	if len(folds) != len(want) {
		t.Fatalf("%d folds, want %d", len(folds), len(want))
	}
	for i, w := range want {
		f := folds[i]
		if f.name != w.name || ids(f.test) != w.test || ids(f.train) != w.train {
			t.Errorf("fold %d = %s test %s train %s, want %s test %s train %s",
				i, f.name, ids(f.test), ids(f.train), w.name, w.test, w.train)
		}
	}
}

func TestValidateErrors(t *testing.T) {
	if _, err := Validate(nil, HoldoutDevices, 1); !errors.Is(err, ErrNoMeasured) {
		t.Errorf("Validate(nil) = %v, want ErrNoMeasured", err)
	}
	recs := []profiler.Record{{Kind: profiler.KindMeasured, Config: profiler.RunConfig{Batch: 1, Micro: 1, Devices: 1}}}
	if _, err := Validate(recs, "stages", 1); err == nil {
		t.Error("Validate with an unknown holdout: no error")
	}
}

func TestSummariseRowsAndWinners(t *testing.T) {
	k := Key{Model: "m"}
	pair := func(s string, micro int, meas, pred, base float64, peaks ...int64) Pair {
		return Pair{
			Key: k, Config: profiler.RunConfig{Schedule: s, Devices: 2, Micro: micro, Batch: 8},
			Measured: meas, Predicted: pred, Baseline: base, Noise: meas / 1000,
			MeasuredPeakBytes: peaks, PredictedPeakBytes: []int64{peaks[0], peaks[1] * 11 / 10},
		}
	}
	v := &Validation{Pairs: []Pair{
		pair(schedule.GPipe, 2, 100, 110, 150, 1000, 2000), // gpipe slower in both
		pair(schedule.Coop, 2, 90, 95, 80, 1000, 1000),
		pair(schedule.GPipe, 4, 100, 90, 100, 1000, 500), // coop faster measured, gpipe predicted
		pair(schedule.Coop, 4, 95, 99, 100, 1000, 500),
	}}
	v.summarise()
	if len(v.Rows) != 3 || v.Rows[0].Schedule != schedule.GPipe || v.Rows[1].Schedule != schedule.Coop || v.Rows[2].Schedule != "all" {
		t.Fatalf("rows %+v: want gpipe, coop, all", v.Rows)
	}
	g := v.Rows[0]
	if g.N != 2 || math.Abs(g.MAPE-0.1) > 1e-12 || math.Abs(g.MaxErr-0.1) > 1e-12 ||
		math.Abs(g.BaselineMAPE-0.25) > 1e-12 || math.Abs(g.BaselineMaxErr-0.5) > 1e-12 || g.Noise != 0.1 {
		t.Errorf("gpipe row %+v: want N 2, MAPE 0.1, max 0.1, baseline 0.25/0.5, noise 0.1", g)
	}
	// Measured 100, 90, 100, 95 against predicted 110, 95, 90, 99: of
	// the 6 pairs one is tied in measured (100, 100) and the rest are
	// 3 concordant and 2 discordant, so τ-b = 1/√(6·5).
	if want := 1 / math.Sqrt(30); math.Abs(v.Rows[2].KendallTau-want) > 1e-12 {
		t.Errorf("overall τ = %v, want %v", v.Rows[2].KendallTau, want)
	}
	if len(v.Winners) != 2 {
		t.Fatalf("%d winner checks, want 2", len(v.Winners))
	}
	if w := v.Winners[0]; w.Micro != 2 || w.MeasuredFaster != schedule.Coop || w.PredictedFaster != schedule.Coop || !w.Agree {
		t.Errorf("winner M=2 %+v: want coop measured and predicted", w)
	}
	if w := v.Winners[1]; w.Micro != 4 || w.MeasuredFaster != schedule.Coop || w.PredictedFaster != schedule.GPipe || w.Agree {
		t.Errorf("winner M=4 %+v: want coop measured, gpipe predicted, disagreeing", w)
	}
	// Largest-device peaks: 10 % off in the M=2 runs (2200 for 2000,
	// 1100 for 1000), exact at M=4, where the 10 % error is on the
	// smaller device: MAPE 0.2/4, max 0.1; every device's worst is 0.1.
	if m := v.Memory; m.N != 4 || math.Abs(m.MAPE-0.05) > 1e-12 || math.Abs(m.MaxErr-0.1) > 1e-12 || math.Abs(m.DeviceMaxErr-0.1) > 1e-12 {
		t.Errorf("memory %+v: want N 4, MAPE 0.05, max 0.1, device max 0.1", m)
	}
}
