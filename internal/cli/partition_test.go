package cli

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/profiler"
)

// TestPartitionUsageErrors checks that a partition that cannot serve is
// refused by profile, predict and plan before any work: one line and exit
// status 2. The mlp has 3 blocks.
func TestPartitionUsageErrors(t *testing.T) {
	data := "testdata/predict_runs.jsonl" // mlp runs at K = 1 and 2, balanced by time
	profile := []string{"profile", "--model", "mlp", "--batch", "4", "--devices", "2", "--microbatches", "2", "--schedule", "1f1b"}
	predict := []string{"predict", "--data", data, "--devices", "2", "--microbatches", "2"}
	plan := []string{"plan", "--model", "mlp", "--batch", "4", "--devices", "2"}
	with := func(base []string, args ...string) []string { return append(slices.Clone(base), args...) }
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"profile: stages not K", with(profile, "--partition", "1,1,1"), "--partition 1,1,1: 3 stages, but 1f1b at K=2 cuts mlp into 2"},
		{"profile: stages not K·v", []string{"profile", "--model", "mlp", "--batch", "4", "--devices", "1", "--microbatches", "2",
			"--schedule", "interleaved", "--virtual-stages", "3", "--partition", "1,2"},
			"--partition 1,2: 2 stages, but interleaved at K=1 with v=3 (K·v) cuts mlp into 3"},
		{"profile: a stage of no blocks", with(profile, "--partition", "3,0"), `--partition "3,0": a stage of 0 blocks`},
		{"profile: blocks not the model's", with(profile, "--partition", "2,2"), "--partition 2,2: 4 blocks, but mlp has 3"},
		{"profile: not a count", with(profile, "--partition", "1,two"), `--partition "1,two": "two" is not a count of blocks`},
		{"profile: a balance besides", with(profile, "--partition", "1,2", "--balance", "macs"),
			"--balance macs: --partition 1,2 gives the split"},
		{"profile: given without a partition", with(profile, "--balance", "given"), "--balance given: no partition given"},
		{"profile: unknown balance", with(profile, "--balance", "flops"), `--balance "flops": unknown balance (want params, macs, time, speed, memory or given)`},
		{"predict: stages not K", with(predict, "--partition", "1,1,1"), "--partition 1,1,1: 3 stages, but"},
		{"predict: a stage of no blocks", with(predict, "--partition", "0,3"), `--partition "0,3": a stage of 0 blocks`},
		{"predict: blocks not the model's", with(predict, "--partition", "1,1"), "--partition 1,1: 2 blocks, but mlp has 3"},
		{"plan: stages not K", with(plan, "--partition", "1,1,1"), "--partition 1,1,1: 3 stages, but the plan cuts mlp into 2 (K)"},
		{"plan: blocks not the model's", with(plan, "--partition", "2,2"), "--partition 2,2: 4 blocks, but mlp has 3"},
		{"plan: a stage of no blocks", with(plan, "--partition", "3,0"), `--partition "3,0": a stage of 0 blocks`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, tc.args...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", code, ExitUsage, errOut)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
			if first := strings.SplitN(errOut, "\n", 2)[0]; !strings.Contains(first, tc.want) {
				t.Errorf("first line %q, want it to contain %q", first, tc.want)
			}
		})
	}
}

