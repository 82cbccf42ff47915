package reports

import (
	"strings"
	"testing"

	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

// TestRunsTableRounds checks that the rounds of one configuration are one
// row, the median round's, with their count and spread, and that runs
// outside rounds keep their rows and the table its shape.
func TestRunsTableRounds(t *testing.T) {
	rec := func(id, name string, round int, step int64) profiler.Record {
		return profiler.Record{Schema: profiler.SchemaVersion, Kind: profiler.KindMeasured, ID: id, Round: round,
			Config:  profiler.RunConfig{Model: "mlp", Batch: 8, RecordOptions: schedule.RecordOptions{Devices: 2, Micro: 2, Schedule: name}},
			Summary: profiler.Summary{StepNanosMedian: step, StepNanosMin: step, StepNanosMax: step}}
	}
	recs := []profiler.Record{
		rec("g1", "gpipe", 1, 100), rec("c1", "coop", 1, 80),
		rec("c2", "coop", 2, 90), rec("g2", "gpipe", 2, 120),
		rec("g3", "gpipe", 3, 110), rec("c3", "coop", 3, 70),
	}
	tab := RunsTable(recs, RunsTableOptions{})
	if len(tab.Rows) != 2 {
		t.Fatalf("got %d rows, want one per configuration, 2", len(tab.Rows))
	}
	col := func(key string) int {
		for i, c := range tab.Columns {
			if c.Key == key {
				return i
			}
		}
		t.Fatalf("no column %q", key)
		return -1
	}
	for i, want := range []struct {
		id     string
		spread float64
	}{{"g3", 20.0 / 110}, {"c1", 20.0 / 80}} {
		row := tab.Rows[i]
		if got := row[col("id")].Text; got != want.id {
			t.Errorf("row %d shows %s, want the median round %s", i, got, want.id)
		}
		if got := row[col("round_spread")]; got.Value != want.spread || !strings.HasPrefix(got.Text, "3 (") {
			t.Errorf("row %d rounds %v %q, want 3 rounds spread %.4f", i, got.Value, got.Text, want.spread)
		}
	}
	if !strings.Contains(strings.Join(tab.Footnotes, "\n"), "rounds:") {
		t.Error("no footnote explains the rounds column")
	}
	for i := range recs {
		recs[i].Round = 0
	}
	plain := RunsTable(recs, RunsTableOptions{})
	if len(plain.Rows) != 6 || len(plain.Columns) != len(tab.Columns)-1 {
		t.Errorf("runs outside rounds: %d rows, %d columns; want 6 rows and no rounds column", len(plain.Rows), len(plain.Columns))
	}
}
