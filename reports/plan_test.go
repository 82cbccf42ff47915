package reports

import (
	"bytes"
	"strings"
	"testing"
)

// samplePlan is a small plan: two ranked entries and one over budget,
// whose split was chosen for memory.
func samplePlan() []PlanEntry {
	return []PlanEntry{
		{Schedule: "1f1b", Micro: 4, PeakBytes: 3 << 20, PeakDevice: 0, TopCategory: "weights", Timed: true,
			StepNanos: 21_500_000, StepRelErr: 0.04, BubbleFraction: 0.2, SamplesPerSecond: 744.2, Rank: 1, Partition: "2,1"},
		{Schedule: "coop", Options: "d=1", Micro: 2, PeakBytes: 5 << 20, PeakDevice: 1, TopCategory: "activations", Timed: true,
			StepNanos: 23_000_000, StepRelErr: 0.04, BubbleFraction: 0.1, SamplesPerSecond: 695.7, Rank: 2, Partition: "1,2"},
		{Schedule: "gpipe", Options: "never", Micro: 8, PeakBytes: 9 << 20, PeakDevice: 1, TopCategory: "activations", Timed: true,
			StepNanos: 20_000_000, StepRelErr: 0.04, BubbleFraction: 0.3, SamplesPerSecond: 800, OverBudget: true,
			Partition: "2,1", MemorySplit: true},
	}
}

func TestPlanTableGolden(t *testing.T) {
	opts := PlanTableOptions{Title: "plan", Timed: true, BudgetBytes: 8 << 20}
	tbl := PlanTable(samplePlan(), opts)
	for _, f := range allFormats {
		var b bytes.Buffer
		if err := Render(&b, tbl, f); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "plan_table."+extension[f], b.Bytes())
	}
	if got, want := PlanVerdict(samplePlan(), opts), "Fastest: 1f1b with M=4, 21.5 ms a step (744.2 samples/s, bubble 20.0 %), peak 3.00 MiB per device."; got != want {
		t.Errorf("verdict %q, want %q", got, want)
	}
}

// TestPlanVerdictTies checks that the verdict names the ranked entries
// whose forecast lies within the forecast's uncertainty of the fastest,
// in rank order, and none over the budget or outside the band.
func TestPlanVerdictTies(t *testing.T) {
	entries := samplePlan()
	for i := range entries {
		entries[i].StepRelErr = 0.1 // coop's 23.0 ms is 7 % slower than 21.5: within
	}
	opts := PlanTableOptions{Timed: true, BudgetBytes: 8 << 20}
	got := PlanVerdict(entries, opts)
	if want := " Within the forecast's ±10.0 % (1 σ) of it, so not told apart: coop (d=1) M=2 (23.0 ms)."; !strings.HasSuffix(got, want) {
		t.Errorf("verdict %q, want it to end %q", got, want)
	}
	if strings.Contains(got, "extrapolated") {
		t.Errorf("verdict %q calls a forecast within the measured sizes extrapolated", got)
	}
	entries[0].Extrapolated = true
	if got := PlanVerdict(entries, opts); !strings.Contains(got, "so its forecast is extrapolated. Within") {
		t.Errorf("verdict %q does not say that the fastest's forecast is extrapolated", got)
	}
	entries[1].StepNanos = 24_000_000 // 11.6 % slower: outside
	if got := PlanVerdict(entries, opts); strings.Contains(got, "not told apart") {
		t.Errorf("verdict %q names a tie outside the band", got)
	}
	var many []PlanEntry
	for i := range 6 {
		many = append(many, PlanEntry{Schedule: "1f1b", Micro: 1 << i, Timed: true, StepNanos: int64(10_000_000 + 100_000*i),
			StepRelErr: 0.1, Rank: i + 1})
	}
	got = PlanVerdict(many, opts)
	if want := "not told apart: 1f1b M=2 (10.1 ms), 1f1b M=4 (10.2 ms), 1f1b M=8 (10.3 ms) and 2 more."; !strings.HasSuffix(got, want) {
		t.Errorf("verdict %q, want it to end %q", got, want)
	}
}

// TestPlanTableMeasured checks that the measured column shows on a
// terminal only when the data measured an entry, and then its step.
func TestPlanTableMeasured(t *testing.T) {
	opts := PlanTableOptions{Timed: true}
	hidden := func(tbl *Table) bool {
		for _, c := range tbl.Columns {
			if c.Key == "measured_step_nanos" {
				return c.Show == Machines
			}
		}
		t.Fatal("no measured column")
		return false
	}
	entries := samplePlan()
	if !hidden(PlanTable(entries, opts)) {
		t.Error("the measured column shows though nothing was measured")
	}
	entries[1].MeasuredNanos, entries[1].MeasuredRuns = 22_400_000, 3
	tbl := PlanTable(entries, opts)
	if hidden(tbl) {
		t.Error("the measured column is hidden though an entry was measured")
	}
	var b bytes.Buffer
	if err := Render(&b, tbl, FormatTable); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "22.4 ms") || !strings.Contains(b.String(), "measured: the median step") {
		t.Errorf("the table lacks the measured step or its footnote:\n%s", b.String())
	}
}

func TestPlanTableUntimed(t *testing.T) {
	entries := samplePlan()
	for i := range entries {
		entries[i].Timed = false
	}
	opts := PlanTableOptions{}
	tbl := PlanTable(entries, opts)
	for _, c := range tbl.Columns {
		if c.Key == "step_nanos" {
			t.Errorf("an untimed plan shows the step column")
		}
	}
	if got := PlanVerdict(entries, opts); !strings.HasPrefix(got, "Lightest: 1f1b with M=4, peak 3.00 MiB") {
		t.Errorf("verdict %q, want the lightest named", got)
	}
	entries[0].Rank, entries[1].Rank = 0, 0
	if got := PlanVerdict(entries, PlanTableOptions{BudgetBytes: 1 << 20}); !strings.HasPrefix(got, "No configuration fits") {
		t.Errorf("verdict %q, want none fits", got)
	}
}

// TestPlanTableFolds checks that a narrow terminal keeps the
// configuration, the peak, the step and the rank.
func TestPlanTableFolds(t *testing.T) {
	tbl := PlanTable(samplePlan(), PlanTableOptions{Timed: true, BudgetBytes: 8 << 20}).Fit(50, "--wide shows all columns")
	var heads []string
	for _, c := range tbl.Columns {
		heads = append(heads, c.Key)
	}
	for _, k := range []string{"schedule", "microbatches", "peak_bytes_max", "step_nanos", "rank"} {
		if !strings.Contains(strings.Join(heads, " "), k) {
			t.Errorf("fitted columns %v lack %s", heads, k)
		}
	}
	if strings.Contains(strings.Join(heads, " "), "samples_per_second") {
		t.Errorf("fitted columns %v keep samples/s, which folds first", heads)
	}
}
