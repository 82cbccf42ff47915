package predictor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
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
		recs = append(recs, profiler.Record{ID: string(rune('a' + i)), Config: profiler.RunConfig{RecordOptions: schedule.RecordOptions{Devices: k}}})
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
	if _, err := Validate(context.Background(), nil, HoldoutDevices, 1); !errors.Is(err, ErrNoMeasured) {
		t.Errorf("Validate(nil) = %v, want ErrNoMeasured", err)
	}
	recs := []profiler.Record{{Kind: profiler.KindMeasured, Config: profiler.RunConfig{Batch: 1, RecordOptions: schedule.RecordOptions{Micro: 1, Devices: 1}}}}
	if _, err := Validate(context.Background(), recs, "stages", 1); err == nil {
		t.Error("Validate with an unknown holdout: no error")
	}
}

func TestSummariseRowsAndWinners(t *testing.T) {
	k := Key{Model: "m"}
	pair := func(s string, micro int, meas, pred, base float64, peaks ...int64) Pair {
		return Pair{
			Key: k, Config: profiler.RunConfig{Batch: 8, RecordOptions: schedule.RecordOptions{Schedule: s, Devices: 2, Micro: micro}},
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

// TestValidateRepeatedRuns checks that runs of one configuration are one
// held-out point, measured by the median of all their steps, and that the
// random holdout never fits on a repeat of what it holds out.
func TestValidateRepeatedRuns(t *testing.T) {
	var train, test []profiler.Record
	for _, r := range readValidation(t) {
		switch {
		case r.Config.Model != "resnet50":
		case r.Config.Devices == 1:
			train = append(train, r)
		case r.Config.Schedule == schedule.GPipe && r.Config.Micro == 2+2*len(test):
			test = append(test, r) // the first run at M = 2, then at M = 4
		}
	}
	if len(test) != 2 {
		t.Fatalf("%d resnet50 gpipe K=2 runs at M 2 and 4 in the dataset, want 2", len(test))
	}
	a := test[0]
	a.Round = 0 // a run outside rounds, as are its repeat and test[1]
	test[1].Round = 0
	a.Steps = []profiler.Step{{Step: 1, WallNanos: 100e6}, {Step: 2, WallNanos: 110e6}, {Step: 3, WallNanos: 90e6}}
	b := a
	b.ID = a.ID + "-again"
	b.Steps = []profiler.Step{{Step: 1, WallNanos: 200e6}, {Step: 2, WallNanos: 210e6}, {Step: 3, WallNanos: 190e6}}
	b.Devices = append([]profiler.Device(nil), a.Devices...)
	b.Devices[1].PeakBytes += 1000
	v, err := ValidateSplit(context.Background(), train, []profiler.Record{a, test[1], b}, "split")
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Pairs) != 2 {
		t.Fatalf("%d pairs, want 2 (two configurations)", len(v.Pairs))
	}
	p := v.Pairs[0]
	// Steps 90, 100, 110 and 190, 200, 210 ms: median 150; each run's
	// spread 20/100 and 20/200, their median 0.15; the runs' medians
	// 100 and 200 spread 100/150.
	if p.Runs != 2 || p.ID != a.ID || p.Measured != 150e6 || math.Abs(p.Noise-0.15) > 1e-12 || math.Abs(p.RunSpread-2.0/3) > 1e-12 {
		t.Errorf("repeated pair: runs %d id %s measured %v noise %v run spread %v, want 2 %s 150e6 0.15 0.667",
			p.Runs, p.ID, p.Measured, p.Noise, p.RunSpread, a.ID)
	}
	// Two runs outside rounds are rounds 1 and 2: medians 100 and 200
	// ms, floor |100 − 200|/200.
	if p.Rounds != 2 || p.RoundMin != 100e6 || p.RoundMax != 200e6 || p.Floor != 0.5 {
		t.Errorf("repeated pair: rounds %d, %v–%v ns, floor %v; want 2, 100e6–200e6, 0.5", p.Rounds, p.RoundMin, p.RoundMax, p.Floor)
	}
	if q := v.Pairs[1]; q.Runs != 1 || q.RunSpread != 0 || q.Rounds != 1 || !math.IsNaN(q.Floor) {
		t.Errorf("single run: runs %d run spread %v rounds %d floor %v, want 1, 0, 1 and NaN", q.Runs, q.RunSpread, q.Rounds, q.Floor)
	}
	if all := overall(v); all.FloorN != 1 || all.FloorMAPE != 0.5 || all.FloorMax != 0.5 || all.Judged != 1 {
		t.Errorf("row all: floor N %d, MAPE %v, max %v, judged %d; want 1, 0.5, 0.5, 1", all.FloorN, all.FloorMAPE, all.FloorMax, all.Judged)
	}
	if all := overall(v); math.Abs(all.RunSpread-2.0/3) > 1e-12 {
		t.Errorf("row all: run spread %v, want 0.667 (of the one configuration run twice)", all.RunSpread)
	}
	if got, want := p.MeasuredPeakBytes[1], b.Devices[1].PeakBytes; got != want {
		t.Errorf("measured peak of device 1 = %d, want the larger run's %d", got, want)
	}
	if all := overall(v); all.N != 2 || all.Runs != 3 {
		t.Errorf("row all: N %d runs %d, want 2 and 3", all.N, all.Runs)
	}

	// Random folds: every repeat of a configuration lands in the same
	// fold, whatever the seed.
	runs := map[string]int{}
	for _, g := range groupRuns(append(train, test...)) {
		runs[runKey(&g[0])] = len(g)
	}
	var repeated []profiler.Record
	for i, r := range append(train, test...) {
		again := r
		again.ID = fmt.Sprintf("%s-again-%d", r.ID, i)
		repeated = append(repeated, r, again)
	}
	for seed := uint64(1); seed <= 3; seed++ {
		v, err := Validate(context.Background(), repeated, HoldoutRandom, seed)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range v.Pairs {
			for _, r := range repeated {
				if r.ID == p.ID {
					if want := 2 * runs[runKey(&r)]; p.Runs != want {
						t.Errorf("seed %d: %s held out with %d of its %d runs", seed, p.ID, p.Runs, want)
					}
				}
			}
		}
	}
}

// TestWinnerTie checks that equal forecasts pick no winner.
func TestWinnerTie(t *testing.T) {
	k := Key{Model: "m"}
	cfg := func(s string) profiler.RunConfig {
		return profiler.RunConfig{Batch: 8, RecordOptions: schedule.RecordOptions{Schedule: s, Devices: 1, Micro: 1}}
	}
	ws := winners([]Pair{
		{Key: k, Config: cfg(schedule.GPipe), Measured: 100, Predicted: 97},
		{Key: k, Config: cfg(schedule.Coop), Measured: 99, Predicted: 97},
	})
	if len(ws) != 1 {
		t.Fatalf("%d winner checks, want 1", len(ws))
	}
	if w := ws[0]; !w.Tie() || w.Agree || w.MeasuredFaster != schedule.Coop {
		t.Errorf("winner %+v: want a forecast tie, not agreeing, coop measured faster", w)
	}
}
