package predictor

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// planKey names a configuration of a validation record or a plan row.
func planKey(model string, k, m int, s schedule.Options) string {
	opt := ""
	switch s.Name {
	case schedule.GPipe:
		opt = s.Checkpoint.String()
	case schedule.Coop:
		opt = fmt.Sprint(s.Prefetch)
	case schedule.Interleaved:
		opt = fmt.Sprintf("v=%d", s.Virtual)
	}
	return fmt.Sprintf("%s K=%d M=%d %s %s", model, k, m, s.Name, opt)
}

// recordPlanKey is planKey of a record's configuration.
func recordPlanKey(r *profiler.Record) string {
	c := r.Config
	o := schedule.Options{Name: c.Schedule, Prefetch: c.Prefetch, Virtual: c.Virtual}
	if c.Schedule == schedule.GPipe {
		o.Checkpoint, _ = schedule.ParseCheckpoint(c.Checkpoint)
	}
	return planKey(c.Model, c.Devices, c.Micro, o)
}

// validationSpace is the plan space of the validation dataset's workload
// of model at K devices.
func validationSpace(model string, k int, micro []int, names []string) PlanSpace {
	return PlanSpace{
		Base: config.Config{Model: model, ModelConfig: models.Config{Image: 32, Width: 0.25}, Batch: 16,
			Schedule: schedule.Options{Devices: k}, Balance: config.BalanceMACs, Backend: tensor.CPUBackend, Threads: 1},
		Micro: micro, Schedules: names,
	}
}

// TestPlanSpaceConfigs checks what a plan weighs and what it skips.
func TestPlanSpaceConfigs(t *testing.T) {
	s := PlanSpace{Base: config.Config{Model: "mlp", Batch: 4, Schedule: schedule.Options{Devices: 3}, Threads: 1},
		Micro: []int{1, 2, 3}}
	cfgs, skips, err := s.Configs()
	if err != nil {
		t.Fatal(err)
	}
	// gpipe ×3 modes, 1f1b, zb-h1 and zb-h2 at M ∈ {1, 2}; coop cannot
	// split 4 into 3 shards; interleaved at v ∈ {2, 4} needs 6 or 12 of
	// the mlp's 3 blocks, zb-v and dualpipev 6; M = 3 does not divide 4;
	// no single at K = 3.
	if got, want := len(cfgs), 12; got != want {
		t.Errorf("%d configurations, want %d", got, want)
	}
	for _, c := range cfgs {
		if c.Schedule.Name == schedule.Single || c.Schedule.Name == schedule.Coop || c.Schedule.Stages() > 3 || c.Schedule.Micro == 3 {
			t.Errorf("configuration %s should have been skipped", c)
		}
	}
	if len(skips) != 3 {
		t.Fatalf("skips %+v, want three kinds", skips)
	}
	// gpipe, 1f1b and the zero-bubble schedules at M = 3 (6) break the
	// micro rule, and so does coop at M = 3 (2), the rules being checked
	// in order; coop at M ∈ {1, 2} (4) breaks the shards rule, and
	// interleaved, zb-v and dualpipev at every M (6 + 3 + 3) the stages
	// rule, checked first.
	total := 0
	for _, sk := range skips {
		total += sk.Count
	}
	if got, want := total, 12*3-12; got != want {
		t.Errorf("skipped %d in all (%+v), want %d", got, skips, want)
	}
}

// TestRankPlan checks the ranking under a budget, by step time with
// forecasts and by peak without.
func TestRankPlan(t *testing.T) {
	row := func(peak, step int64, timed bool) PlanRow {
		r := PlanRow{Memory: []tensor.MemStats{{PeakTotalBytes: peak}}}
		if timed {
			r.Predicted = &profiler.Record{Summary: profiler.Summary{StepNanosMedian: step}}
		}
		return r
	}
	rows := []PlanRow{row(300, 10, true), row(100, 30, true), row(200, 20, true)}
	RankPlan(rows, 250)
	var got []int64
	for _, r := range rows {
		p, _ := r.PeakBytes()
		got = append(got, p, int64(r.Rank))
	}
	if want := []int64{200, 1, 100, 2, 300, 0}; !slices.Equal(got, want) {
		t.Errorf("timed ranking (peak, rank): got %v, want %v", got, want)
	}
	rows = []PlanRow{row(300, 0, false), row(100, 0, false), row(200, 0, false)}
	RankPlan(rows, 0)
	if p, _ := rows[0].PeakBytes(); p != 100 || rows[2].Rank != 3 || rows[2].OverBudget {
		t.Errorf("untimed ranking: first peak %d, last rank %d over %v; want 100, 3, false", p, rows[2].Rank, rows[2].OverBudget)
	}
}

