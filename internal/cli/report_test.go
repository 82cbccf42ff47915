package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pipecast/pipecast/profiler"
)

func TestNewCmdReportFlags(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		want      ReportOptions
		wantUsage string
	}{
		{name: "defaults", args: []string{"a.jsonl"}, want: ReportOptions{Output: FormatTable, Files: []string{"a.jsonl"}}},
		{name: "everything", args: []string{"a.jsonl", "b.jsonl", "--model", "mlp,vgg16", "--schedule", "coop",
			"--devices", "1,2", "--microbatches", "4", "--detail", "--pprof", "p", "--trace", "t", "--svg", "s",
			"--svg-chart", "c", "--output", "markdown"},
			want: ReportOptions{Output: FormatMarkdown, Files: []string{"a.jsonl", "b.jsonl"}, Models: []string{"mlp", "vgg16"},
				Schedules: []string{"coop"}, Devices: []int{1, 2}, Micro: []int{4}, Detail: true, Pprof: "p", Trace: "t",
				SVG: "s", SVGChart: "c"}},
		{name: "no file", args: nil, wantUsage: "needs at least one RUNS.jsonl file"},
		{name: "detail in csv", args: []string{"a.jsonl", "--detail", "--output", "csv"}, wantUsage: "--detail prints several tables"},
		{name: "bad devices", args: []string{"a.jsonl", "--devices", "x"}, wantUsage: "invalid argument"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got *ReportOptions
			cmd := NewCmdReport(&IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, func(o *ReportOptions) error {
				got = o
				return nil
			})
			cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &UsageError{Err: err} })
			cmd.SetArgs(append([]string{}, tc.args...))
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.Execute()
			if tc.wantUsage != "" {
				checkUsageError(t, err, tc.wantUsage)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got.IO = nil
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("got %+v\nwant %+v", *got, tc.want)
			}
		})
	}
}

