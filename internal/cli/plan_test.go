package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPlanUsageErrors checks that bad input is one line and exit status 2,
// before any work.
func TestPlanUsageErrors(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"plan", "--model", "mlp", "--batch", "8", "--devices", "2"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "unknown model", args: []string{"plan", "--model", "nope", "--batch", "8", "--devices", "2"}, want: "--model"},
		{name: "empty model", args: []string{"plan", "--model", "", "--batch", "8", "--devices", "2"}, want: "--model"},
		{name: "K below 1", args: []string{"plan", "--model", "mlp", "--batch", "8", "--devices", "0"}, want: "--devices 0"},
		{name: "batch splits into none", args: append(base[:5:5], "--devices", "2", "--batch", "7", "--microbatches", "2,4"), want: "--batch 7"},
		{name: "memory unparsable", args: append(base, "--memory", "lots"), want: "--memory"},
		{name: "memory unit", args: append(base, "--memory", "3XB"), want: "unknown unit"},
		{name: "data missing", args: append(base, "--data", "/nonexistent/runs.jsonl"), want: "--data"},
		{name: "data without records", args: append(base, "--data", empty), want: "no measured run"},
		{name: "too many devices", args: []string{"plan", "--model", "mlp", "--batch", "8", "--devices", "9"}, want: "--devices 9"},
		{name: "unknown schedule", args: append(base, "--schedule", "zb"), want: "--schedule"},
		{name: "unknown optimizer", args: append(base, "--optimizer", "adam"), want: `--optimizer "adam": unknown optimizer`},
		{name: "one beta", args: append(base, "--optimizer", "adamw", "--betas", "0.9"), want: "--betas [0.9]: want two values"},
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
			first := strings.SplitN(errOut, "\n", 2)[0]
			if !strings.Contains(first, tc.want) {
				t.Errorf("first line %q, want it to name %q", first, tc.want)
			}
		})
	}
}

// TestPlanGolden checks a small plan without data, under a budget.
func TestPlanGolden(t *testing.T) {
	code, out, errOut := run(t, "plan", "--model", "mlp", "--width", "1", "--batch", "12", "--devices", "2", "--threads", "1",
		"--memory", "14MiB", "--microbatches", "1,2,4,5", "--wide")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	checkGolden(t, "plan_mlp.txt", out)
	if !strings.Contains(errOut, "skipped 8 configuration(s): micro-batch counts that batch 12 does not split into equally") ||
		!strings.Contains(errOut, "skipped 16 configuration(s): schedules of several stages a device that cut mlp into more stages than its blocks") {
		t.Errorf("stderr %q, want the skipped M=5 and the interleaved chunk counts, zb-v and dualpipev too many for 3 blocks counted", errOut)
	}
	if !strings.Contains(out, "over budget") || !strings.Contains(out, "Lightest: ") {
		t.Errorf("the plan marks nothing over budget or names no lightest:\n%s", out)
	}
}

// TestPlanWithData checks that a plan forecasts from data and ranks by
// step time, and that --svg draws the scatter.
func TestPlanWithData(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "plan.svg")
	code, out, errOut := run(t, "plan", "--model", "resnet50", "--image", "32", "--width", "0.25", "--batch", "16",
		"--devices", "2", "--microbatches", "2,4", "--schedule", "gpipe,coop,1f1b",
		"--data", "../../predictor/testdata/validation_runs.jsonl", "--svg", svg, "--output", "csv")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if got, want := len(lines), 1+2*6; got != want {
		t.Errorf("%d csv lines, want %d:\n%s", got, want, out)
	}
	if !strings.Contains(lines[0], "step_nanos") || !strings.Contains(errOut, "Fastest: ") {
		t.Errorf("no forecast column or no fastest named: %s\n%s", lines[0], errOut)
	}
	// The data measured gpipe (except-last), coop (d = 1) and 1f1b at
	// K = 2, five runs each: those rows show their measured step.
	for _, r := range csvRows(t, out) {
		measured := r["options"] == "except-last" || r["options"] == "d=1" || r["schedule"] == "1f1b"
		if got := r["measured_runs"]; got != map[bool]string{true: "5", false: "0"}[measured] {
			t.Errorf("%s %s M=%s: %s measured runs", r["schedule"], r["options"], r["microbatches"], got)
		}
		if (r["measured_step_nanos"] != "") != measured {
			t.Errorf("%s %s M=%s: measured step %q", r["schedule"], r["options"], r["microbatches"], r["measured_step_nanos"])
		}
	}
	data, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), `class="plan-point"`); n != 12 {
		t.Errorf("%d points in the SVG, want 12", n)
	}
}

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"", 0, true}, {"16GiB", 16 << 30, true}, {"512MiB", 512 << 20, true}, {"2e9", 2e9, true},
		{"1.5 kB", 1500, true}, {"4g", 4 << 30, true}, {"100", 100, true}, {"0", 0, false},
		{"-1GiB", 0, false}, {"GiB", 0, false}, {"3 parsecs", 0, false},
	}
	for _, tc := range tests {
		got, err := parseBytes(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"16GiB", "2e9", "1.5 kB", "", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseBytes(s)
		if err == nil && n < 0 {
			t.Errorf("parseBytes(%q) = %d, a negative size", s, n)
		}
	})
}

