package reports

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/profiler"
)

// compareSample returns two datasets: A with GPipe, coop and 1F1B on one
// workload and a repeated GPipe run; B with GPipe slower, coop faster
// and larger, and three configurations A lacks: 1F1B at another M, coop
// at another look-ahead, GPipe on another backend.
func compareSample() (a, b []profiler.Record) {
	repeat := runsRecord("a-4", "gpipe", "except-last", 0, 2, 4, 500, 99<<20)
	a = []profiler.Record{
		runsRecord("a-1", "gpipe", "except-last", 0, 2, 4, 100, 10<<20),
		runsRecord("a-2", "coop", "", 1, 2, 4, 80, 5<<20),
		runsRecord("a-3", "1f1b", "", 0, 2, 4, 90, 7<<20),
		repeat,
	}
	cuda := runsRecord("b-5", "gpipe", "except-last", 0, 2, 4, 20, 10<<20)
	cuda.Env.Backend = "cuda"
	b = []profiler.Record{
		runsRecord("b-1", "coop", "", 1, 2, 4, 60, 6<<20),
		runsRecord("b-2", "1f1b", "", 0, 2, 8, 95, 6<<20),
		runsRecord("b-3", "gpipe", "except-last", 0, 2, 4, 120, 10<<20),
		runsRecord("b-4", "coop", "", 2, 2, 4, 70, 7<<20),
		cuda,
	}
	return a, b
}

func TestCompareTableGolden(t *testing.T) {
	a, b := compareSample()
	tab := CompareTable(a, b, CompareOptions{NameA: "before.jsonl", NameB: "after.jsonl"})
	for _, f := range allFormats {
		var buf bytes.Buffer
		if err := Render(&buf, tab, f); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		checkGolden(t, "compare."+extension[f], buf.Bytes())
	}
}

func TestCompareTableRows(t *testing.T) {
	a, b := compareSample()
	tab := CompareTable(a, b, CompareOptions{})
	col := func(key string) int {
		i := slices.IndexFunc(tab.Columns, func(c Column) bool { return c.Key == key })
		if i < 0 {
			t.Fatalf("no column %q", key)
		}
		return i
	}
	sched, prefetch, backend, micro := col("schedule"), col("prefetch"), col("backend"), col("microbatches")
	stepA, stepB, stepRatio, peakRatio, only := col("step_nanos_a"), col("step_nanos_b"), col("step_ratio"), col("peak_ratio"), col("only_in")
	tests := []struct {
		name                 string
		schedule             string
		prefetch, micro      any
		backend              string
		wantRatio, wantPeak  any // B/A; nil where one side is missing
		wantOnly             any
		wantStepA, wantStepB any // raw step times of each side
	}{
		{name: "gpipe, in A's order first", schedule: "gpipe", backend: "cpu", micro: int64(4),
			wantRatio: 1.2, wantPeak: 1.0, wantStepA: int64(100e6), wantStepB: int64(120e6)},
		{name: "coop", schedule: "coop", prefetch: int64(1), backend: "cpu", micro: int64(4),
			wantRatio: 0.75, wantPeak: 1.2, wantStepA: int64(80e6), wantStepB: int64(60e6)},
		{name: "1f1b only in A", schedule: "1f1b", backend: "cpu", micro: int64(4), wantOnly: "A", wantStepA: int64(90e6)},
		{name: "1f1b at another M only in B", schedule: "1f1b", backend: "cpu", micro: int64(8), wantOnly: "B", wantStepB: int64(95e6)},
		{name: "coop at another look-ahead only in B", schedule: "coop", prefetch: int64(2), backend: "cpu", micro: int64(4),
			wantOnly: "B", wantStepB: int64(70e6)},
		{name: "another backend only in B", schedule: "gpipe", backend: "cuda", micro: int64(4), wantOnly: "B", wantStepB: int64(20e6)},
	}
	if len(tab.Rows) != len(tests) {
		t.Fatalf("%d rows, want %d", len(tab.Rows), len(tests))
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			row := tab.Rows[i]
			if row[sched].Value != tc.schedule || row[prefetch].Value != tc.prefetch || row[backend].Value != tc.backend || row[micro].Value != tc.micro {
				t.Errorf("row %d is %v %v %v M=%v, want %v %v %v M=%v", i, row[sched].Value, row[prefetch].Value, row[backend].Value,
					row[micro].Value, tc.schedule, tc.prefetch, tc.backend, tc.micro)
			}
			if !closeTo(row[stepRatio].Value, tc.wantRatio) || !closeTo(row[peakRatio].Value, tc.wantPeak) {
				t.Errorf("ratios: got step %v, peak %v; want %v, %v", row[stepRatio].Value, row[peakRatio].Value, tc.wantRatio, tc.wantPeak)
			}
			if row[stepA].Value != tc.wantStepA || row[stepB].Value != tc.wantStepB {
				t.Errorf("steps: got A %v, B %v; want %v, %v", row[stepA].Value, row[stepB].Value, tc.wantStepA, tc.wantStepB)
			}
			if row[only].Value != tc.wantOnly {
				t.Errorf("only: got %v, want %v", row[only].Value, tc.wantOnly)
			}
			if tc.wantOnly != nil && row[stepRatio].Text != "—" {
				t.Errorf("ratio of a row one dataset lacks: got %q, want —", row[stepRatio].Text)
			}
		})
	}
	if got := tab.Rows[0][stepRatio].Text; got != "1.20×" {
		t.Errorf("ratio text: got %q, want 1.20×", got)
	}
	notes := strings.Join(tab.Footnotes, "\n")
	for _, want := range []string{"2 configurations in both; 1 only in A, 3 only in B", "1 repeated run(s) left out"} {
		if !strings.Contains(notes, want) {
			t.Errorf("footnotes %q lack %q", notes, want)
		}
	}
	if want := "Compare A: A (4 runs) with B: B (5 runs)"; tab.Title != want {
		t.Errorf("title: got %q, want %q", tab.Title, want)
	}
}

func TestCompareTableEmptySide(t *testing.T) {
	a, _ := compareSample()
	tab := CompareTable(a, nil, CompareOptions{})
	if len(tab.Rows) != 3 {
		t.Fatalf("%d rows, want A's 3 configurations", len(tab.Rows))
	}
	for _, row := range tab.Rows {
		if row[len(row)-1].Value != "A" {
			t.Errorf("row %v not marked as only in A", row[0].Text)
		}
	}
}

func TestCompareTableFitsEightyColumns(t *testing.T) {
	a, b := compareSample()
	got := CompareTable(a, b, CompareOptions{NameA: "before.jsonl", NameB: "after.jsonl"}).Fit(80, "--wide shows all columns")
	lines := renderedLines(t, got)
	if w := widest(lines); w > 80 {
		t.Errorf("fitted comparison is %d wide, want at most 80:\n%s", w, strings.Join(lines, "\n"))
	}
	headers := peopleHeaders(got)
	for _, h := range []string{"model", "schedule", "K", "M", "step B/A", "peak B/A", "only"} {
		if !slices.Contains(headers, h) {
			t.Errorf("column %q folded; left %q", h, headers)
		}
	}
}
