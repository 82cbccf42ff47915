package config

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
	_ "github.com/pipecast/pipecast/tensor/cpu" // the sweeps' backend
)

// mlp is a configuration that can run: the three-block mlp on one device.
func mlp() Config {
	return Config{Model: "mlp", ModelConfig: models.Config{Width: 0.25}, Batch: 8, Threads: 1,
		Schedule: schedule.Options{Name: schedule.GPipe, Devices: 1, Micro: 2}}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *Config)
		rule   Rule
		want   string // part of the message; "" for a configuration that runs
	}{
		{name: "runs", change: func(*Config) {}},
		{name: "unknown model", change: func(c *Config) { c.Model = "resnet51" }, rule: RuleModel, want: "resnet51"},
		{name: "image too small", change: func(c *Config) { c.Model, c.ModelConfig.Image = "inceptionv3", 32 }, rule: RuleImage,
			want: "input 32×32 is below the smallest inceptionv3 accepts, 75×75"},
		{name: "no samples", change: func(c *Config) { c.Batch = 0 }, rule: RuleCounts, want: "batch 0: need at least 1 sample"},
		{name: "negative devices", change: func(c *Config) { c.Schedule.Devices = -1 }, rule: RuleCounts, want: "devices -1"},
		{name: "more stages than blocks", change: func(c *Config) { c.Schedule.Devices = 4 }, rule: RuleStages,
			want: "mlp has 3 blocks, so at most 3 stages"},
		{name: "unknown schedule", change: func(c *Config) { c.Schedule.Name = "zb" }, rule: RuleSchedule, want: `schedule "zb"`},
		{name: "coop without look-ahead", change: func(c *Config) { c.Schedule.Name, c.Schedule.Prefetch = schedule.Coop, -1 },
			rule: RuleSchedule, want: "prefetch -1"},
		{name: "interleaved without chunks", change: func(c *Config) { c.Schedule.Name, c.Schedule.Virtual = schedule.Interleaved, -1 },
			rule: RuleSchedule, want: "virtual-stages -1: need at least 1"},
		{name: "interleaved with more stages than blocks", change: func(c *Config) {
			c.Schedule = schedule.Options{Name: schedule.Interleaved, Devices: 2, Micro: 2, Virtual: 2}
		}, rule: RuleStages, want: "mlp has 3 blocks, so at most 3 stages, fewer than 2 devices × 2 virtual stages = 4"},
		{name: "interleaved in three chunks", change: func(c *Config) { c.Schedule.Name, c.Schedule.Virtual = schedule.Interleaved, 3 }},
		{name: "other schedules ignore chunks", change: func(c *Config) { c.Schedule.Devices, c.Schedule.Virtual = 2, 2 }},
		{name: "single on two devices", change: func(c *Config) { c.Schedule.Name, c.Schedule.Devices = schedule.Single, 2 },
			rule: RuleSingle, want: "single at K=2: it runs on one device"},
		{name: "micro-batches that do not divide", change: func(c *Config) { c.Schedule.Micro = 3 }, rule: RuleMicro,
			want: "batch 8 with M=3: the batch does not split into 3 equal micro-batches"},
		{name: "coop shards that do not divide", change: func(c *Config) {
			c.Schedule = schedule.Options{Name: schedule.Coop, Devices: 3, Micro: 1, Prefetch: 1}
		}, rule: RuleShards, want: "coop with batch 8 at K=3: the batch does not split into 3 equal shards"},
		{name: "unknown balance", change: func(c *Config) { c.Balance = "flops" }, rule: RuleBalance, want: `balance "flops"`},
		{name: "partition given", change: func(c *Config) { c.Schedule.Devices, c.Balance, c.Bounds = 2, BalanceGiven, []int{0, 1, 3} }},
		{name: "given balance without a partition", change: func(c *Config) { c.Schedule.Devices, c.Balance = 2, BalanceGiven },
			rule: RulePartition, want: "no partition given"},
		{name: "partition of too many stages", change: func(c *Config) { c.Schedule.Devices, c.Bounds = 2, []int{0, 1, 2, 3} },
			rule: RulePartition, want: "3 stages, but gpipe at K=2 cuts mlp into 2"},
		{name: "partition of too few stages for interleaved", change: func(c *Config) {
			c.Schedule, c.Bounds = schedule.Options{Name: schedule.Interleaved, Devices: 1, Micro: 2, Virtual: 3}, []int{0, 1, 3}
		}, rule: RulePartition, want: "2 stages, but interleaved at K=1 with v=3 (K·v) cuts mlp into 3"},
		{name: "partition with an empty stage", change: func(c *Config) { c.Schedule.Devices, c.Bounds = 2, []int{0, 0, 3} },
			rule: RulePartition, want: "a stage of 0 blocks: every stage needs at least 1"},
		{name: "partition of other blocks", change: func(c *Config) { c.Schedule.Devices, c.Bounds = 2, []int{0, 1, 4} },
			rule: RulePartition, want: "4 blocks, but mlp has 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := mlp()
			tc.change(&c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			var inv *InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("got %v (%T), want an *InvalidError", err, err)
			}
			if inv.Rule != tc.rule || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got rule %d %q, want rule %d containing %q", inv.Rule, err, tc.rule, tc.want)
			}
			if got := inv.Rule.Misfit(); got != (tc.rule == RuleSingle || tc.rule == RuleMicro || tc.rule == RuleShards) {
				t.Errorf("rule %d: Misfit() = %v", inv.Rule, got)
			}
		})
	}
}

