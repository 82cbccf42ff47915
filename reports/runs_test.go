package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

// runsRecord is a hand-built measured record of a two-stage pipeline whose
// numbers are chosen so that every derived column is easy to check.
func runsRecord(id, sched, checkpoint string, prefetch, k, m int, stepMs int64, peak int64) profiler.Record {
	cfg := profiler.RunConfig{
		Model:           "resnet50",
		Batch:           16,
		Balance:         "macs",
		Threads:         1,
		Steps:           3,
		Warmup:          1,
		Seed:            1,
		Dataset:         "synthetic",
		OptimizerRecord: models.OptimizerRecord{LR: 0.01, Momentum: 0.9, WeightDecay: 1e-4},
		RecordOptions:   schedule.RecordOptions{Devices: k, Micro: m, Schedule: sched, Checkpoint: checkpoint, Prefetch: prefetch},
		SizeRecord:      models.SizeRecord{Image: 32, Classes: 10, Width: 0.25},
	}
	r := profiler.Record{
		Schema: profiler.SchemaVersion, Kind: profiler.KindMeasured, ID: id, CreatedUTC: "2025-01-02T03:04:05Z",
		Env:    profiler.Environment{Host: "test", OS: "linux", Arch: "amd64", Cores: 2, Backend: "cpu"},
		Config: cfg,
		Steps: []profiler.Step{
			{Step: 1, WallNanos: stepMs * 1e6, Loss: 2.3},
			{Step: 2, WallNanos: (stepMs - 1) * 1e6, Loss: 2.2},
			{Step: 3, WallNanos: (stepMs + 2) * 1e6, Loss: 2.1},
		},
		Summary: profiler.Summary{
			StepNanosMedian: stepMs * 1e6, StepNanosMin: (stepMs - 1) * 1e6, StepNanosMax: (stepMs + 2) * 1e6,
			SamplesPerSecond: 16 / (float64(stepMs) / 1e3), BubbleFraction: 0.25,
			PeakBytesMax: peak, MovedBytesPerStep: int64(k-1) * 2 * 65536,
		},
	}
	names := []string{"conv1", "layer1", "layer2", "fc"}
	per := len(names) / k
	for d := range k {
		end := (d + 1) * per
		if d == k-1 {
			end = len(names)
		}
		r.Partition = append(r.Partition, profiler.Stage{Device: d, FirstBlock: d * per, EndBlock: end,
			Blocks: names[d*per : end], Params: 1000, MACsPerSample: 5000, ActivationBytesPerSample: 4096})
		busy := map[string]int64{"forward": stepMs * 3e5, "backward": stepMs * 4e5}
		if k > 1 {
			busy["send"] = 1e5
			busy["recv"] = 2e5
		}
		r.Devices = append(r.Devices, profiler.Device{
			Index: d, Name: "cpu:" + string(rune('0'+d)), Stage: d, BusyNanosByOp: busy,
			BusyNanos: stepMs * 7e5, IdleNanos: stepMs * 3e5,
			PeakBytesByCategory: map[string]int64{"weights": 4000, "activations": peak - 4000},
			PeakBytes:           peak, SentBytesPerStep: 65536, ReceivedBytesPerStep: 65536,
		})
	}
	for b, name := range names {
		stage := min(b/per, k-1)
		bt := profiler.BlockTiming{Block: b, Name: name, Stage: stage, Samples: 16 / m,
			ForwardNanos: int64(b+1) * 1e5, BackwardNanos: int64(b+1) * 2e5}
		if checkpoint == "always" {
			bt.RecomputeNanos = int64(b+1) * 1e5
		}
		r.Blocks = append(r.Blocks, bt)
	}
	return r
}