// TestPartitionFlags checks that --partition parses into the sweep with
// the balance it implies, repeated for several splits.
func TestPartitionFlags(t *testing.T) {
	o, err := parseProfile(t, "--model", "mlp", "--devices", "2,3", "--partition", "1,2", "--partition", "1,1,1")
	if err != nil {
		t.Fatal(err)
	}
	if o.Balance != config.BalanceGiven || !slices.EqualFunc(o.Partitions, [][]int{{1, 2}, {1, 1, 1}}, slices.Equal) {
		t.Errorf("balance %q, partitions %v; want given, [[1 2] [1 1 1]]", o.Balance, o.Partitions)
	}
	cfgs, _, err := expandSweep(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfgs {
		if len(c.Bounds) != c.Stages()+1 {
			t.Errorf("%s: bounds %v", c, c.Bounds)
		}
	}
	if o, err = parseProfile(t, "--model", "mlp", "--partition", "1,2", "--balance", "given"); err != nil || o.Balance != config.BalanceGiven {
		t.Errorf("--balance given with --partition: %v, balance %q", err, o.Balance)
	}
}

// TestProfilePartitionRecorded runs profile with a partition given, and
// checks that its records hold it, that predict forecasts the same split
// from them (and another when given one) and that report names it.
func TestProfilePartitionRecorded(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs.jsonl")
	code, out, errOut := run(t, "profile", "--model", "mlp", "--width", "0.25", "--batch", "4", "--devices", "2",
		"--microbatches", "2", "--schedule", "1f1b", "--partition", "2,1", "--steps", "1", "--warmup", "0", "--rounds", "1",
		"--threads", "1", "--out", dir)
	if code != ExitOK {
		t.Fatalf("profile exited %d: %s", code, errOut)
	}
	if !strings.Contains(out, "Splits (blocks per stage): mlp ×0.25 at K=2 2,1 as given.") {
		t.Errorf("profile's table does not name the split:\n%s", out)
	}
	recs, _, err := profiler.ReadFile(runs, profiler.ReadOptions{})
	if err != nil || len(recs) != 1 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	if r := recs[0]; r.Config.Balance != "given" || !slices.Equal(r.Bounds(), []int{0, 2, 3}) {
		t.Fatalf("record: balance %q, bounds %v; want given, [0 2 3]", r.Config.Balance, r.Bounds())
	}

	tests := []struct {
		name    string
		args    []string
		balance string
		bounds  []int
	}{
		{name: "the data's split", balance: "given", bounds: []int{0, 2, 3}},
		{name: "a split given", args: []string{"--partition", "1,2"}, balance: "given", bounds: []int{0, 1, 3}},
		{name: "by memory", args: []string{"--balance", "memory"}, balance: "memory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			outDir := t.TempDir()
			args := append([]string{"predict", "--data", runs, "--out", outDir}, tc.args...)
			code, out, errOut := run(t, args...)
			if code != ExitOK {
				t.Fatalf("predict exited %d: %s", code, errOut)
			}
			preds, _, err := profiler.ReadFile(filepath.Join(outDir, "runs.jsonl"), profiler.ReadOptions{})
			if err != nil || len(preds) != 1 {
				t.Fatalf("%d forecasts, %v", len(preds), err)
			}
			p := preds[0]
			if p.Config.Balance != tc.balance || tc.bounds != nil && !slices.Equal(p.Bounds(), tc.bounds) {
				t.Errorf("forecast: balance %q, bounds %v; want %s, %v", p.Config.Balance, p.Bounds(), tc.balance, tc.bounds)
			}
			if tc.balance == "given" && !strings.Contains(out, "Splits (blocks per stage): mlp ×0.25 at K=2 "+
				config.FormatPartition(config.SizesOf(tc.bounds))+" as given.") {
				t.Errorf("predict does not name the split given:\n%s", out)
			}
		})
	}
}

// TestPlanPartition checks that plan takes a split given, leaving out
// the configurations of other stage counts.
func TestPlanPartition(t *testing.T) {
	code, out, errOut := run(t, "plan", "--model", "mlp", "--batch", "4", "--devices", "2", "--microbatches", "2",
		"--schedule", "1f1b,gpipe,interleaved", "--virtual-stages", "1", "--partition", "2,1", "--output", "csv")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows := csvRows(t, out)
	if len(rows) != 5 { // 1f1b, gpipe's three modes, interleaved at v = 1
		t.Fatalf("%d rows, want 5:\n%s", len(rows), out)
	}
	for _, r := range rows {
		if r["partition"] != "2,1" || r["memory_split"] != "false" {
			t.Errorf("%s %s: partition %q, memory split %s; want 2,1 as given", r["schedule"], r["options"], r["partition"], r["memory_split"])
		}
	}
	code, _, errOut = run(t, "plan", "--model", "mlp", "--batch", "4", "--devices", "1", "--microbatches", "2",
		"--schedule", "1f1b,interleaved", "--virtual-stages", "3", "--partition", "1,1,1", "--output", "csv")
	if code != ExitOK || !strings.Contains(errOut, "skipped 1 configuration(s): configurations of other stage counts than the 3 of the partition given") {
		t.Errorf("a split for interleaved's K·v: exit %d, stderr %q", code, errOut)
	}
}
