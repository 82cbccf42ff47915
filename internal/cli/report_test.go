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

// svgBands returns the schedules of the run bands of the SVG at path, in
// order, and the command's standard error.
func svgBands(t *testing.T, args ...string) (schedules []string, errOut string) {
	t.Helper()
	svg := filepath.Join(t.TempDir(), "timelines.svg")
	code, _, errOut := execute(context.Background(), append(append([]string{"report"}, args...), "--svg", svg)...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	data, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range strings.Split(string(data), `<g class="run" `)[1:] {
		_, rest, _ := strings.Cut(part, `data-schedule="`)
		s, _, _ := strings.Cut(rest, `"`)
		schedules = append(schedules, s)
	}
	return schedules, errOut
}

func TestReportSVGSelection(t *testing.T) {
	path := maskedRuns(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	twice := filepath.Join(t.TempDir(), "twice.jsonl")
	if err := os.WriteFile(twice, append(append([]byte{}, data...), data...), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		want    string // the bands' schedules
		wantErr string // on standard error
	}{
		{name: "default: every schedule of the first workload", args: []string{path}, want: "gpipe coop 1f1b"},
		{name: "a filter keeps K=2", args: []string{path, "--devices", "2"}, want: "gpipe coop 1f1b"},
		{name: "filters keep all they match", args: []string{path, "--schedule", "gpipe,coop"}, want: "gpipe coop gpipe coop"},
		{name: "default on repeated runs", args: []string{twice}, want: "gpipe coop 1f1b gpipe coop 1f1b"},
		{name: "capped at eight", args: []string{twice, "--model", "mlp"}, want: "gpipe coop 1f1b gpipe coop 1f1b gpipe coop",
			wantErr: "pipecast: --svg: drew 8 of 12 runs, 4 left out"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, errOut := svgBands(t, tc.args...)
			if strings.Join(got, " ") != tc.want {
				t.Errorf("got bands %q, want %s", got, tc.want)
			}
			if tc.wantErr == "" && errOut != "" || !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("got stderr %q, want %q", errOut, tc.wantErr)
			}
		})
	}
}

