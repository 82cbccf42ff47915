package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/predictor"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

// TestPredictValidateGolden renders a fixed validation in every format:
// the numbers are the predictor's to test, the layout is the command's.
func TestPredictValidateGolden(t *testing.T) {
	key := predictor.Key{Model: "mlp", Backend: "cpu", Threads: 1, SizeRecord: models.SizeRecord{Classes: 10, Width: 0.25}}
	v := &predictor.Validation{
		Holdout: predictor.HoldoutRandom, Seed: 3,
		Rows: []predictor.ValidationRow{
			{Schedule: "gpipe", N: 6, Runs: 10, MAPE: 0.042, MaxErr: 0.081, KendallTau: 0.87, Noise: 0.031, RunSpread: 0.052, BaselineMAPE: 0.12, BaselineMaxErr: 0.25,
				FloorN: 2, FloorMAPE: 0.021, FloorMax: 0.03, Judged: 2, Outside: 1},
			{Schedule: "1f1b", N: 1, Runs: 1, MAPE: 0.02, MaxErr: 0.02, KendallTau: math.NaN(), Noise: 0.01, RunSpread: math.NaN(), BaselineMAPE: 0.3, BaselineMaxErr: 0.3,
				FloorMAPE: math.NaN(), FloorMax: math.NaN()},
			{Schedule: "all", N: 7, Runs: 11, MAPE: 0.039, MaxErr: 0.081, KendallTau: 0.9, Noise: 0.03, RunSpread: 0.052, BaselineMAPE: 0.146, BaselineMaxErr: 0.3,
				FloorN: 2, FloorMAPE: 0.021, FloorMax: 0.03, Judged: 2, Outside: 1},
		},
		// The table lists these sorted: gpipe's K = 2 pairs by M, then
		// 1f1b's.
		Pairs: []predictor.Pair{
			{Key: key, Config: validateConfig("1f1b", 2, 4), Fold: "fold 2", Runs: 1, Rounds: 1, Measured: 2.5e6, Predicted: 2.55e6,
				RoundMin: 2.5e6, RoundMax: 2.5e6, Floor: math.NaN()},
			{Key: key, Config: validateConfig("gpipe", 2, 4), Fold: "fold 1", Runs: 3, Rounds: 3, Measured: 3e6, Predicted: 2.9e6,
				RoundMin: 2.95e6, RoundMax: 3.1e6, Floor: 0.03},
			{Key: key, Config: validateConfig("gpipe", 2, 1), Fold: "fold 3", Runs: 2, Rounds: 2, Measured: 2.5e6, Predicted: 2.55e6,
				RoundMin: 2.45e6, RoundMax: 2.6e6, Floor: 0.012},
		},
		Winners: []predictor.Winner{
			{Key: key, Devices: 2, Micro: 4, Batch: 16, MeasuredGPipe: 3e6, MeasuredCoop: 2.5e6, PredictedGPipe: 2.9e6,
				PredictedCoop: 2.6e6, MeasuredFaster: "coop", PredictedFaster: "coop", Agree: true},
			{Key: key, Devices: 2, Micro: 1, Batch: 16, MeasuredGPipe: 2.5e6, MeasuredCoop: 2.6e6, PredictedGPipe: 2.7e6,
				PredictedCoop: 2.6e6, MeasuredFaster: "gpipe", PredictedFaster: "coop"},
			{Key: key, Devices: 1, Micro: 1, Batch: 16, MeasuredGPipe: 2.5e6, MeasuredCoop: 2.4e6, PredictedGPipe: 2.45e6,
				PredictedCoop: 2.45e6, MeasuredFaster: "coop", PredictedFaster: predictor.Tie},
		},
		Memory:  predictor.MemoryRow{N: 7, MAPE: 0.001, MaxErr: 0.004, DeviceMaxErr: 0.006},
		Skipped: []string{"fold 5: no records left to fit on"},
	}
	for _, format := range []string{"table", "markdown", "csv", "json"} {
		t.Run(format, func(t *testing.T) {
			var out bytes.Buffer
			if err := renderValidation(&out, v, validationTitle(v, 12), Format(format), false); err != nil {
				t.Fatal(err)
			}
			if format == "json" && !json.Valid(out.Bytes()) {
				t.Errorf("invalid json:\n%s", out.String())
			}
			checkGolden(t, "predict_validate."+goldenExt[format], out.String())
		})
	}
}

// validateConfig is the golden validation's configuration of schedule
// at K devices and M micro-batches of a batch of 16.
func validateConfig(s string, k, m int) profiler.RunConfig {
	return profiler.RunConfig{Model: "mlp", Batch: 16, RecordOptions: schedule.RecordOptions{
		Schedule: s, Devices: k, Micro: m, Checkpoint: map[string]string{"gpipe": "except-last"}[s]}}
}

