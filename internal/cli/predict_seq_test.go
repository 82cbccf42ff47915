package cli

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner"
	"github.com/pipecast/pipecast/schedule"
)

// liveLanguageRuns trains a small GPT-2 (2 layers of width 0.125, a
// vocabulary of 64) on one device at 8 and 16 tokens, M ∈ {1, 2}, and
// returns the path of their records.
func liveLanguageRuns(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	for _, seq := range []int{8, 16} {
		for _, m := range []int{1, 2} {
			cfg := config.Config{
				Model: "gpt2", ModelConfig: models.Config{Width: 0.125, Seq: seq, Vocab: 64, Layers: 2}, Batch: 4,
				Balance: "macs", Threads: 1,
				Schedule: schedule.Options{Name: schedule.GPipe, Devices: 1, Micro: m, Checkpoint: schedule.ExceptLast},
			}
			res, err := runner.Run(context.Background(), cfg, runner.RunOptions{Warmup: 1, Steps: 2, BlockTiming: true, Calibrate: true})
			if err != nil {
				t.Fatalf("run seq %d M=%d: %v", seq, m, err)
			}
			if err := profiler.Append(path, res.Record()); err != nil {
				t.Fatal(err)
			}
		}
	}
	return path
}

// TestPredictSequenceLengths checks that predict forecasts a language
// model at sequence lengths its runs never measured, from one cost model
// of the runs at every length, names those outside the measured ones,
// forecasts the data's own lengths by default, and that --validate
// holds each length out with --holdout seq.
func TestPredictSequenceLengths(t *testing.T) {
	path := liveLanguageRuns(t)
	out := t.TempDir()
	code, stdout, errOut := run(t, "predict", "--data", path, "--devices", "2", "--seq", "12,32", "--schedule", "gpipe", "--out", out)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if want := "Extrapolated: sequences of 32 tokens lie outside the 8–16 tokens the runs measured"; !strings.Contains(stdout, want) {
		t.Errorf("output lacks %q:\n%s", want, stdout)
	}
	if strings.Contains(stdout, "sequences of 12") {
		t.Errorf("12 tokens lie between the measured 8 and 16, yet:\n%s", stdout)
	}
	preds, _, err := profiler.ReadFile(filepath.Join(out, "runs.jsonl"), profiler.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int
	for _, p := range preds {
		if p.Kind != profiler.KindPredicted || p.Config.Devices != 2 {
			t.Errorf("record %s: %s on %d devices, want a forecast on 2", p.ID, p.Kind, p.Config.Devices)
		}
		seqs = append(seqs, p.Config.Seq)
	}
	slices.Sort(seqs)
	if want := []int{12, 12, 32, 32}; !slices.Equal(seqs, want) {
		t.Errorf("forecast sequence lengths %v, want %v (each at the data's M = 1 and 2)", seqs, want)
	}

	// Without --seq, the data's lengths.
	if rows := predictRows(t, "--data", path, "--devices", "2", "--schedule", "gpipe"); len(rows) != 4 {
		t.Errorf("%d forecasts, want the data's 2 sequence lengths × 2 micro-batch counts", len(rows))
	}

	code, stdout, errOut = run(t, "predict", "--data", path, "--validate", "--holdout", "seq")
	if code != ExitOK {
		t.Fatalf("--holdout seq: exit %d: %s", code, errOut)
	}
	if !strings.Contains(stdout, "held out by seq") {
		t.Errorf("--holdout seq output does not name its holdout:\n%s", stdout)
	}
	for _, label := range []string{"gpt2 ×0.125 seq 8 ", "gpt2 ×0.125 seq 16 "} {
		if !strings.Contains(stdout, label) {
			t.Errorf("--holdout seq output lacks the configurations of %q:\n%s", label, stdout)
		}
	}
}
