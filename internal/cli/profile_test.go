package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
)

// parseProfile runs the profile command's flag parsing on args and
// returns the options its run function received.
func parseProfile(t *testing.T, args ...string) (*ProfileOptions, error) {
	t.Helper()
	var got *ProfileOptions
	cmd := NewCmdProfile(&IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, func(o *ProfileOptions) error {
		got = o
		return nil
	})
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &UsageError{Err: err} })
	cmd.SetArgs(append([]string{}, args...))
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	if err != nil && got != nil {
		t.Error("the run function ran despite the error")
	}
	return got, err
}

func TestNewCmdProfileFlags(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		check     func(t *testing.T, o *ProfileOptions)
		wantUsage string
	}{
		{name: "defaults", check: func(t *testing.T, o *ProfileOptions) {
			want := ProfileOptions{
				IO: o.IO, Output: FormatTable, Sweep: config.Sweep{
					Models:       []string{"resnet50"},
					Batches:      []int{16},
					Devices:      []int{2},
					Replicas:     []int{1},
					Micro:        []int{4},
					Schedules:    []string{"gpipe", "coop"},
					Variants:     schedule.DefaultVariants(),
					Balance:      "time",
					Dataset:      "synthetic",
					Seed:         1,
					Backend:      "cpu",
					Transport:    "inprocess",
					Optimizer:    "",
					SizeVariants: models.SizeVariants{Images: []int{32}, Classes: []int{0}, Widths: []float64{0.25}, Seqs: []int{128}},
				},
				Steps: 5, Warmup: 1, Rounds: defaultRounds, Timeout: 10 * time.Minute,
			}
			if !reflect.DeepEqual(*o, want) {
				t.Errorf("got %+v\nwant %+v", *o, want)
			}
		}},
		{name: "lists", args: []string{"--model", "mlp,vgg16", "--devices", "1,2,4", "--microbatches=1,2,4,8",
			"--schedule", "gpipe,1f1b", "--checkpoint", "never,always", "--width", "0.5,1", "--prefetch", "1,2",
			"--threads", "3", "--steps", "2", "--warmup", "0", "--out", "dir", "--trace", "t.json", "--pprof", "p.pb.gz",
			"--output", "json", "--balance", "params", "--seed", "7", "--dataset", "synthetic:64"},
			check: func(t *testing.T, o *ProfileOptions) {
				if !reflect.DeepEqual(o.Models, []string{"mlp", "vgg16"}) || !reflect.DeepEqual(o.Devices, []int{1, 2, 4}) ||
					!reflect.DeepEqual(o.Micro, []int{1, 2, 4, 8}) || !reflect.DeepEqual(o.Variants.Checkpoints, []schedule.Checkpoint{schedule.Never, schedule.Always}) ||
					!reflect.DeepEqual(o.Widths, []float64{0.5, 1}) || !reflect.DeepEqual(o.Variants.Prefetch, []int{1, 2}) ||
					!reflect.DeepEqual(o.Schedules, []string{"gpipe", "1f1b"}) {
					t.Errorf("lists: %+v", *o)
				}
				if o.Threads != 3 || o.Steps != 2 || o.Warmup != 0 || o.Out != "dir" || o.Trace != "t.json" ||
					o.Pprof != "p.pb.gz" || o.Output != FormatJSON || o.Balance != "params" || o.Seed != 7 ||
					o.Dataset != "synthetic:64" {
					t.Errorf("scalars: %+v", *o)
				}
			}},
		{name: "unknown balance", args: []string{"--balance", "flops"}, wantUsage: `--balance "flops": unknown balance`},
		{name: "unknown model", args: []string{"--model", "resnet51"}, wantUsage: "--model:"},
		{name: "unknown schedule", args: []string{"--schedule", "gpipe,zb"}, wantUsage: `--schedule "zb": unknown schedule`},
		{name: "unknown checkpoint", args: []string{"--checkpoint", "sometimes"}, wantUsage: `unknown checkpoint mode "sometimes"`},
		{name: "zero devices", args: []string{"--devices", "2,0"}, wantUsage: "--devices 0: need at least 1"},
		{name: "zero micro-batches", args: []string{"--microbatches", "0"}, wantUsage: "--microbatches 0: need at least 1"},
		{name: "zero prefetch", args: []string{"--prefetch", "0"}, wantUsage: "--prefetch 0: need at least 1"},
		{name: "zero width", args: []string{"--width", "0"}, wantUsage: "--width 0: must be a positive number"},
		{name: "no steps", args: []string{"--steps", "0"}, wantUsage: "--steps 0: need at least 1"},
		{name: "negative warm-up", args: []string{"--warmup", "-1"}, wantUsage: "--warmup -1: cannot be negative"},
		{name: "negative threads", args: []string{"--threads", "-1"}, wantUsage: "--threads -1"},
		{name: "unknown backend", args: []string{"--backend", "tpu"}, wantUsage: `--backend "tpu": not compiled in`},
		{name: "unknown transport", args: []string{"--transport", "tcp"}, wantUsage: `--transport "tcp": unknown transport`},
		{name: "negative timeout", args: []string{"--timeout", "-1s"}, wantUsage: "--timeout -1s: cannot be negative"},
		{name: "malformed list", args: []string{"--devices", "1,two"}, wantUsage: "invalid argument"},
		{name: "text output", args: []string{"--output", "text"}, wantUsage: `unknown format "text"`},
		{name: "argument", args: []string{"mlp"}, wantUsage: `accepts no arguments, got "mlp"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseProfile(t, tc.args...)
			if tc.wantUsage != "" {
				checkUsageError(t, err, tc.wantUsage)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, got)
		})
	}
}

// sweepSummary names each configuration of a sweep briefly.
func sweepSummary(t *testing.T, args ...string) ([]string, []string, int, error) {
	t.Helper()
	o, err := parseProfile(t, args...)
	if err != nil {
		t.Fatalf("flags %q: %v", args, err)
	}
	cfgs, notes, err := expandSweep(o)
	var names []string
	threads := 0
	for _, c := range cfgs {
		names = append(names, c.String())
		threads = c.Threads
	}
	return names, notes, threads, err
}

func TestExpandSweep(t *testing.T) {
	mlp := []string{"--model", "mlp", "--width", "1"} // batch 16 is the default
	with := func(extra ...string) []string { return append(append([]string{}, mlp...), extra...) }
	tests := []struct {
		name      string
		args      []string
		want      []string // the configurations, in order; nil: only count
		wantCount int
		wantNotes []string
		wantUsage string
	}{
		{name: "default: gpipe against coop", args: nil, want: []string{
			"resnet50 32px ×0.25 gpipe (except-last) K=2 M=4 B=16",
			"resnet50 32px ×0.25 coop (d=1) K=2 M=4 B=16",
		}},
		{name: "acceptance sweep", args: with("--devices", "1,2", "--microbatches", "1,2,4,8", "--schedule", "gpipe,coop,1f1b"),
			wantCount: 24},
		{name: "checkpoint multiplies gpipe only", args: with("--devices", "2", "--microbatches", "2",
			"--schedule", "gpipe,1f1b,coop", "--checkpoint", "never,always"), want: []string{
			"mlp gpipe (never) K=2 M=2 B=16", "mlp gpipe (always) K=2 M=2 B=16", "mlp 1f1b K=2 M=2 B=16", "mlp coop (d=1) K=2 M=2 B=16",
		}},
		{name: "prefetch multiplies coop only", args: with("--devices", "2", "--microbatches", "2",
			"--schedule", "coop,1f1b", "--prefetch", "1,2"), want: []string{
			"mlp coop (d=1) K=2 M=2 B=16", "mlp coop (d=2) K=2 M=2 B=16", "mlp 1f1b K=2 M=2 B=16",
		}},
		{name: "single is skipped beyond one device", args: with("--devices", "1,2", "--microbatches", "2", "--schedule", "single,gpipe"),
			want:      []string{"mlp single K=1 M=2 B=16", "mlp gpipe (except-last) K=1 M=2 B=16", "mlp gpipe (except-last) K=2 M=2 B=16"},
			wantNotes: []string{"skipping single at K=2: it runs on one device"}},
		{name: "micro-batches that do not divide the batch", args: with("--batch", "12", "--devices", "1", "--microbatches", "4,8", "--schedule", "1f1b"),
			want:      []string{"mlp 1f1b K=1 M=4 B=12"},
			wantNotes: []string{"skipping batch 12 with M=8: the batch does not split into 8 equal micro-batches"}},
		{name: "coop shards that do not divide", args: with("--batch", "9", "--devices", "2", "--microbatches", "1", "--schedule", "coop,gpipe"),
			want:      []string{"mlp gpipe (except-last) K=2 M=1 B=9"},
			wantNotes: []string{"skipping coop with batch 9 at K=2: the batch does not split into 2 equal shards"}},
		{name: "the mlp runs once for every image", args: with("--image", "32,64", "--devices", "1", "--microbatches", "1", "--schedule", "gpipe"),
			want: []string{"mlp gpipe (except-last) K=1 M=1 B=16"}},
		{name: "nothing can run", args: with("--batch", "6", "--microbatches", "4"), wantUsage: "no combination of the flags can run: skipping batch 6 with M=4"},
		{name: "more devices than blocks", args: with("--devices", "9"), wantUsage: "--devices 9: mlp has"},
		{name: "image too small", args: []string{"--model", "inceptionv3", "--image", "32"}, wantUsage: "--image 32: input 32×32 is below the smallest inceptionv3 accepts"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			names, notes, _, err := sweepSummary(t, tc.args...)
			if tc.wantUsage != "" {
				checkUsageError(t, err, tc.wantUsage)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != nil && !reflect.DeepEqual(names, tc.want) {
				t.Errorf("configurations:\ngot  %q\nwant %q", names, tc.want)
			}
			if tc.wantCount != 0 && len(names) != tc.wantCount {
				t.Errorf("got %d configurations, want %d: %q", len(names), tc.wantCount, names)
			}
			if !reflect.DeepEqual(notes, tc.wantNotes) {
				t.Errorf("notes: got %q, want %q", notes, tc.wantNotes)
			}
		})
	}
}

func TestExpandSweepThreads(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{name: "cores over the largest K", args: []string{"--model", "mlp", "--devices", "1,2", "--microbatches", "1"},
			want: max(1, runtime.NumCPU()/2)},
		{name: "a third", args: []string{"--model", "mlp", "--devices", "3", "--microbatches", "1", "--batch", "12"},
			want: max(1, runtime.NumCPU()/3)},
		{name: "given", args: []string{"--model", "mlp", "--devices", "2", "--microbatches", "1", "--threads", "5"}, want: 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, threads, err := sweepSummary(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if threads != tc.want {
				t.Errorf("threads %d, want %d", threads, tc.want)
			}
		})
	}
}

// execute runs pipecast with args and returns its exit code and output.
func execute(ctx context.Context, args ...string) (ExitCode, string, string) {
	var out, errOut bytes.Buffer
	code := Execute(ctx, args, &IOStreams{Out: &out, ErrOut: &errOut})
	return code, out.String(), errOut.String()
}

// TestProfileAcceptanceSweep runs the sweep every schedule must finish
// and renders its records in every format.
func TestProfileAcceptanceSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 24 short trainings")
	}
	dir := t.TempDir()
	start := time.Now()
	code, out, errOut := execute(context.Background(), "profile", "--model", "mlp", "--devices", "1,2",
		"--microbatches", "1,2,4,8", "--schedule", "gpipe,coop,1f1b", "--batch", "16", "--steps", "2", "--rounds", "1",
		"--out", dir, "--trace", filepath.Join(dir, "trace.json"), "--pprof", filepath.Join(dir, "prof.pb.gz"),
		"--output", "json")
	t.Logf("acceptance sweep: %v", time.Since(start))
	if code != ExitOK {
		t.Fatalf("profile exited %d: %s", code, errOut)
	}
	if errOut != "" {
		t.Errorf("profile wrote to stderr in a pipe: %q", errOut)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 24 {
		t.Fatalf("json output: %d rows, %v", len(rows), err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "runs.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n != 24 {
		t.Errorf("runs.jsonl holds %d lines, want 24", n)
	}
	for _, f := range []string{"trace.json", "prof.pb.gz"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	for _, format := range []string{"table", "markdown", "csv", "json"} {
		code, out, errOut := execute(context.Background(), "report", filepath.Join(dir, "runs.jsonl"), "--output", format)
		if code != ExitOK || errOut != "" {
			t.Errorf("report --output %s exited %d: %s", format, code, errOut)
		}
		for _, s := range []string{schedule.GPipe, schedule.Coop, schedule.OneF1B} {
			if !strings.Contains(out, s) {
				t.Errorf("report --output %s lacks %s", format, s)
			}
		}
	}
}

func TestProfileInterrupted(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	code, out, errOut := execute(ctx, "profile", "--model", "mlp", "--devices", "1", "--microbatches", "1",
		"--schedule", "gpipe,1f1b", "--steps", "1", "--warmup", "0", "--rounds", "1", "--out", dir)
	if code != ExitError {
		t.Errorf("exit %d, want %d", code, ExitError)
	}
	if !strings.Contains(errOut, "interrupted after 0 of 2 runs") || out != "" {
		t.Errorf("stdout %q, stderr %q", out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs.jsonl")); !os.IsNotExist(err) {
		t.Errorf("an interrupted sweep that ran nothing wrote runs.jsonl: %v", err)
	}
}

func TestProfileUsageExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want ExitCode
	}{
		{name: "nothing runnable", args: []string{"profile", "--model", "mlp", "--batch", "3", "--microbatches", "2"}, want: ExitUsage},
		{name: "unknown flag", args: []string{"profile", "--devcies", "2"}, want: ExitUsage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, _ := execute(context.Background(), tc.args...)
			if code != tc.want || out != "" {
				t.Errorf("exit %d (stdout %q), want %d", code, out, tc.want)
			}
		})
	}
}

// TestProfileBadDataset checks that training data that cannot serve is
// refused before any run, with exit status 2 and the reason, and that
// nothing is written.
func TestProfileBadDataset(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none")
	tests := []struct {
		name, dataset, want string
	}{
		{"missing directory", "cifar10:" + missing, "no such file"},
		{"unknown kind", "imagenet:" + missing, "unknown kind"},
		{"bad sample count", "synthetic:0", "not a positive integer"},
		{"text for a model of vectors", "text:" + missing, "text is token sequences, for a language model"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			code, out, errOut := execute(context.Background(), "profile", "--model", "mlp", "--devices", "1", "--microbatches", "1",
				"--schedule", "gpipe", "--steps", "1", "--warmup", "0", "--dataset", tc.dataset, "--out", dir)
			if code != ExitUsage || out != "" {
				t.Errorf("exit %d, stdout %q; want exit %d and nothing", code, out, ExitUsage)
			}
			if !strings.Contains(errOut, "--dataset") || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "run 1 of") {
				t.Errorf("stderr %q: want the --dataset error (%q) before any run", errOut, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "runs.jsonl")); !os.IsNotExist(err) {
				t.Errorf("a refused sweep wrote runs.jsonl: %v", err)
			}
		})
	}
}
