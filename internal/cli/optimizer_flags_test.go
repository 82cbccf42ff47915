package cli

import (
	"bytes"
	"context"
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/profiler"
)

func TestOptimizerFlags(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	tests := []struct {
		name      string
		args      []string
		wantLR    float64
		wantWD    *float64
		wantBetas []float64
		wantEps   *float64
		wantUsage string // part of a usage error; "" for none
	}{
		// Unset, each is the optimizer's own: adamw alone is torch's
		// AdamW, not AdamW at SGD's learning rate.
		{name: "adamw alone", args: []string{"--optimizer", "adamw"}},
		{name: "every value", args: []string{"--optimizer", "adamw", "--lr", "3e-4", "--weight-decay", "0",
			"--betas", "0.9,0.95", "--eps", "1e-6"},
			wantLR: 3e-4, wantWD: f(0), wantBetas: []float64{0.9, 0.95}, wantEps: f(1e-6)},
		{name: "weight decay not a number", args: []string{"--weight-decay", "x"}, wantUsage: `"x": not a number`},
		{name: "one beta", args: []string{"--optimizer", "adamw", "--betas", "0.9"}, wantUsage: "--betas [0.9]: want two values"},
		{name: "negative eps", args: []string{"--eps", "-1"}, wantUsage: "--eps -1: must be a number of at least 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseProfile(t, tc.args...)
			if tc.wantUsage != "" {
				var ue *UsageError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.wantUsage) {
					t.Fatalf("got %v, want a usage error containing %q", err, tc.wantUsage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.LR != tc.wantLR || !reflect.DeepEqual(o.WeightDecay, tc.wantWD) ||
				!reflect.DeepEqual(o.Betas, tc.wantBetas) || !reflect.DeepEqual(o.Eps, tc.wantEps) {
				t.Errorf("got lr %v, weight decay %v, betas %v, eps %v; want %v, %v, %v, %v",
					o.LR, o.WeightDecay, o.Betas, o.Eps, tc.wantLR, tc.wantWD, tc.wantBetas, tc.wantEps)
			}
		})
	}
}

// TestOptimizerFlagsHelp checks that the help states every optimizer's
// defaults, read from the optimizers themselves.
func TestOptimizerFlagsHelp(t *testing.T) {
	cmd := NewCmdProfile(&IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, nil)
	usage := cmd.Flags().FlagUsages()
	for _, want := range []string{"(adamw 0.001, sgd 0.01)", "(adamw 0.01, sgd 0.0001)", "(adamw 0.9,0.999)", "(adamw 1e-08)"} {
		if !strings.Contains(usage, want) {
			t.Errorf("help lacks %q:\n%s", want, usage)
		}
	}
}

// TestProfileAdamW trains the mlp with AdamW at its defaults on two
// devices and checks the record: the optimizer and its hyper-parameters,
// and finite losses.
func TestProfileAdamW(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := execute(context.Background(), "profile", "--model", "mlp", "--optimizer", "adamw",
		"--devices", "2", "--schedule", "gpipe", "--steps", "3", "--rounds", "1", "--out", dir, "--output", "json")
	if code != ExitOK {
		t.Fatalf("profile exited %d: %s", code, errOut)
	}
	recs, bad, err := profiler.ReadFile(filepath.Join(dir, "runs.jsonl"), profiler.ReadOptions{})
	if err != nil || len(bad) != 0 || len(recs) != 1 {
		t.Fatalf("runs.jsonl: %d records, bad lines %v, %v; want 1 record", len(recs), bad, err)
	}
	c := recs[0].Config
	if c.Optimizer != "adamw" || c.LR != 0.001 || c.WeightDecay != 0.01 || c.Momentum != 0 ||
		!reflect.DeepEqual(c.Betas, []float64{0.9, 0.999}) || c.Eps != 1e-8 {
		t.Errorf("record's optimizer: got %+v, want adamw at torch's defaults", c.OptimizerRecord)
	}
	if len(recs[0].Steps) != 3 {
		t.Fatalf("got %d steps, want 3", len(recs[0].Steps))
	}
	for _, s := range recs[0].Steps {
		if math.IsNaN(s.Loss) || math.IsInf(s.Loss, 0) || s.Loss <= 0 {
			t.Errorf("step %d: loss %v, want a finite positive loss", s.Step, s.Loss)
		}
	}
}
