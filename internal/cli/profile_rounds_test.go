package cli

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/predictor"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

// TestPlanRounds checks the order of a sweep's runs: one round keeps the
// list's order; several run every configuration once a round, each round
// in an order of its own that the seed fixes; a configuration resumes at
// its first missing round.
func TestPlanRounds(t *testing.T) {
	cfgs := make([]config.Config, 5)
	for i := range cfgs {
		cfgs[i] = config.Config{Model: "mlp", Batch: 8 * (i + 1)}
	}
	ones := []int{1, 1, 1, 1, 1}
	runs := planRounds(cfgs, ones, 1, 7)
	for i, r := range runs {
		if r.index != i || r.round != 1 {
			t.Fatalf("one round: run %d is configuration %d of round %d, want %d of 1", i, r.index, r.round, i)
		}
	}
	runs = planRounds(cfgs, ones, 3, 7)
	if len(runs) != 15 {
		t.Fatalf("3 rounds of 5: %d runs", len(runs))
	}
	var orders [][]int
	for r := 1; r <= 3; r++ {
		var order []int
		for _, run := range runs[(r-1)*5 : r*5] {
			if run.round != r {
				t.Fatalf("round %d holds a run of round %d", r, run.round)
			}
			order = append(order, run.index)
		}
		if got := slices.Sorted(slices.Values(order)); !slices.Equal(got, []int{0, 1, 2, 3, 4}) {
			t.Errorf("round %d runs %v, want every configuration once", r, order)
		}
		orders = append(orders, order)
	}
	if slices.Equal(orders[0], orders[1]) && slices.Equal(orders[1], orders[2]) {
		t.Errorf("every round ran in the order %v, want an order each", orders[0])
	}
	again := planRounds(cfgs, ones, 3, 7)
	if !slices.EqualFunc(runs, again, func(a, b plannedRun) bool { return a.index == b.index && a.round == b.round }) {
		t.Error("the same seed planned another order")
	}
	resumed := planRounds(cfgs, []int{4, 3, 1, 2, 4}, 3, 7)
	count := map[int][]int{}
	for _, r := range resumed {
		count[r.index] = append(count[r.index], r.round)
	}
	for i, want := range [][]int{nil, {3}, {1, 2, 3}, {2, 3}, nil} {
		if !slices.Equal(count[i], want) {
			t.Errorf("resumed configuration %d runs rounds %v, want %v", i, count[i], want)
		}
	}
}

// TestProfileRounds runs a sweep in rounds: every record says its round,
// the rounds and schedules of a workload share the partition its first
// run decided by measured time, and the table shows one row per
// configuration; --resume runs only the rounds missing.
func TestProfileRounds(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 8 small runs")
	}
	dir := t.TempDir()
	args := []string{"profile", "--model", "mlp", "--width", "0.25", "--batch", "8", "--devices", "2", "--microbatches", "2",
		"--schedule", "gpipe,coop", "--balance", "time", "--steps", "1", "--warmup", "0", "--threads", "1", "--out", dir}
	code, out, errOut := run(t, append(args, "--rounds", "3", "--output", "csv")...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	path := filepath.Join(dir, "runs.jsonl")
	recs, _, err := profiler.ReadFile(path, profiler.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 6 {
		t.Fatalf("%d records, want 2 configurations × 3 rounds", len(recs))
	}
	rounds := map[string][]int{}
	for _, r := range recs {
		rounds[r.Config.Schedule] = append(rounds[r.Config.Schedule], r.Round)
		if b, first := r.Bounds(), recs[0].Bounds(); !slices.Equal(b, first) {
			t.Errorf("%s round %d split at %v, the first run at %v", r.Config.Schedule, r.Round, b, first)
		}
	}
	for _, name := range []string{schedule.GPipe, schedule.Coop} {
		if got := slices.Sorted(slices.Values(rounds[name])); !slices.Equal(got, []int{1, 2, 3}) {
			t.Errorf("%s: rounds %v, want 1, 2, 3", name, got)
		}
	}
	if lines := len(strings.Split(strings.TrimSpace(out), "\n")); lines != 3 {
		t.Errorf("csv table of %d lines, want a header and one row per configuration:\n%s", lines, out)
	}
	code, out, errOut = run(t, append(args, "--rounds", "4", "--resume", "--output", "markdown")...)
	if code != ExitOK {
		t.Fatalf("--resume: exit %d: %s", code, errOut)
	}
	if recs, _, err = profiler.ReadFile(path, profiler.ReadOptions{}); err != nil || len(recs) != 8 {
		t.Errorf("after --rounds 4 --resume: %d records, %v; want 8", len(recs), err)
	}
	// The table of a resumed sweep is the whole sweep's: the rounds it
	// held and the ones it ran, one row per configuration of 4 rounds;
	// with nothing left to run, the same table, and no run.
	wantRounds := func(when, out string) {
		t.Helper()
		var rows []string
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "|") && strings.Contains(line, "mlp") {
				rows = append(rows, line)
			}
		}
		if len(rows) != 2 {
			t.Fatalf("%s: %d rows of runs, want one per configuration:\n%s", when, len(rows), out)
		}
		for _, row := range rows {
			if !slices.ContainsFunc(strings.Split(row, "|"), func(cell string) bool {
				return strings.HasPrefix(strings.TrimSpace(cell), "4 (")
			}) {
				t.Errorf("%s: row %q does not show 4 rounds", when, row)
			}
		}
	}
	wantRounds("--rounds 4 --resume", out)
	code, out, errOut = run(t, append(args, "--rounds", "4", "--resume", "--output", "markdown")...)
	if code != ExitOK || !strings.Contains(errOut, "8 runs done, 0 to run") {
		t.Fatalf("--resume of a finished sweep: exit %d: %s", code, errOut)
	}
	wantRounds("--resume with nothing to run", out)
	if recs, _, err = profiler.ReadFile(path, profiler.ReadOptions{}); err != nil || len(recs) != 8 {
		t.Errorf("after a --resume with nothing to run: %d records, %v; want 8", len(recs), err)
	}
}