// TestPredictTrainFlags checks --train's combinations with the other
// flags: each bad one is a usage error, refused before any file is read.
func TestPredictTrainFlags(t *testing.T) {
	dir := t.TempDir()
	train := filepath.Join(dir, "k1.jsonl")
	if err := os.WriteFile(train, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		args      []string
		wantUsage string
	}{
		{name: "train", args: []string{"--data", "k2.jsonl", "--validate", "--train", train}},
		{name: "without validate", args: []string{"--data", "a", "--train", train}, wantUsage: "--train applies to --validate only"},
		{name: "with holdout", args: []string{"--data", "a", "--validate", "--train", train, "--holdout", "devices"},
			wantUsage: "--holdout does not apply to --train"},
		{name: "with seed", args: []string{"--data", "a", "--validate", "--train", train, "--seed", "2"},
			wantUsage: "--seed does not apply to --train"},
		{name: "missing file", args: []string{"--data", "a", "--validate", "--train", filepath.Join(dir, "none.jsonl")},
			wantUsage: "--train " + filepath.Join(dir, "none.jsonl") + ": no such file or directory"},
		{name: "directory", args: []string{"--data", "a", "--validate", "--train", dir}, wantUsage: "--train " + dir + ": a directory"},
		{name: "empty", args: []string{"--data", "a", "--validate", "--train", ""}, wantUsage: "--train: need at least one"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parsePredict(t, tc.args...)
			if tc.wantUsage != "" {
				checkUsageError(t, err, tc.wantUsage)
				// The command line says so in one line, exit 2.
				code, out, errOut := run(t, append([]string{"predict"}, tc.args...)...)
				if code != ExitUsage || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") > 1 {
					t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, a line on stderr", code, out, errOut, ExitUsage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Train) != 1 || got.Train[0] != train || !got.Validate {
				t.Errorf("train %v validate %v, want [%s] and true", got.Train, got.Validate, train)
			}
		})
	}
}

// TestPredictValidateTrain fits on the committed validation dataset's
// single-device runs, forecasts its two-device runs from two files, and
// checks the command's numbers against predictor.ValidateSplit's.
func TestPredictValidateTrain(t *testing.T) {
	recs, _, err := profiler.ReadFile(filepath.Join("..", "..", "predictor", "testdata", "validation_runs.jsonl"), profiler.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var k1, k2 []profiler.Record
	for _, r := range recs {
		if r.Config.Model != "resnet50" {
			continue // one model keeps the test quick
		}
		if r.Config.Devices == 1 {
			k1 = append(k1, r)
		} else {
			k2 = append(k2, r)
		}
	}
	dir := t.TempDir()
	train, test := filepath.Join(dir, "k1.jsonl"), filepath.Join(dir, "k2.jsonl")
	if err := profiler.Append(train, k1...); err != nil {
		t.Fatal(err)
	}
	if err := profiler.Append(test, k2...); err != nil {
		t.Fatal(err)
	}
	want, err := predictor.ValidateSplit(context.Background(), k1, k2, "split")
	if err != nil {
		t.Fatal(err)
	}
	all := want.Rows[len(want.Rows)-1]

	code, out, errOut := run(t, "predict", "--data", test, "--validate", "--train", train, "--output", "csv")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows := csvRows(t, out)
	got := rows[len(rows)-1]
	for key, w := range map[string]float64{"n": float64(all.N), "mape": all.MAPE, "max_err": all.MaxErr,
		"floor_n": float64(all.FloorN), "floor_mape": all.FloorMAPE, "judged": float64(all.Judged), "outside": float64(all.Outside)} {
		g, err := strconv.ParseFloat(got[key], 64)
		if err != nil || math.Abs(g-w) > 1e-12 {
			t.Errorf("all: %s = %q, want %v", key, got[key], w)
		}
	}
	// The dataset ran each configuration five times, outside rounds:
	// every configuration has a floor and is judged.
	if all.FloorN != all.N || all.Judged != all.N {
		t.Errorf("all: floor over %d and judged %d of %d configurations, want every one", all.FloorN, all.Judged, all.N)
	}

	code, out, errOut = run(t, "predict", "--data", test, "--validate", "--train", train, "--output", "markdown")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, s := range []string{"of " + test + " forecast from the " + strconv.Itoa(len(k1)) + " measured runs of " + train,
		"| model ", "forecasts outside their configuration's round spread"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	// Fitting on runs of another model forecasts nothing: a usage error.
	code, _, errOut = run(t, "predict", "--data", test, "--validate", "--train", predictData)
	if code != ExitUsage || !strings.Contains(errOut, "no held-out run could be forecast") {
		t.Errorf("train on mlp runs, forecast resnet50: exit %d, stderr %q; want exit %d", code, errOut, ExitUsage)
	}
}