func TestPartition(t *testing.T) {
	m, err := mlp().Describe()
	if err != nil {
		t.Fatal(err)
	}
	called := 0
	times := func() ([]float64, error) { called++; return []float64{1, 1, 2}, nil }
	tests := []struct {
		name    string
		cfg     Config
		stages  int
		want    []int
		wantErr string
		calls   int
	}{
		{name: "by time", cfg: Config{Balance: BalanceTime}, stages: 2, want: []int{0, 2, 3}, calls: 1},
		{name: "one stage by time measures nothing", cfg: Config{Balance: BalanceTime}, stages: 1, want: []int{0, 3}},
		{name: "bounds given", cfg: Config{Balance: BalanceTime, Bounds: []int{0, 1, 3}}, stages: 2, want: []int{0, 1, 3}},
		{name: "bounds that do not fit", cfg: Config{Bounds: []int{0, 2}}, stages: 2, wantErr: "want 3 stage bounds from 0 to 3"},
		{name: "bounds with an empty stage", cfg: Config{Bounds: []int{0, 3, 3}}, stages: 2, wantErr: "every stage needs at least 1"},
		{name: "given without bounds", cfg: Config{Balance: BalanceGiven}, stages: 2, wantErr: "no partition given"},
		{name: "given", cfg: Config{Balance: BalanceGiven, Bounds: []int{0, 2, 3}}, stages: 2, want: []int{0, 2, 3}},
		{name: "unknown balance", cfg: Config{Balance: "flops"}, stages: 2, wantErr: `balance "flops"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			called = 0
			got, err := tc.cfg.Partition(m, tc.stages, times)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) || called != tc.calls {
				t.Errorf("got %v, %v after %d calls of times; want %v after %d", got, err, called, tc.want, tc.calls)
			}
		})
	}
	// Params and MACs come from the model's annotations.
	for _, b := range []Balance{BalanceParams, BalanceMACs} {
		costs, err := b.BlockCosts(m.Blocks, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, blk := range m.Blocks {
			want := float64(blk.Cost.MACs)
			if b == BalanceParams {
				want = float64(blk.Cost.Params)
			}
			if costs[i] != want {
				t.Errorf("%s: block %d costs %v, want %v", b, i, costs[i], want)
			}
		}
	}
	if _, err := BalanceTime.BlockCosts(m.Blocks, func() ([]float64, error) { return []float64{1}, nil }); err == nil {
		t.Error("one time for three blocks: no error")
	}
}

func TestSweep(t *testing.T) {
	s := Sweep{
		Models:       []string{"mlp"},
		Batches:      []int{12},
		Devices:      []int{1, 2},
		Micro:        []int{4, 8},
		Schedules:    []string{"single", "coop"},
		Variants:     schedule.Variants{Prefetch: []int{1, 2}},
		Balance:      BalanceMACs,
		Backend:      "cpu",
		Threads:      3,
		SizeVariants: models.SizeVariants{Images: []int{0, 32}, Classes: []int{0}, Widths: []float64{1}},
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	cfgs, notes, err := s.Expand()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cfgs {
		got = append(got, c.String())
		if c.Threads != 3 {
			t.Errorf("%s: threads %d, want 3", c, c.Threads)
		}
	}
	want := []string{"mlp single K=1 M=4 B=12", "mlp coop (d=1) K=1 M=4 B=12", "mlp coop (d=2) K=1 M=4 B=12",
		"mlp coop (d=1) K=2 M=4 B=12", "mlp coop (d=2) K=2 M=4 B=12"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("configurations:\ngot  %q\nwant %q", got, want)
	}
	wantNotes := []string{"skipping batch 12 with M=8: the batch does not split into 8 equal micro-batches",
		"skipping single at K=2: it runs on one device"}
	if !reflect.DeepEqual(notes, wantNotes) {
		t.Errorf("notes:\ngot  %q\nwant %q", notes, wantNotes)
	}

	bad := s
	bad.Devices = []int{1, 4}
	var fe *FieldError
	if _, _, err := bad.Expand(); !errors.As(err, &fe) || err.Error() != "devices 4: mlp has 3 blocks, so at most 3 stages" {
		t.Errorf("four devices: got %v, want a FieldError for devices 4", err)
	}
	none := s
	none.Micro = []int{8}
	if _, notes, err := none.Expand(); !errors.Is(err, ErrNothingRuns) || len(notes) != 2 {
		t.Errorf("nothing left: got %v with notes %q, want ErrNothingRuns and two notes", err, notes)
	}
	for _, tc := range []struct {
		name   string
		change func(s *Sweep)
		want   string
	}{
		{"empty list", func(s *Sweep) { s.Batches = nil }, "batch: empty list"},
		{"unknown schedule", func(s *Sweep) { s.Schedules = []string{"zb"} }, `schedule "zb": unknown schedule`},
		{"zero width", func(s *Sweep) { s.Widths = []float64{0} }, "width 0: must be a positive number"},
		{"backend", func(s *Sweep) { s.Backend = "tpu" }, `backend "tpu": not compiled in`},
	} {
		c := s
		tc.change(&c)
		if err := c.Check(); !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want a FieldError containing %q", tc.name, err, tc.want)
		}
	}
}

func TestInterleavedDefaults(t *testing.T) {
	c := mlp()
	c.Schedule.Name = schedule.Interleaved
	if got := c.WithDefaults().Schedule.Virtual; got != schedule.DefaultVirtual {
		t.Errorf("interleaved: Virtual defaults to %d, want %d", got, schedule.DefaultVirtual)
	}
	if got := mlp().WithDefaults().Schedule.Virtual; got != 0 {
		t.Errorf("gpipe: Virtual defaults to %d, want 0", got)
	}
	c.Schedule.Devices, c.Schedule.Virtual = 3, 2
	if got := c.Stages(); got != 6 {
		t.Errorf("interleaved K=3 v=2: %d stages, want 6", got)
	}
	if got, want := c.String(), "mlp ×0.25 interleaved (v=2) K=3 M=2 B=8"; got != want {
		t.Errorf("name %q, want %q", got, want)
	}
	g := mlp()
	g.Schedule.Devices, g.Schedule.Virtual = 3, 2
	if got := g.Stages(); got != 3 {
		t.Errorf("gpipe K=3 with Virtual 2: %d stages, want 3 (only interleaved has virtual stages)", got)
	}
}

func TestSweepVirtualStages(t *testing.T) {
	s := Sweep{
		Models:       []string{"mlp"},
		Batches:      []int{4},
		Devices:      []int{1},
		Micro:        []int{2},
		Schedules:    []string{"1f1b", "interleaved"},
		Variants:     schedule.Variants{Virtual: []int{1, 3}},
		Balance:      BalanceMACs,
		Backend:      "cpu",
		Threads:      1,
		SizeVariants: models.SizeVariants{Images: []int{0}, Classes: []int{0}, Widths: []float64{1}},
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	cfgs, _, err := s.Expand()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cfgs {
		got = append(got, c.String())
	}
	want := []string{"mlp 1f1b K=1 M=2 B=4", "mlp interleaved (v=1) K=1 M=2 B=4", "mlp interleaved (v=3) K=1 M=2 B=4"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("configurations:\ngot  %q\nwant %q", got, want)
	}
	none := s
	none.Variants.Virtual = nil
	if cfgs, _, err := none.Expand(); err != nil || len(cfgs) != 2 || cfgs[1].Schedule.Virtual != schedule.DefaultVirtual {
		t.Errorf("no virtual stages listed: got %v, %v; want interleaved at v=%d", cfgs, err, schedule.DefaultVirtual)
	}
	var fe *FieldError
	bad := s
	bad.Variants.Virtual = []int{0}
	if err := bad.Check(); !errors.As(err, &fe) || err.Error() != "virtual-stages 0: need at least 1 model chunk per device" {
		t.Errorf("virtual stages 0: got %v, want a FieldError", err)
	}
	bad = s
	bad.Variants.Virtual, bad.Devices = []int{2}, []int{2}
	if _, _, err := bad.Expand(); !errors.As(err, &fe) || fe.Field != "virtual-stages" ||
		!strings.Contains(err.Error(), "2 devices × 2 virtual stages = 4") {
		t.Errorf("K=2 v=2 on three blocks: got %v, want a FieldError for virtual-stages", err)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	c := mlp().WithDefaults()
	c.Schedule = schedule.Options{Name: schedule.GPipe, Devices: 2, Micro: 2, Checkpoint: schedule.Always, Replicas: 1}
	c.Bounds = []int{0, 1, 3}
	c.Backend = "cpu"
	m, err := c.Describe()
	if err != nil {
		t.Fatal(err)
	}
	rec := profiler.Record{ID: "r", Config: c.RecordConfig(m.Config, 5, 1), Env: profiler.Environment{Backend: "cpu"}}
	for s := 0; s+1 < len(c.Bounds); s++ {
		rec.Partition = append(rec.Partition, profiler.Stage{FirstBlock: c.Bounds[s], EndBlock: c.Bounds[s+1]})
	}
	if rec.Config.LR != 0.01 {
		t.Errorf("learning rate recorded as %v, want 0.01", rec.Config.LR)
	}
	back, err := FromRecord(&rec)
	if err != nil {
		t.Fatal(err)
	}
	want := c
	want.ModelConfig = models.Config{Image: m.Config.Image, Classes: m.Config.Classes, Width: m.Config.Width}
	if !reflect.DeepEqual(back, want) {
		t.Errorf("round trip:\ngot  %+v\nwant %+v", back, want)
	}

	c.Schedule = schedule.Options{Name: schedule.Interleaved, Devices: 1, Micro: 2, Virtual: 2, Replicas: 1}
	c.Bounds = []int{0, 1, 3}
	rc := c.RecordConfig(m.Config, 5, 1)
	if rc.Virtual != 2 || rc.Checkpoint != "" || rc.Prefetch != 0 {
		t.Errorf("interleaved recorded as %+v, want virtual_stages 2 and no checkpoint or prefetch", rc)
	}
	rec.Config = rc
	if back, err := FromRecord(&rec); err != nil || back.Schedule != c.Schedule {
		t.Errorf("interleaved round trip: got %+v, %v; want %+v", back.Schedule, err, c.Schedule)
	}
	c.Schedule = schedule.Options{Name: schedule.OneF1B, Devices: 2, Micro: 2, Virtual: 2}
	if rc := c.RecordConfig(m.Config, 5, 1); rc.Virtual != 0 {
		t.Errorf("1f1b recorded virtual_stages %d, want it omitted", rc.Virtual)
	}
}

// TestOptimizerByName checks that a configuration names its optimizer,
// SGD by default, and that a sweep and a configuration refuse a name the
// models do not know.
func TestOptimizerByName(t *testing.T) {
	c := Config{Model: "mlp", Batch: 4}.WithDefaults()
	if c.Optimizer != models.DefaultOptimizer {
		t.Errorf("default optimizer %q, want %q", c.Optimizer, models.DefaultOptimizer)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	c.Optimizer = "lion"
	var inv *InvalidError
	if err := c.Validate(); !errors.As(err, &inv) || inv.Rule != RuleOptimizer {
		t.Errorf("Validate with optimizer lion: %v, want a RuleOptimizer error", err)
	}
	s := Sweep{
		Models:       []string{"mlp"},
		Batches:      []int{4},
		Devices:      []int{1},
		Micro:        []int{1},
		Schedules:    []string{"gpipe"},
		Balance:      BalanceMACs,
		Backend:      "cpu",
		Optimizer:    "lion",
		SizeVariants: models.SizeVariants{Images: []int{0}, Classes: []int{0}, Widths: []float64{1}},
	}
	var fe *FieldError
	if err := s.Check(); !errors.As(err, &fe) || fe.Field != "optimizer" {
		t.Errorf("Sweep.Check with optimizer lion: %v, want a FieldError on optimizer", err)
	}
}
