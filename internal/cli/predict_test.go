package cli

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/predictor"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/reports"
	"github.com/pipecast/pipecast/runner"
	"github.com/pipecast/pipecast/schedule"
)

// predictData is a committed dataset of a small mlp sweep (pipecast
// profile --model mlp --width 0.25 --batch 16 --devices 1,2
// --microbatches 1,2,4 --schedule gpipe,coop --steps 2 --threads 1): fixed
// measurements, so that forecasts from it are fixed too.
var predictData = filepath.Join("testdata", "predict_runs.jsonl")

// parsePredict runs the predict command's flag parsing on args and
// returns the options its run function received.
func parsePredict(t *testing.T, args ...string) (*PredictOptions, error) {
	t.Helper()
	var got *PredictOptions
	cmd := NewCmdPredict(&IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, func(o *PredictOptions) error {
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

func TestNewCmdPredictFlags(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		want      PredictOptions
		wantUsage string
	}{
		{name: "defaults: everything from the data", args: []string{"--data", "a.jsonl"},
			want: PredictOptions{Output: FormatTable, Data: []string{"a.jsonl"}, Holdout: "devices", Seed: 1}},
		{name: "repeated and comma-separated data", args: []string{"--data", "a.jsonl,b.jsonl", "--data", "c.jsonl"},
			want: PredictOptions{Output: FormatTable, Data: []string{"a.jsonl", "b.jsonl", "c.jsonl"}, Holdout: "devices", Seed: 1}},
		{name: "configuration lists", args: []string{"--data", "a.jsonl", "--model", "mlp", "--image", "32", "--classes", "10",
			"--width", "0.25,0.5", "--batch", "16", "--devices", "2,4,8", "--microbatches", "4,8", "--schedule", "gpipe,coop",
			"--checkpoint", "never", "--prefetch", "2", "--balance", "params", "--threads", "1", "--backend", "cpu",
			"--out", "dir", "--trace", "t.json", "--pprof", "p.pb.gz", "--svg", "s.svg", "--output", "csv"},
			want: PredictOptions{Output: FormatCSV, Data: []string{"a.jsonl"}, Sweep: config.Sweep{
				Models:       []string{"mlp"},
				Batches:      []int{16},
				Devices:      []int{2, 4, 8},
				Micro:        []int{4, 8},
				Schedules:    []string{"gpipe", "coop"},
				Variants:     schedule.Variants{Checkpoints: []schedule.Checkpoint{schedule.Never}, Prefetch: []int{2}},
				Balance:      "params",
				Threads:      1,
				Backend:      "cpu",
				SizeVariants: models.SizeVariants{Images: []int{32}, Classes: []int{10}, Widths: []float64{0.25, 0.5}},
			}, Out: "dir", Trace: "t.json", Pprof: "p.pb.gz", SVG: "s.svg", ThreadsFlag: "1", Holdout: "devices", Seed: 1}},
		{name: "a backend this build lacks", args: []string{"--data", "a.jsonl", "--backend", "cuda"},
			want: PredictOptions{Output: FormatTable, Data: []string{"a.jsonl"}, Sweep: config.Sweep{Backend: "cuda"}, Holdout: "devices", Seed: 1}},
		{name: "validate", args: []string{"--data", "a.jsonl", "--validate", "--holdout", "random", "--seed", "7", "--svg", "v.svg"},
			want: PredictOptions{Output: FormatTable, Data: []string{"a.jsonl"}, Validate: true, Holdout: "random", Seed: 7, SVG: "v.svg"}},
		{name: "optimizer", args: []string{"--data", "a.jsonl", "--optimizer", "adamw", "--lr", "3e-4"},
			want: PredictOptions{Output: FormatTable, Data: []string{"a.jsonl"}, Sweep: config.Sweep{Optimizer: "adamw", LR: 3e-4}, Holdout: "devices", Seed: 1}},
		{name: "no data", args: nil, wantUsage: "--data: need at least one"},
		{name: "unknown holdout", args: []string{"--data", "a", "--validate", "--holdout", "batch"}, wantUsage: `--holdout "batch": unknown holdout`},
		{name: "holdout without validate", args: []string{"--data", "a", "--holdout", "random"}, wantUsage: "--holdout applies to --validate only"},
		{name: "seed without validate", args: []string{"--data", "a", "--seed", "3"}, wantUsage: "--seed applies to --validate only"},
		{name: "configuration with validate", args: []string{"--data", "a", "--validate", "--devices", "2"},
			wantUsage: "--devices does not apply to --validate"},
		{name: "out with validate", args: []string{"--data", "a", "--validate", "--out", "d"}, wantUsage: "--out does not apply to --validate"},
		{name: "optimizer with validate", args: []string{"--data", "a", "--validate", "--optimizer", "sgd"}, wantUsage: "--optimizer does not apply to --validate"},
		{name: "unknown optimizer", args: []string{"--data", "a", "--optimizer", "adam"}, wantUsage: `--optimizer "adam": unknown optimizer`},
		{name: "one beta", args: []string{"--data", "a", "--betas", "0.9"}, wantUsage: "--betas [0.9]: want two values"},
		{name: "unknown model", args: []string{"--data", "a", "--model", "resnet51"}, wantUsage: "--model:"},
		{name: "unknown schedule", args: []string{"--data", "a", "--schedule", "zb"}, wantUsage: `--schedule "zb": unknown schedule`},
		{name: "unknown checkpoint", args: []string{"--data", "a", "--checkpoint", "sometimes"}, wantUsage: `unknown checkpoint mode "sometimes"`},
		{name: "unknown balance", args: []string{"--data", "a", "--balance", "flops"}, wantUsage: `--balance "flops": unknown balance`},
		{name: "zero devices", args: []string{"--data", "a", "--devices", "2,0"}, wantUsage: "--devices 0: need at least 1"},
		{name: "zero width", args: []string{"--data", "a", "--width", "0"}, wantUsage: "--width 0: must be a positive number"},
		{name: "empty list", args: []string{"--data", "a", "--microbatches", ""}, wantUsage: "--microbatches"},
		{name: "negative threads", args: []string{"--data", "a", "--threads", "-1"}, wantUsage: "--threads -1"},
		{name: "malformed list", args: []string{"--data", "a", "--devices", "1,two"}, wantUsage: "invalid argument"},
		{name: "argument", args: []string{"a.jsonl"}, wantUsage: `accepts no arguments, got "a.jsonl"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parsePredict(t, tc.args...)
			if tc.wantUsage != "" {
				checkUsageError(t, err, tc.wantUsage)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got.IO = nil
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", *got, tc.want)
			}
		})
	}
}

func TestDataSweep(t *testing.T) {
	recs, err := readMeasured(&bytes.Buffer{}, []string{predictData})
	if err != nil {
		t.Fatal(err)
	}
	keys := dataKeys(recs)
	if len(keys) != 1 {
		t.Fatalf("keys %v, want the mlp's one", keys)
	}
	got := predictor.DataSweep(recs, keys[0])
	got.Dataset, got.Seed = "", 0
	// The mlp's record has no sequence, vocabulary or layers: 0, which
	// the mlp ignores. It names no optimizer: SGD, with its
	// hyper-parameters.
	decay := 1e-4
	want := config.Sweep{
		Optimizer:    "sgd",
		LR:           0.01,
		WeightDecay:  &decay,
		Models:       []string{"mlp"},
		Batches:      []int{16},
		Devices:      []int{1, 2},
		Micro:        []int{1, 2, 4},
		Schedules:    []string{"gpipe", "coop"},
		Variants:     schedule.Variants{Checkpoints: []schedule.Checkpoint{schedule.ExceptLast}, Prefetch: []int{1}},
		Balance:      "time",
		Threads:      1,
		Backend:      "cpu",
		SizeVariants: models.SizeVariants{Images: []int{0}, Classes: []int{keys[0].Classes}, Widths: []float64{0.25}, Seqs: []int{0}, Vocabs: []int{0}, Layers: []int{0}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// TestPredictGolden forecasts from the committed data and renders the
// table in every format. The step times, bubbles and uncertainties come
// from fits that are free to improve, so they are replaced by fixed values
// before rendering; the configurations, peak memory (an exact replay of
// the runner's accounting) and bytes moved are the forecasts' own. K = 1
// and 3 leave the three-block mlp a single partition, whatever the fitted
// block times.
func TestPredictGolden(t *testing.T) {
	opts, err := parsePredict(t, "--data", predictData, "--devices", "1,3", "--microbatches", "2,4", "--schedule", "gpipe,1f1b")
	if err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	opts.IO = &IOStreams{Out: &bytes.Buffer{}, ErrOut: &errOut}
	fc, err := forecast(context.Background(), opts)
	if err != nil || errOut.Len() > 0 {
		t.Fatalf("forecast: %v; stderr %q", err, errOut.String())
	}
	preds := fc.preds
	if len(preds) != 8 {
		t.Fatalf("%d forecasts, want K 1,3 × M 2,4 × gpipe,1f1b = 8", len(preds))
	}
	for i := range preds {
		r := &preds[i]
		if r.Kind != profiler.KindPredicted {
			t.Errorf("forecast %d: kind %q", i, r.Kind)
		}
		r.ID, r.CreatedUTC, r.Oversubscribed = fmt.Sprintf("pred-%d", i+1), "2025-01-02T03:04:05Z", false
		step := int64(2_000_000 + 100_000*i)
		s := &r.Summary
		s.StepNanosMedian, s.StepNanosMin, s.StepNanosMax = step, step, step
		s.SamplesPerSecond = float64(r.Config.Batch) / (float64(step) / 1e9)
		s.BubbleFraction, s.PredictedRelErr = 0.25, 0.05
	}
	table := predictTable(fc)
	for _, format := range []string{"table", "markdown", "csv", "json"} {
		t.Run(format, func(t *testing.T) {
			var out bytes.Buffer
			if err := reports.Render(&out, table, reports.Format(format)); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "predict_k1_k3."+goldenExt[format], out.String())
		})
	}
}

// predictRows runs predict with --output csv and returns its rows as
// maps from column key to value.
func predictRows(t *testing.T, args ...string) []map[string]string {
	t.Helper()
	code, out, errOut := execute(context.Background(), append(append([]string{"predict"}, args...), "--output", "csv")...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	return csvRows(t, out)
}

func csvRows(t *testing.T, out string) []map[string]string {
	t.Helper()
	table, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(table) < 1 {
		t.Fatalf("csv: %v\n%s", err, out)
	}
	var rows []map[string]string
	for _, line := range table[1:] {
		row := map[string]string{}
		for i, key := range table[0] {
			row[key] = line[i]
		}
		rows = append(rows, row)
	}
	return rows
}

// liveRuns trains the mlp on one device for a few micro-batch counts and
// returns the path of their records: data made on this machine, now.
func liveRuns(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	for _, m := range []int{1, 2, 4} {
		cfg := config.Config{
			Model: "mlp", ModelConfig: models.Config{Width: 0.25}, Batch: 16, Balance: "time", Threads: 1,
			Schedule: schedule.Options{Name: schedule.GPipe, Devices: 1, Micro: m, Checkpoint: schedule.ExceptLast},
		}
		res, err := runner.Run(context.Background(), cfg, runner.RunOptions{Warmup: 1, Steps: 2, BlockTiming: true, Calibrate: true})
		if err != nil {
			t.Fatalf("run M=%d: %v", m, err)
		}
		if err := profiler.Append(path, res.Record()); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func TestPredictFromOneDeviceToTwo(t *testing.T) {
	path := liveRuns(t)
	rows := predictRows(t, "--data", path, "--devices", "2", "--schedule", "gpipe,1f1b")
	if len(rows) != 6 {
		t.Fatalf("%d rows, want 2 schedules × the data's 3 micro-batch counts", len(rows))
	}
	for _, r := range rows {
		if r["kind"] != profiler.KindPredicted || r["devices"] != "2" || r["model"] != "mlp" || r["threads"] != "1" {
			t.Errorf("row %v: want a predicted mlp run on 2 devices of 1 thread", r)
		}
		if r["step_nanos_median"] == "" || r["step_nanos_median"] == "0" || r["predicted_rel_err"] == "" {
			t.Errorf("row %v: no step time or uncertainty", r)
		}
		if r["moved_bytes_per_step"] == "0" {
			t.Errorf("row %v: two stages moved no bytes", r)
		}
	}
}

func TestPredictRefusesWhatTheDataLacks(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "another model", args: []string{"--model", "vgg16bn"}, wantErr: "--model vgg16bn"},
		{name: "another width", args: []string{"--width", "0.25,0.5"}, wantErr: "--width 0.5"},
		{name: "another thread count", args: []string{"--threads", "4"}, wantErr: "--threads 4"},
		{name: "another backend", args: []string{"--backend", "cuda"}, wantErr: "--backend cuda"},
		{name: "another transport", args: []string{"--transport", "mpi"}, wantErr: "--transport mpi"},
		{name: "another optimizer", args: []string{"--optimizer", "adamw"}, wantErr: "--optimizer adamw"},
		{name: "more devices than blocks", args: []string{"--devices", "9"}, wantErr: "--devices 9: mlp has"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := execute(context.Background(), append([]string{"predict", "--data", predictData}, tc.args...)...)
			if code != ExitUsage || out != "" {
				t.Errorf("exit %d, stdout %q; want exit %d and nothing", code, out, ExitUsage)
			}
			if !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("stderr %q lacks %q", errOut, tc.wantErr)
			}
			if tc.name != "more devices than blocks" && !strings.Contains(errOut, "mlp (image 0,") {
				t.Errorf("stderr %q does not list the data's key", errOut)
			}
		})
	}
}

// TestPredictRefusesMixedHugePages checks that data whose runs of one
// workload were measured with and without huge pages is refused, for a
// forecast and for a validation, rather than fitted as one.
func TestPredictRefusesMixedHugePages(t *testing.T) {
	recs, _, err := profiler.ReadFile(predictData, profiler.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		recs[i].Env.HugePages = []string{"advised", "off"}[i%2]
	}
	mixed := filepath.Join(t.TempDir(), "mixed.jsonl")
	if err := profiler.Append(mixed, recs...); err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]string{nil, {"--validate"}} {
		code, out, errOut := execute(context.Background(), append([]string{"predict", "--data", mixed}, extra...)...)
		if code != ExitUsage || out != "" {
			t.Errorf("%v: exit %d, stdout %q; want exit %d and nothing", extra, code, out, ExitUsage)
		}
		if !strings.Contains(errOut, "with and without huge pages") {
			t.Errorf("%v: stderr %q does not say why", extra, errOut)
		}
	}
}

func TestPredictNoData(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := execute(context.Background(), "predict", "--data", empty)
	if code != ExitUsage || !strings.Contains(errOut, "holds no measured run") || strings.Contains(errOut, "--help") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

func TestPredictOutThenReport(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"--trace": "t.json", "--pprof": "p.pb.gz", "--svg": "timeline.svg"}
	args := []string{"predict", "--data", predictData, "--devices", "2", "--microbatches", "4", "--out", dir}
	for flag, name := range files {
		args = append(args, flag, filepath.Join(dir, name))
	}
	if code, _, errOut := execute(context.Background(), args...); code != ExitOK {
		t.Fatalf("predict exited %d: %s", code, errOut)
	}
	for _, name := range files {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || len(data) == 0 {
			t.Errorf("%s: %d bytes, %v", name, len(data), err)
		}
	}
	code, out, errOut := execute(context.Background(), "report", filepath.Join(dir, "runs.jsonl"), "--output", "csv")
	if code != ExitOK || errOut != "" {
		t.Fatalf("report exited %d: %s", code, errOut)
	}
	rows := csvRows(t, out)
	if len(rows) != 2 {
		t.Fatalf("report shows %d runs, want gpipe's and coop's forecasts", len(rows))
	}
	for _, r := range rows {
		if r["kind"] != profiler.KindPredicted || r["predicted_rel_err"] == "" {
			t.Errorf("row %v: not shown as a forecast", r)
		}
	}
	// A record appended twice is still one forecast per line.
	code, _, errOut = execute(context.Background(), "report", filepath.Join(dir, "runs.jsonl"), "--detail", "--pprof", filepath.Join(dir, "again.pb.gz"))
	if code != ExitOK {
		t.Errorf("report --detail exited %d: %s", code, errOut)
	}
}

func TestPredictValidateCommittedData(t *testing.T) {
	code, out, errOut := execute(context.Background(), "predict", "--data", predictData, "--validate", "--output", "csv")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows := csvRows(t, out)
	var schedules []string
	for _, r := range rows {
		schedules = append(schedules, r["schedule"])
	}
	// Holding out K = 1 leaves K = 2 to fit on and the reverse: every
	// run of the data is forecast once.
	if !reflect.DeepEqual(schedules, []string{"gpipe", "coop", "all"}) || rows[2]["n"] != "12" {
		t.Errorf("rows %v: want gpipe, coop and all over the 12 runs", rows)
	}
}

func TestPredictValidateLive(t *testing.T) {
	path := liveRuns(t)
	svg := filepath.Join(t.TempDir(), "accuracy.svg")
	code, out, errOut := execute(context.Background(), "predict", "--data", path, "--validate", "--holdout", "microbatch",
		"--svg", svg, "--output", "csv")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows := csvRows(t, out)
	if len(rows) != 2 || rows[0]["schedule"] != "gpipe" || rows[1]["schedule"] != "all" {
		t.Fatalf("rows %v: want gpipe's and all", rows)
	}
	for _, key := range []string{"n", "mape", "max_err", "kendall_tau", "noise", "baseline_mape", "baseline_max_err"} {
		if _, ok := rows[1][key]; !ok {
			t.Errorf("no column %s in %v", key, rows[1])
		}
	}
	if rows[1]["n"] != "3" {
		t.Errorf("all: %s runs held out, want each of the 3", rows[1]["n"])
	}
	data, err := os.ReadFile(svg)
	if err != nil || !bytes.Contains(data, []byte("<svg")) || !bytes.Contains(data, []byte("y = x")) {
		t.Errorf("%s: %d bytes, %v: not the forecast plot", svg, len(data), err)
	}
}

// TestPredictStraggler checks that a forecast with --straggler slows the
// step and says so in its record.
func TestPredictStraggler(t *testing.T) {
	var steps []int64
	for _, extra := range [][]string{nil, {"--straggler", "1:2"}} {
		opts, err := parsePredict(t, append([]string{"--data", predictData, "--devices", "2", "--microbatches", "2", "--schedule", "gpipe"}, extra...)...)
		if err != nil {
			t.Fatal(err)
		}
		opts.IO = &IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}
		fc, err := forecast(context.Background(), opts)
		if err != nil || len(fc.preds) != 1 {
			t.Fatalf("%v: forecasts %v, %v", extra, fc, err)
		}
		preds := fc.preds
		if want := map[bool]float64{false: 0, true: 2}[extra != nil]; preds[0].Config.StragglerFactor != want {
			t.Errorf("%v: straggler factor %v recorded, want %v", extra, preds[0].Config.StragglerFactor, want)
		}
		steps = append(steps, preds[0].Summary.StepNanosMedian)
	}
	if steps[1] <= steps[0] {
		t.Errorf("a straggler of factor 2 forecasts %d ns, without %d ns", steps[1], steps[0])
	}
}

func TestPredictSVGBesideMeasured(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string // in the SVG
		not  []string // not in it
	}{
		{name: "measured run of the configuration", args: []string{"--devices", "2", "--microbatches", "4", "--schedule", "gpipe"},
			want: []string{`class="pipecast-timelines"`, ">predicted · gpipe · checkpoint except-last · K=2 · M=4 · simulated step: ",
				">measured · gpipe · checkpoint except-last · K=2 · M=4 · step "}},
		{name: "no measured run of it", args: []string{"--devices", "3", "--microbatches", "4", "--schedule", "gpipe"},
			want: []string{`class="pipecast-timeline"`, "predicted · mlp · gpipe · K=3 · M=4"}, not: []string{"measured"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svg := filepath.Join(t.TempDir(), "timeline.svg")
			args := append([]string{"predict", "--data", predictData, "--svg", svg}, tc.args...)
			if code, _, errOut := execute(context.Background(), args...); code != ExitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			data, err := os.ReadFile(svg)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.want {
				if !strings.Contains(string(data), s) {
					t.Errorf("the SVG lacks %q", s)
				}
			}
			for _, s := range tc.not {
				if strings.Contains(string(data), s) {
					t.Errorf("the SVG holds %q", s)
				}
			}
		})
	}
}

// TestPredictExtrapolated checks that predict notes the forecasts at
// micro-batch sizes outside those the data measured (4–16 samples) and
// no others.
func TestPredictExtrapolated(t *testing.T) {
	code, out, errOut := run(t, "predict", "--data", predictData, "--devices", "2", "--microbatches", "1,16", "--schedule", "gpipe")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if want := "Extrapolated: micro-batches of 1 sample lie outside the 4–16 samples the runs measured"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	code, out, errOut = run(t, "predict", "--data", predictData, "--devices", "2", "--microbatches", "1,2,4", "--schedule", "gpipe")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "Extrapolated") {
		t.Errorf("sizes 16, 8 and 4 were measured, yet:\n%s", out)
	}
}
