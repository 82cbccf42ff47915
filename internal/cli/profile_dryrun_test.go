package cli

import (
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestProfileDryRun checks that --dry-run counts a sweep's runs (its
// configurations times its rounds, skipped combinations left out), lists
// each configuration once, and leaves no file behind.
func TestProfileDryRun(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "runs")
	args := []string{"profile", "--dry-run", "--model", "mlp", "--batch", "4", "--devices", "1,2", "--microbatches", "2,3",
		"--schedule", "gpipe,single", "--rounds", "3", "--out", out,
		"--trace", filepath.Join(dir, "t.json"), "--pprof", filepath.Join(dir, "p.pb.gz")}
	code, stdout, stderr := execute(context.Background(), args...)
	if code != ExitOK {
		t.Fatalf("exit %d, want 0: %s", code, stderr)
	}
	// Of 2 K × 2 M × 2 schedules three can run (M = 3 does not split
	// batch 4, single skips K = 2), in 3 rounds each.
	if want := "pipecast profile --dry-run: 9 runs"; !strings.Contains(stdout, want) {
		t.Errorf("stdout lacks %q:\n%s", want, stdout)
	}
	for _, want := range []string{"skipping batch 4 with M=3", "skipping single at K=2"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks the note %q:\n%s", want, stderr)
		}
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("the dry run left %d entries in the output directory, want none (%v)", len(entries), err)
	}

	code, stdout, stderr = execute(context.Background(), append(args, "--output", "csv")...)
	if code != ExitOK {
		t.Fatalf("--output csv: exit %d, want 0: %s", code, stderr)
	}
	rows, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if err != nil {
		t.Fatalf("--output csv: %v\n%s", err, stdout)
	}
	want := [][]string{
		{"model", "schedule", "devices", "microbatches", "batch", "rounds"},
		{"mlp ×0.25", "gpipe (except-last)", "1", "2", "4", "3"},
		{"mlp ×0.25", "single", "1", "2", "4", "3"},
		{"mlp ×0.25", "gpipe (except-last)", "2", "2", "4", "3"},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("csv rows\n%v\nwant\n%v", rows, want)
	}
}

// TestProfileDryRunRefuses checks that a dry run refuses what the sweep
// refuses, with the sweep's exit code and message, before printing.
func TestProfileDryRunRefuses(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // a part of the message
	}{
		{name: "bad flag value", args: []string{"--steps", "0"}, want: "--steps 0"},
		{name: "unknown flag", args: []string{"--no-such-flag"}, want: "unknown flag: --no-such-flag"},
		{name: "nothing runs", args: []string{"--batch", "3", "--microbatches", "2"}, want: "no combination of the flags can run"},
		{name: "missing data", args: []string{"--dataset", "cifar10:" + filepath.Join(t.TempDir(), "none")}, want: "--dataset"},
		{name: "resume without out", args: []string{"--resume"}, want: "--resume needs --out"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"profile", "--dry-run", "--model", "mlp", "--devices", "1", "--schedule", "gpipe"}, tc.args...)
			code, stdout, stderr := execute(context.Background(), args...)
			if code != ExitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, ExitUsage, tc.want)
			}
			if stdout != "" {
				t.Errorf("a refused dry run printed:\n%s", stdout)
			}
		})
	}
}