func TestReportSVGRunsWithoutEvents(t *testing.T) {
	recs, _, err := profiler.ReadFile(maskedRuns(t), profiler.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	recs[1].Events = nil
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	if err := profiler.Append(path, recs...); err != nil {
		t.Fatal(err)
	}
	got, errOut := svgBands(t, path)
	if strings.Join(got, " ") != "gpipe 1f1b" || !strings.Contains(errOut, "run run-2 has no events to draw (left out)") {
		t.Errorf("got bands %q, stderr %q; want gpipe and 1f1b, and coop's run named", got, errOut)
	}
	for i := range recs {
		recs[i].Events = nil
	}
	none := filepath.Join(t.TempDir(), "none.jsonl")
	if err := profiler.Append(none, recs...); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := execute(context.Background(), "report", none, "--svg", filepath.Join(t.TempDir(), "x.svg"))
	if code == ExitOK || !strings.Contains(errOut, "none of the 3 runs has events to draw") {
		t.Errorf("exit %d, stderr %q; want a failure saying no run has events", code, errOut)
	}
}

// compareRuns writes dataset B beside the masked dataset A of maskedRuns:
// A's runs with step times scaled (×0.5 for the first, ×1.5 for the
// second, the same for the rest), its last run dropped and one run at
// another batch added. It returns the paths of A and B.
func compareRuns(t *testing.T) (a, b string) {
	t.Helper()
	a = maskedRuns(t)
	recs, _, err := profiler.ReadFile(a, profiler.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	recs[0].Summary.StepNanosMedian /= 2
	recs[1].Summary.StepNanosMedian = recs[1].Summary.StepNanosMedian * 3 / 2
	recs[2].Summary.PeakBytesMax *= 2
	extra := recs[3]
	extra.ID, extra.Config.Batch = "run-7", 32
	recs = append(recs[:len(recs)-1], extra)
	b = filepath.Join(t.TempDir(), "after.jsonl")
	if err := profiler.Append(b, recs...); err != nil {
		t.Fatal(err)
	}
	return a, b
}

func TestReportCompareGolden(t *testing.T) {
	a, b := compareRuns(t)
	for _, tc := range []struct{ format, ext string }{{"table", "txt"}, {"markdown", "md"}, {"csv", "csv"}, {"json", "json"}} {
		t.Run(tc.format, func(t *testing.T) {
			code, out, errOut := execute(context.Background(), "report", "--compare", a, b, "--output", tc.format)
			if code != ExitOK || errOut != "" {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			checkGolden(t, "compare_report."+tc.ext, out)
		})
	}
}

func TestReportCompareRatios(t *testing.T) {
	a, b := compareRuns(t)
	code, out, errOut := execute(context.Background(), "report", "--compare", a, b, "--output", "csv")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	header := strings.Split(lines[0], ",")
	field := func(row int, key string) string {
		for i, h := range header {
			if h == key {
				return strings.Split(lines[row], ",")[i]
			}
		}
		t.Fatalf("no column %q in %q", key, lines[0])
		return ""
	}
	// Five runs in both, the sixth only in A, the run at batch 32 only in B.
	tests := []struct {
		row                          int
		stepRatio, peakRatio, onlyIn string
	}{
		{row: 1, stepRatio: "0.5", peakRatio: "1"},
		{row: 2, stepRatio: "1.5", peakRatio: "1"},
		{row: 3, stepRatio: "1", peakRatio: "2"},
		{row: 4, stepRatio: "1", peakRatio: "1"},
		{row: 6, onlyIn: "A"},
		{row: 7, onlyIn: "B"},
	}
	if len(lines) != 8 {
		t.Fatalf("%d rows, want 7:\n%s", len(lines)-1, out)
	}
	for _, tc := range tests {
		if got := field(tc.row, "step_ratio"); got != tc.stepRatio {
			t.Errorf("row %d step ratio: got %q, want %q", tc.row, got, tc.stepRatio)
		}
		if got := field(tc.row, "peak_ratio"); got != tc.peakRatio {
			t.Errorf("row %d peak ratio: got %q, want %q", tc.row, got, tc.peakRatio)
		}
		if got := field(tc.row, "only_in"); got != tc.onlyIn {
			t.Errorf("row %d only_in: got %q, want %q", tc.row, got, tc.onlyIn)
		}
	}
	if got := field(7, "batch"); got != "32" {
		t.Errorf("the row only in B has batch %s, want 32", got)
	}
	// The filters apply to both datasets.
	code, out, errOut = execute(context.Background(), "report", "--compare", a, b, "--output", "csv", "--schedule", "coop")
	if code != ExitOK {
		t.Fatalf("filtered: exit %d: %s", code, errOut)
	}
	if rows := strings.Count(out, "\n") - 1; rows != 2 || strings.Count(out, ",coop,") != 2 {
		t.Errorf("--schedule coop: got %d rows, want the 2 coop configurations:\n%s", rows, out)
	}
}

func TestReportCompareUsageErrors(t *testing.T) {
	a, b := compareRuns(t)
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "one file", args: []string{a}, wantErr: "--compare takes exactly two RUNS.jsonl files, A and B; got 1"},
		{name: "three files", args: []string{a, b, a}, wantErr: "got 3"},
		{name: "detail", args: []string{a, b, "--detail"}, wantErr: "does not take --detail"},
		{name: "svg", args: []string{a, b, "--svg", "x.svg"}, wantErr: "does not take --svg"},
		{name: "svg chart", args: []string{a, b, "--svg-chart", "x.svg"}, wantErr: "does not take --svg-chart"},
		{name: "trace", args: []string{a, b, "--trace", "x.json"}, wantErr: "does not take --trace"},
		{name: "pprof", args: []string{a, b, "--pprof", "x.pb.gz"}, wantErr: "does not take --pprof"},
		{name: "filters match nothing", args: []string{a, b, "--model", "vgg16"}, wantErr: "matches the filters"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := execute(context.Background(), append([]string{"report", "--compare"}, tc.args...)...)
			if code != ExitUsage || out != "" || !strings.Contains(errOut, tc.wantErr) || strings.Count(errOut, "pipecast: ") != 1 {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", code, out, errOut, tc.wantErr)
			}
		})
	}
}