// TestPlanExtrapolated checks that a plan marks the forecasts at
// micro-batch sizes outside those the data measured (the validation
// dataset's resnet50 runs measured 2–16 samples a micro-batch), in its
// rows and in a note.
func TestPlanExtrapolated(t *testing.T) {
	code, out, errOut := run(t, "plan", "--model", "resnet50", "--image", "32", "--width", "0.25", "--batch", "64",
		"--devices", "2", "--microbatches", "2,4", "--schedule", "1f1b",
		"--data", "../../predictor/testdata/validation_runs.jsonl", "--output", "csv")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows := csvRows(t, out)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2:\n%s", len(rows), out)
	}
	for _, r := range rows {
		// M = 2 is 32 samples a micro-batch, M = 4 is 16.
		if want := strconv.FormatBool(r["microbatches"] == "2"); r["extrapolated"] != want {
			t.Errorf("M=%s: extrapolated %q, want %s", r["microbatches"], r["extrapolated"], want)
		}
	}
	if want := "Extrapolated: micro-batches of 32 samples lie outside the 2–16 samples the runs measured"; !strings.Contains(errOut, want) {
		t.Errorf("stderr lacks %q:\n%s", want, errOut)
	}
}

// TestPlanTakesProfileDefaults checks that plan's flags default to
// profile's workload, so that `pipecast plan --devices 4` plans what
// `pipecast profile --devices 4` runs.
func TestPlanTakesProfileDefaults(t *testing.T) {
	var got *PlanOptions
	cmd := NewCmdPlan(&IOStreams{Out: io.Discard, ErrOut: io.Discard}, func(o *PlanOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--devices", "4"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	p := NewCmdProfile(&IOStreams{Out: io.Discard, ErrOut: io.Discard}, nil)
	flag := func(name string) string { return p.Flags().Lookup(name).DefValue }
	if got.Model != defaultProfileModels[0] || fmt.Sprint(got.Batch) != strings.Trim(flag("batch"), "[]") || got.Devices != 4 {
		t.Errorf("plan --devices 4: model %q batch %d devices %d; want profile's model and batch, %s and %s, at 4 devices",
			got.Model, got.Batch, got.Devices, flag("model"), flag("batch"))
	}
	for _, name := range []string{"image", "classes", "width"} {
		if want := strings.Trim(flag(name), "[]"); cmd.Flags().Lookup(name).Value.String() != want {
			t.Errorf("plan --%s defaults to %q, profile's to %q", name, cmd.Flags().Lookup(name).Value.String(), want)
		}
	}
	if got.Train.Optimizer != "" || got.optimizer() != "sgd" {
		t.Errorf("plan of %s: optimizer %q, %q; want the model's, sgd", got.Model, got.Train.Optimizer, got.optimizer())
	}
}

// TestPlanLanguageModelDefaults checks that a language model is planned
// at its own width, as it trains, unless --width is given, and with its
// own optimizer, AdamW, unless --optimizer is.
func TestPlanLanguageModelDefaults(t *testing.T) {
	tests := []struct {
		args      []string
		width     float64
		optimizer string
	}{
		{args: []string{"--model", "llama2-7b", "--seq", "4096"}, width: 1, optimizer: "adamw"},
		{args: []string{"--model", "gpt2", "--width", "0.25", "--optimizer", "sgd"}, width: 0.25, optimizer: "sgd"},
		{args: []string{"--model", "resnet50"}, width: 0.25, optimizer: "sgd"},
	}
	for _, tc := range tests {
		var got *PlanOptions
		cmd := NewCmdPlan(&IOStreams{Out: io.Discard, ErrOut: io.Discard}, func(o *PlanOptions) error { got = o; return nil })
		cmd.SetArgs(tc.args)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		cfg := got.base(0)
		if cfg.ModelConfig.Width != tc.width || cfg.Optimizer != tc.optimizer {
			t.Errorf("plan %v: width %g, optimizer %q; want %g, %q", tc.args, cfg.ModelConfig.Width, cfg.Optimizer, tc.width, tc.optimizer)
		}
	}
}