// runsSample is a small dataset: GPipe in two modes, coop and 1F1B on the
// same workload, a 1F1B run with no GPipe counterpart, and an
// oversubscribed coop run.
func runsSample() []profiler.Record {
	over := runsRecord("run-6", "coop", "", 2, 2, 4, 80, 6<<20)
	over.Config.Threads = 2
	over.Oversubscribed = true
	return []profiler.Record{
		runsRecord("run-1", "gpipe", "always", 0, 2, 4, 120, 8<<20),
		runsRecord("run-2", "gpipe", "except-last", 0, 2, 4, 100, 10<<20),
		runsRecord("run-3", "coop", "", 1, 2, 4, 80, 5<<20),
		runsRecord("run-4", "1f1b", "", 0, 2, 4, 90, 7<<20),
		runsRecord("run-5", "1f1b", "", 0, 2, 8, 95, 6<<20),
		over,
	}
}

func TestRunsTableGolden(t *testing.T) {
	tab := RunsTable(runsSample(), RunsTableOptions{Title: "Sample runs", Footnotes: []string{"extra note"}})
	for _, f := range allFormats {
		var buf bytes.Buffer
		if err := Render(&buf, tab, f); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		checkGolden(t, "runs."+extension[f], buf.Bytes())
	}
}

func TestRunsTableComparesWithGPipe(t *testing.T) {
	recs := runsSample()
	tab := RunsTable(recs, RunsTableOptions{})
	col := func(key string) int {
		for i, c := range tab.Columns {
			if c.Key == key {
				return i
			}
		}
		t.Fatalf("no column %q", key)
		return -1
	}
	speed, mem, sched := col("speedup_vs_gpipe"), col("peak_vs_gpipe"), col("schedule")
	tests := []struct {
		name      string
		row       int
		wantSpeed any // nil: no GPipe run to compare with
		wantMem   any
		wantText  string
	}{
		{name: "gpipe always is its own baseline", row: 0, wantSpeed: 1.0, wantMem: 1.0, wantText: "1.00×"},
		{name: "gpipe except-last is its own baseline", row: 1, wantSpeed: 1.0, wantMem: 1.0, wantText: "1.00×"},
		// The baseline is GPipe except-last (100 ms, 10 MiB), not always.
		{name: "coop", row: 2, wantSpeed: 100.0 / 80, wantMem: 0.5, wantText: "1.25×"},
		{name: "1f1b", row: 3, wantSpeed: 100.0 / 90, wantMem: 0.7, wantText: "1.11×"},
		{name: "1f1b without a gpipe run", row: 4, wantSpeed: nil, wantMem: nil, wantText: "—"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tab.Rows[tc.row]
			if !closeTo(got[speed].Value, tc.wantSpeed) || got[speed].Text != tc.wantText {
				t.Errorf("speed-up: got %v (%q), want %v (%q)", got[speed].Value, got[speed].Text, tc.wantSpeed, tc.wantText)
			}
			if !closeTo(got[mem].Value, tc.wantMem) {
				t.Errorf("memory ratio: got %v, want %v", got[mem].Value, tc.wantMem)
			}
		})
	}
	if got := tab.Rows[5][sched].Text; !strings.HasSuffix(got, " *") {
		t.Errorf("oversubscribed run's schedule %q lacks the mark", got)
	}
	if got := tab.Rows[2][sched].Text; strings.Contains(got, "*") {
		t.Errorf("run within the cores is marked: %q", got)
	}
	var found bool
	for _, f := range tab.Footnotes {
		found = found || strings.Contains(f, "oversubscribed: 2×2 threads exceed the 2 cores")
	}
	if !found {
		t.Errorf("no oversubscription footnote in %q", tab.Footnotes)
	}
}

// closeTo compares a cell value with a wanted float64 or nil.
func closeTo(got, want any) bool {
	if want == nil || got == nil {
		return want == nil && got == nil
	}
	g, ok := got.(float64)
	w := want.(float64)
	return ok && g > w-1e-9 && g < w+1e-9
}

func TestRunsTableEmpty(t *testing.T) {
	tab := RunsTable(nil, RunsTableOptions{})
	if len(tab.Rows) != 0 || tab.Title != "Runs (0)" {
		t.Errorf("empty: %d rows, title %q", len(tab.Rows), tab.Title)
	}
	var buf bytes.Buffer
	if err := Render(&buf, tab, FormatJSON); err != nil || buf.String() != "[]\n" {
		t.Errorf("empty json: %q, %v", buf.String(), err)
	}
}