func TestNewCmdReportCompareAndWide(t *testing.T) {
	var got *ReportOptions
	cmd := NewCmdReport(&IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, func(o *ReportOptions) error {
		got = o
		return nil
	})
	cmd.SetArgs([]string{"--compare", "a.jsonl", "b.jsonl", "--wide"})
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !got.Compare || !got.Wide || !reflect.DeepEqual(got.Files, []string{"a.jsonl", "b.jsonl"}) {
		t.Errorf("got compare %t, wide %t, files %q; want both set and a.jsonl b.jsonl", got.Compare, got.Wide, got.Files)
	}
}

func TestReportFoldsOnNarrowTerminal(t *testing.T) {
	path := maskedRuns(t)
	fakeTerminal(t, 80)
	golden := func(name string) string {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	code, out, errOut := execute(context.Background(), "report", path)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, line := range strings.Split(out, "\n") {
		if n := len([]rune(line)); n > 80 {
			t.Errorf("line of %d characters on an 80-column terminal: %q", n, line)
		}
	}
	if !strings.Contains(strings.ReplaceAll(out, "\n", " "), "folded: ") || !strings.Contains(out, "--wide shows all columns") {
		t.Errorf("no footnote on what was folded:\n%s", out)
	}
	checkGolden(t, "fold_report_80.txt", out)
	// --wide, and formats other than table, print what a pipe gets.
	for _, tc := range []struct {
		args   []string
		golden string
	}{
		{args: []string{"--wide"}, golden: "report.txt"},
		{args: []string{"--output", "markdown"}, golden: "report.md"},
		{args: []string{"--output", "csv"}, golden: "report.csv"},
	} {
		code, out, errOut := execute(context.Background(), append([]string{"report", path}, tc.args...)...)
		if code != ExitOK || out != golden(tc.golden) {
			t.Errorf("%q: exit %d (%s), output differs from %s:\n%s", tc.args, code, errOut, tc.golden, out)
		}
	}
}

// TestReportSVGMemory checks --svg-memory: it draws the first run the
// filters keep, and a run without a memory track is bad input, exit 2,
// found before any other file is written.
func TestReportSVGMemory(t *testing.T) {
	recs, _, err := profiler.ReadFile(maskedRuns(t), profiler.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	without := filepath.Join(dir, "without.jsonl")
	if err := profiler.Append(without, recs...); err != nil {
		t.Fatal(err)
	}
	svg, trace := filepath.Join(dir, "mem.svg"), filepath.Join(dir, "trace.json")
	code, _, errOut := execute(context.Background(), "report", without, "--svg-memory", svg, "--trace", trace)
	if code != ExitUsage || !strings.Contains(errOut, "--svg-memory") || !strings.Contains(errOut, "no device has a memory track") {
		t.Errorf("without tracks: exit %d, stderr %q; want %d and the reason", code, errOut, ExitUsage)
	}
	for _, p := range []string{svg, trace} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("without tracks: %s written, want nothing", p)
		}
	}

	// A track on every device of the second run: the first that
	// --schedule keeps.
	for d := range recs[1].Devices {
		dev := &recs[1].Devices[d]
		tr := &profiler.MemoryTrack{Step: recs[1].Steps[0].Step, StartLiveBytesByCategory: map[string]int64{},
			PeakBytesByCategory: dev.PeakBytesByCategory, PeakBytes: dev.PeakBytes}
		for c, name := range []string{"weights", "activations"} {
			tr.Categories = append(tr.Categories, name)
			tr.Changes = append(tr.Changes, profiler.MemoryChange{Nanos: int64(1000 * (c + 1)), Category: c, Bytes: dev.PeakBytesByCategory[name], Event: -1})
		}
		dev.MemoryTrack = tr
	}
	with := filepath.Join(dir, "with.jsonl")
	if err := profiler.Append(with, recs...); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = execute(context.Background(), "report", with, "--schedule", recs[1].Config.Schedule, "--svg-memory", svg)
	data, _ := os.ReadFile(svg)
	if code != ExitOK || !bytes.Contains(data, []byte(`class="pipecast-memory"`)) {
		t.Fatalf("with tracks: exit %d (%s), %d bytes written; want a memory chart", code, errOut, len(data))
	}
	if n := bytes.Count(data, []byte(`class="memory-device"`)); n != len(recs[1].Devices) {
		t.Errorf("%d device panels, want %d", n, len(recs[1].Devices))
	}
}