// maskedRuns writes the committed records of a tiny mlp sweep with their
// volatile fields — times, identifiers, host — replaced by fixed values,
// so that the goldens check what the report shows, not the machine that
// ran the sweep. It returns the path of the masked dataset.
func maskedRuns(t *testing.T) string {
	t.Helper()
	recs, bad, err := profiler.ReadFile(filepath.Join("testdata", "report_runs.jsonl"), profiler.ReadOptions{})
	if err != nil || len(bad) != 0 || len(recs) == 0 {
		t.Fatalf("read testdata: %d records, %v, %v", len(recs), bad, err)
	}
	for i := range recs {
		r := &recs[i]
		r.ID = fmt.Sprintf("run-%d", i+1)
		r.CreatedUTC = "2025-01-02T03:04:05Z"
		r.Env.Host, r.Env.CPUModel, r.Env.Cores = "host", "cpu", 2
		r.Env.Version, r.Env.Revision, r.Env.GoVersion = "v0.0.0", "", "go"
		r.Env.PeakRSSBytes, r.Env.Calibration = 0, nil
		step := int64(10_000_000 + 1_000_000*i)
		for j := range r.Steps {
			r.Steps[j].WallNanos = step
		}
		r.Summary.StepNanosMedian, r.Summary.StepNanosMin, r.Summary.StepNanosMax = step, step, step
		r.Summary.SamplesPerSecond = float64(r.Config.Batch) / (float64(step) / 1e9)
		r.Summary.BubbleFraction = 0.1
		for d := range r.Devices {
			dev := &r.Devices[d]
			dev.BusyNanos = 0
			for op := range dev.BusyNanosByOp {
				dev.BusyNanosByOp[op] = 1_000_000
				dev.BusyNanos += 1_000_000
			}
			dev.IdleNanos = 500_000
		}
		for b := range r.Blocks {
			blk := &r.Blocks[b]
			blk.ForwardNanos, blk.BackwardNanos = 100_000, 200_000
			if blk.RecomputeNanos > 0 {
				blk.RecomputeNanos = 100_000
			}
			if blk.PredictNanos > 0 {
				blk.PredictNanos = 50_000
			}
		}
		for e := range r.Events {
			r.Events[e].StartNanos, r.Events[e].EndNanos = int64(e)*1000, int64(e)*1000+500
		}
	}
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	if err := profiler.Append(path, recs...); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReportGolden(t *testing.T) {
	path := maskedRuns(t)
	tests := []struct {
		name string
		args []string
	}{
		{name: "report", args: nil},
		{name: "report_coop_k2", args: []string{"--schedule", "coop", "--devices", "2"}},
		{name: "report_detail_k2", args: []string{"--devices", "2", "--schedule", "gpipe", "--detail"}},
	}
	exts := map[string]string{"table": "txt", "markdown": "md", "csv": "csv", "json": "json"}
	for _, tc := range tests {
		for _, format := range []string{"table", "markdown", "csv", "json"} {
			if format == "csv" && strings.Contains(tc.name, "detail") {
				continue // a usage error, tested apart
			}
			t.Run(tc.name+"/"+format, func(t *testing.T) {
				args := append([]string{"report", path, "--output", format}, tc.args...)
				code, out, errOut := execute(context.Background(), args...)
				if code != ExitOK || errOut != "" {
					t.Fatalf("exit %d: %s", code, errOut)
				}
				if format == "json" && !json.Valid([]byte(out)) {
					t.Errorf("invalid json:\n%s", out)
				}
				checkGolden(t, tc.name+"."+exts[format], out)
			})
		}
	}
}

func TestReportTruncatedLastLine(t *testing.T) {
	data, err := os.ReadFile(maskedRuns(t))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
	// What a crash in the middle of an append leaves: half a line.
	last := lines[len(lines)-1]
	data = append(data, last[:len(last)/2]...)
	path := filepath.Join(t.TempDir(), "cut.jsonl")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := execute(context.Background(), "report", path, "--output", "csv")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := fmt.Sprintf("%s:%d: ", path, len(lines)+1)
	if !strings.Contains(errOut, want) || strings.Count(errOut, "\n") != 1 {
		t.Errorf("stderr %q does not report the one bad line as %q", errOut, want)
	}
	if rows := strings.Count(out, "\n") - 1; rows != len(lines) {
		t.Errorf("%d rows, want the %d complete records", rows, len(lines))
	}
}

func TestReportExports(t *testing.T) {
	path := maskedRuns(t)
	dir := t.TempDir()
	files := map[string]string{"--pprof": "p.pb.gz", "--trace": "t.json", "--svg": "timeline.svg", "--svg-chart": "chart.svg"}
	args := []string{"report", path}
	for flag, name := range files {
		args = append(args, flag, filepath.Join(dir, name))
	}
	if code, _, errOut := execute(context.Background(), args...); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, name := range files {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || len(data) == 0 {
			t.Errorf("%s: %d bytes, %v", name, len(data), err)
		}
		if strings.HasSuffix(name, ".svg") && !bytes.Contains(data, []byte("<svg")) {
			t.Errorf("%s is not an SVG", name)
		}
	}
}

func TestReportExitCodes(t *testing.T) {
	path := maskedRuns(t)
	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing.jsonl")
	tests := []struct {
		name    string
		args    []string
		want    ExitCode
		wantErr string
	}{
		{name: "missing file", args: []string{"report", missing}, want: ExitUsage, wantErr: missing},
		{name: "empty file", args: []string{"report", empty}, want: ExitUsage, wantErr: "no records to report"},
		{name: "filters match nothing", args: []string{"report", path, "--model", "vgg16"}, want: ExitUsage,
			wantErr: "none of the 6 records matches the filters"},
		{name: "no file", args: []string{"report"}, want: ExitUsage, wantErr: "needs at least one"},
		{name: "detail in csv", args: []string{"report", path, "--detail", "--output", "csv"}, want: ExitUsage},
		{name: "unknown format", args: []string{"report", path, "--output", "xml"}, want: ExitUsage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := execute(context.Background(), tc.args...)
			if code != tc.want || out != "" || !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q", code, out, errOut, tc.want, tc.wantErr)
			}
		})
	}
}