// TestForecastSplitsAsRun checks that a forecast partitions a model by
// time where the run of the same configuration did: the sweep measures
// each workload's block times once, every run of it (at K = 1 too)
// records them, and a forecast from the K = 1 records balances the same
// times, so it splits the K = 2 configuration at the run's blocks.
func TestForecastSplitsAsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 4 small runs")
	}
	dir := t.TempDir()
	code, _, errOut := run(t, "profile", "--model", "resnet50", "--width", "0.25", "--image", "32", "--batch", "8",
		"--devices", "1,2", "--microbatches", "2", "--schedule", "gpipe,1f1b", "--balance", "time",
		"--steps", "1", "--warmup", "0", "--rounds", "1", "--threads", "1", "--out", dir, "--output", "csv")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	recs, _, err := profiler.ReadFile(filepath.Join(dir, "runs.jsonl"), profiler.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var k1, k2 []profiler.Record
	for _, r := range recs {
		if len(r.Config.BalanceNanos) != len(r.Blocks) {
			t.Fatalf("%s K=%d: %d balance times for %d blocks", r.Config.Schedule, r.Config.Devices, len(r.Config.BalanceNanos), len(r.Blocks))
		}
		if !slices.Equal(r.Config.BalanceNanos, recs[0].Config.BalanceNanos) {
			t.Errorf("%s K=%d balanced other times than the sweep's first run", r.Config.Schedule, r.Config.Devices)
		}
		if r.Config.Devices == 1 {
			k1 = append(k1, r)
		} else {
			k2 = append(k2, r)
		}
	}
	if len(k1) != 2 || len(k2) != 2 {
		t.Fatalf("%d K=1 and %d K=2 records, want 2 and 2", len(k1), len(k2))
	}
	fits, err := predictor.Fit(k1)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range k2 {
		cfg, err := config.FromRecord(&r)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Bounds, cfg.BalanceTimes = nil, nil // a new configuration, partitioned by the forecast
		pred, err := predictor.Predict(context.Background(), fits[predictor.KeyOf(&r)], cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := pred.Bounds(), r.Bounds(); !slices.Equal(got, want) {
			t.Errorf("%s K=2: the forecast splits at %v, the run split at %v", r.Config.Schedule, got, want)
		}
	}
}

// TestResumedRoundsSplitAsTheFirst runs one round of a K = 2 sweep of a
// model whose classes come from its default, then a second by --rounds 2
// --resume, and checks that the second balances the first round's block
// times (the records name the resolved classes, the sweep its default)
// and splits the model where the first did.
func TestResumedRoundsSplitAsTheFirst(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 2 small runs")
	}
	dir := t.TempDir()
	for _, rounds := range []string{"1", "2"} {
		code, _, errOut := run(t, "profile", "--model", "resnet50", "--width", "0.25", "--image", "32", "--batch", "8",
			"--devices", "2", "--microbatches", "2", "--schedule", "gpipe", "--balance", "time",
			"--steps", "1", "--warmup", "0", "--rounds", rounds, "--resume", "--threads", "1", "--out", dir, "--output", "csv")
		if code != ExitOK {
			t.Fatalf("--rounds %s: exit %d: %s", rounds, code, errOut)
		}
	}
	recs, _, err := profiler.ReadFile(filepath.Join(dir, "runs.jsonl"), profiler.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Round != 1 || recs[1].Round != 2 {
		t.Fatalf("%d records, want rounds 1 and 2", len(recs))
	}
	if !slices.Equal(recs[0].Config.BalanceNanos, recs[1].Config.BalanceNanos) || !slices.Equal(recs[0].Bounds(), recs[1].Bounds()) {
		t.Errorf("round 2 balanced %v and split at %v; round 1 %v at %v", recs[1].Config.BalanceNanos, recs[1].Bounds(), recs[0].Config.BalanceNanos, recs[0].Bounds())
	}
}
