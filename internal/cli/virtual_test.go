package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/predictor"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

func TestVirtualStagesFlag(t *testing.T) {
	o, err := parseProfile(t, "--schedule", "interleaved", "--virtual-stages", "2,4")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.Variants.Virtual, []int{2, 4}) {
		t.Errorf("profile --virtual-stages 2,4: got %v", o.Variants.Virtual)
	}
	p, err := parsePredict(t, "--data", "a.jsonl", "--virtual-stages", "3")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Variants.Virtual, []int{3}) {
		t.Errorf("predict --virtual-stages 3: got %v", p.Variants.Virtual)
	}
	if p, err := parsePredict(t, "--data", "a.jsonl"); err != nil || p.Variants.Virtual != nil {
		t.Errorf("predict without --virtual-stages: got %v, %v; want the data's (nil)", p.Variants.Virtual, err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"profile zero", []string{"profile", "--virtual-stages", "0"}, "--virtual-stages 0: need at least 1"},
		{"profile negative in a list", []string{"profile", "--virtual-stages", "2,-1"}, "--virtual-stages -1: need at least 1"},
		{"profile empty", []string{"profile", "--virtual-stages", ""}, `for "--virtual-stages" flag`},
		{"predict zero", []string{"predict", "--data", "a.jsonl", "--virtual-stages", "0"}, "--virtual-stages 0: need at least 1"},
		{"predict with validate", []string{"predict", "--data", "a.jsonl", "--validate", "--virtual-stages", "2"},
			"--virtual-stages does not apply to --validate"},
		{"plan zero", []string{"plan", "--model", "mlp", "--batch", "8", "--devices", "1", "--virtual-stages", "0"},
			"--virtual-stages 0: need at least 1"},
		{"plan empty", []string{"plan", "--model", "mlp", "--batch", "8", "--devices", "1", "--virtual-stages", ""},
			`for "--virtual-stages" flag`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, tc.args...)
			if code != ExitUsage || out != "" {
				t.Fatalf("exit %d, stdout %q; want %d and nothing; stderr %q", code, out, ExitUsage, errOut)
			}
			if first := strings.SplitN(errOut, "\n", 2)[0]; !strings.Contains(first, tc.want) {
				t.Errorf("first line of stderr %q, want it to contain %q", first, tc.want)
			}
		})
	}
}

func TestProfileHelpNamesNewSchedules(t *testing.T) {
	code, out, errOut := run(t, "profile", "--help")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"--virtual-stages", "model chunks per device v", "interleaved  Megatron-LM's interleaved 1F1B",
		"zb-h1        zero bubble", "zb-h2        zero bubble with more activation memory", "zb-h1,zb-h2"} {
		if !strings.Contains(out, want) {
			t.Errorf("profile --help lacks %q", want)
		}
	}
	for _, cmd := range []string{"predict", "plan"} {
		if _, out, _ := run(t, cmd, "--help"); !strings.Contains(out, "--virtual-stages") {
			t.Errorf("%s --help lacks --virtual-stages", cmd)
		}
	}
}

func TestSameConfigurationVirtualStages(t *testing.T) {
	a := profiler.Record{Config: profiler.RunConfig{Model: "mlp", Batch: 8, RecordOptions: schedule.RecordOptions{Devices: 2, Micro: 4, Schedule: "interleaved", Virtual: 2}}}
	b := a
	if !sameConfiguration(&a, &b) {
		t.Fatal("a record is not its own configuration")
	}
	b.Config.Virtual = 3
	if sameConfiguration(&a, &b) {
		t.Error("interleaved at v=2 and v=3 count as one configuration")
	}
}

func TestPlanConfigsVirtualStages(t *testing.T) {
	a, err := models.LookupArch("mlp")
	if err != nil {
		t.Fatal(err)
	}
	base := config.Config{Model: "mlp", ModelConfig: a.Sized(models.Config{Width: 0.25}), Batch: 8,
		Schedule: schedule.Options{Devices: 1}, Balance: config.BalanceMACs, Backend: "cpu", Threads: 1, Dataset: "synthetic"}
	space := predictor.PlanSpace{Base: base, Micro: []int{1, 2, 3}, Schedules: []string{schedule.OneF1B, schedule.Interleaved}, Variants: schedule.Variants{Virtual: []int{1, 3, 4}}}
	cfgs, skips, err := space.Configs()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cfgs {
		got = append(got, c.String())
	}
	want := []string{"mlp ×0.25 1f1b K=1 M=1 B=8", "mlp ×0.25 1f1b K=1 M=2 B=8",
		"mlp ×0.25 interleaved (v=1) K=1 M=1 B=8", "mlp ×0.25 interleaved (v=1) K=1 M=2 B=8",
		"mlp ×0.25 interleaved (v=3) K=1 M=1 B=8", "mlp ×0.25 interleaved (v=3) K=1 M=2 B=8"}
	if !slices.Equal(got, want) {
		t.Errorf("configurations:\ngot  %q\nwant %q", got, want)
	}
	// M=3 once for 1f1b and once per v that fits; v=4 at every M.
	wantSkips := []predictor.PlanSkip{{Reason: "micro-batch counts that batch 8 does not split into equally", Count: 3},
		{Reason: "schedules of several stages a device that cut mlp into more stages than its blocks", Count: 3}}
	if !slices.Equal(skips, wantSkips) {
		t.Errorf("skips:\ngot  %+v\nwant %+v", skips, wantSkips)
	}
	space.Schedules, space.Variants.Virtual = []string{schedule.Interleaved}, []int{1}
	if cfgs, _, err := space.Configs(); err != nil || len(cfgs) != 2 {
		t.Errorf("interleaved alone: got %d configurations, %v; want 2 (and no other schedule)", len(cfgs), err)
	}
	if e := planEntries([]predictor.PlanRow{{Config: cfgs[len(cfgs)-1]}}, nil, nil); e[0].Options != "v=3" {
		t.Errorf("plan entry options %q, want v=3", e[0].Options)
	}
}