// TestPlanMemoryMatchesValidation checks that the plan's peak memory is,
// within 1 %, what the validation dataset's runs measured on their
// largest device, for every measured configuration.
func TestPlanMemoryMatchesValidation(t *testing.T) {
	if testing.Short() {
		t.Skip("meta steps of every validation configuration")
	}
	recs := readValidation(t)
	byKey := map[string][]*profiler.Record{}
	for i := range recs {
		byKey[recordPlanKey(&recs[i])] = append(byKey[recordPlanKey(&recs[i])], &recs[i])
	}
	var cfgs []config.Config
	for _, model := range []string{"resnet50", "vgg16bn"} {
		for _, k := range []int{1, 2} {
			all, _, err := validationSpace(model, k, []int{1, 2, 4, 8, 16}, nil).Configs()
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range all {
				if byKey[planKey(c.Model, k, c.Schedule.Micro, c.Schedule)] != nil {
					cfgs = append(cfgs, c)
				}
			}
		}
	}
	rows, failed, err := Plan(context.Background(), nil, cfgs, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(failed) > 0 {
		t.Fatalf("%d measured configurations failed to plan, the first: %v", len(failed), failed[0].Err)
	}
	if len(rows) != len(byKey) {
		t.Errorf("%d plan rows, want one per measured configuration (%d)", len(rows), len(byKey))
	}
	worst := 0.0
	for _, r := range rows {
		got, _ := r.PeakBytes()
		for _, rec := range byKey[planKey(r.Config.Model, r.Config.Schedule.Devices, r.Config.Schedule.Micro, r.Config.Schedule)] {
			want := rec.Summary.PeakBytesMax
			rel := math.Abs(float64(got-want)) / float64(want)
			worst = max(worst, rel)
			if rel > 0.01 {
				t.Errorf("%s: plan peak %d bytes, run %s measured %d (%.2f %% off, want ≤ 1 %%)", r.Config, got, rec.ID, want, 100*rel)
			}
		}
	}
	t.Logf("%d configurations, %d runs: largest peak error %.3f %%", len(rows), len(recs), 100*worst)
}

// TestPlanRanksFromSingleDevice checks a plan fitted to the validation
// dataset's K = 1 runs against its K = 2 workloads: wherever the measured
// fastest of gpipe (except-last), coop (d = 1) and 1f1b leads the runner-up
// decisively (see decisive), the plan must name it or count it among the
// configurations it cannot tell apart from the one it names (forecast
// within the forecast's 1-σ uncertainty). It logs the hit rate over all
// workloads, whose aim is 90 %: on the committed dataset (Intel Xeon,
// 2026-12-02) it is 6 of 9, and the measured fastest is named or among
// those the verdict cannot tell apart from it in 9 of 9; in the misses
// coop and 1f1b lie within 6 % of each other.
func TestPlanRanksFromSingleDevice(t *testing.T) {
	if testing.Short() {
		t.Skip("fits and forecasts the validation dataset")
	}
	checkPlanRanks(t, readValidation(t), []string{schedule.GPipe, schedule.Coop, schedule.OneF1B})
}

// TestPlanRanksNewSchedules is TestPlanRanksFromSingleDevice on the
// schedules dataset: 1f1b, interleaved (v = 2), zb-h1 and zb-h2. On the
// committed dataset the plan names the measured fastest in 7 of 9
// workloads, and names it or counts it as not told apart in 8 of 9; the
// ninth (vgg16bn at M = 4, zb-h2 measured 2.5 % faster than the next)
// is not decisive: its rounds overlap the runner-up's.
func TestPlanRanksNewSchedules(t *testing.T) {
	if testing.Short() {
		t.Skip("fits and forecasts the schedules dataset")
	}
	checkPlanRanks(t, readDataset(t, schedulesData), newSchedules)
}

// checkPlanRanks fits recs' K = 1 runs and plans each of their K = 2
// workloads (model and M) over the schedules names, each with the
// options the dataset measured: wherever the measured fastest leads the
// runner-up decisively (see decisive), the plan must
// name it or count it among those it cannot tell apart from the one it
// names (forecast within the forecast's 1-σ uncertainty): what its
// verdict tells the user. It logs the hit rate over all workloads.
func checkPlanRanks(t *testing.T, recs []profiler.Record, names []string) {
	t.Helper()
	var k1 []profiler.Record
	measured := map[string][]profiler.Record{} // configuration → its runs
	type workload struct {
		model string
		micro int
	}
	var workloads []workload
	for i := range recs {
		r := &recs[i]
		switch r.Config.Devices {
		case 1:
			k1 = append(k1, *r)
		case 2:
			key := recordPlanKey(r)
			measured[key] = append(measured[key], *r)
			if w := (workload{r.Config.Model, r.Config.Micro}); !slices.Contains(workloads, w) {
				workloads = append(workloads, w)
			}
		}
	}
	fits, err := Fit(k1)
	if err != nil {
		t.Fatal(err)
	}
	hits, covered := 0, 0
	for _, w := range workloads {
		space := validationSpace(w.model, 2, []int{w.micro}, names)
		all, _, err := space.Configs()
		if err != nil {
			t.Fatal(err)
		}
		var cfgs []config.Config
		for _, c := range all {
			if measured[planKey(c.Model, 2, c.Schedule.Micro, c.Schedule)] != nil {
				cfgs = append(cfgs, c)
			}
		}
		if len(cfgs) != len(names) {
			t.Fatalf("%s M=%d: %d measured schedules, want %d", w.model, w.micro, len(cfgs), len(names))
		}
		key := KeyOf(&k1[slices.IndexFunc(k1, func(r profiler.Record) bool { return r.Config.Model == w.model })])
		rows, failed, err := Plan(context.Background(), fits[key], cfgs, 0)
		if err != nil || len(failed) > 0 {
			t.Fatalf("%s M=%d: plan: %v, %d failed", w.model, w.micro, err, len(failed))
		}
		RankPlan(rows, 0)
		// The measured step of a configuration is the median of all its
		// runs' steps, as the predictor's validation takes it.
		best, bestStep, second, secondStep := "", math.Inf(1), "", math.Inf(1)
		for _, c := range cfgs {
			key := planKey(c.Model, 2, c.Schedule.Micro, c.Schedule)
			s, _, _ := measuredSteps(measured[key])
			switch {
			case s < bestStep:
				best, bestStep, second, secondStep = key, s, best, bestStep
			case s < secondStep:
				second, secondStep = key, s
			}
		}
		for _, r := range rows {
			key := planKey(r.Config.Model, 2, w.micro, r.Config.Schedule)
			s, _, _ := measuredSteps(measured[key])
			t.Logf("  %s: forecast %.1f ms, measured %.1f ms", key, float64(r.Predicted.Summary.StepNanosMedian)/1e6, s/1e6)
		}
		got := planKey(rows[0].Config.Model, 2, w.micro, rows[0].Config.Schedule)
		// The plan also names, as not told apart from its fastest, the
		// configurations forecast within the forecast's 1-σ uncertainty.
		band := float64(rows[0].Predicted.Summary.StepNanosMedian) * (1 + rows[0].Predicted.Summary.PredictedRelErr)
		inBand := false
		for _, r := range rows {
			if planKey(r.Config.Model, 2, w.micro, r.Config.Schedule) == best && float64(r.Predicted.Summary.StepNanosMedian) <= band {
				inBand = true
				covered++
			}
		}
		if got == best {
			hits++
		} else if decisive(measured[best], measured[second]) && !inBand {
			t.Errorf("%s M=%d: plan names %s and counts %s, measured %.1f %% faster than any other and faster in every round, as told apart from it",
				w.model, w.micro, got, best, 100*(secondStep/bestStep-1))
		}
		t.Logf("%s M=%d: plan names %s (%.1f ms forecast), measured fastest %s (%.1f ms)", w.model, w.micro,
			got, float64(rows[0].Predicted.Summary.StepNanosMedian)/1e6, best, bestStep/1e6)
	}
	rate := float64(hits) / float64(len(workloads))
	t.Logf("hit rate: %d of %d workloads (%.0f %%; the aim is 90 %%); the measured fastest named or within the forecast's uncertainty of it: %d of %d",
		hits, len(workloads), 100*rate, covered, len(workloads))
}

// decisive says whether the runs of a configuration measured it faster
// than those of another beyond what measuring again moves: its slowest
// run (one a round) was faster than the other's fastest.
func decisive(winner, other []profiler.Record) bool {
	slowest, fastest := 0.0, math.Inf(1)
	for _, r := range winner {
		slowest = max(slowest, profiler.Median(stepTimes(&r)))
	}
	for _, r := range other {
		fastest = min(fastest, profiler.Median(stepTimes(&r)))
	}
	return len(winner) > 0 && len(other) > 0 && slowest < fastest
}
