package reports

import (
	"bytes"
	"math"
	"testing"

	"github.com/pipecast/pipecast/profiler"
)

// disturbedSample is runsSample's runs with probes: run-2's is the
// quietest of host "test", run-3 has none, run-5 ran on another host,
// and three rounds of one coop configuration spread their probes.
func disturbedSample() []profiler.Record {
	recs := runsSample()[:5]
	probe := func(r *profiler.Record, median int64) {
		r.Env.Probe = &profiler.Probe{Nanos: []int64{median - 10_000, median, median + 40_000}}
	}
	probe(&recs[0], 600_000)
	probe(&recs[1], 500_000)
	probe(&recs[3], 550_000)
	recs[4].Env.Host = "other"
	probe(&recs[4], 900_000)
	for i, median := range []int64{650_000, 550_000, 500_000} {
		r := runsRecord("round-"+string(rune('1'+i)), "coop", "", 2, 2, 4, 70+int64(i)*5, 5<<20)
		r.Round = i + 1
		probe(&r, median)
		recs = append(recs, r)
	}
	return recs
}

// TestRunsTableDisturbed checks the disturbed column: each run's probe
// against the quietest of its machine, the median over a row's rounds,
// and "—" without a probe.
func TestRunsTableDisturbed(t *testing.T) {
	tab := RunsTable(disturbedSample(), RunsTableOptions{Title: "Disturbed runs"})
	at := -1
	for i, c := range tab.Columns {
		if c.Key == "disturbed" {
			at = i
		}
	}
	if at < 0 || tab.Columns[at+1].Key != "samples_per_second" {
		t.Fatalf("no disturbed column before the throughput in %v", tab.Columns)
	}
	want := []struct {
		id    string
		value float64 // NaN: no probe
		text  string
	}{
		{"run-1", 0.2, "+20 %"},
		{"run-2", 0, "+0 %"},
		{"run-3", math.NaN(), "—"},
		{"run-4", 0.1, "+10 %"},
		{"run-5", 0, "+0 %"}, // the only run of its host
		{"round-2", 0.1, "+10 %"},
	}
	if len(tab.Rows) != len(want) {
		t.Fatalf("got %d rows, want %d", len(tab.Rows), len(want))
	}
	for i, w := range want {
		row := tab.Rows[i]
		if row[0].Text != w.id {
			t.Errorf("row %d is %s, want %s", i, row[0].Text, w.id)
		}
		got := row[at]
		// 1e-12: one quotient of integers below 2^20, rounded.
		v, ok := got.Value.(float64)
		if math.IsNaN(w.value) && got.Value != nil || !math.IsNaN(w.value) && (!ok || math.Abs(v-w.value) > 1e-12) || got.Text != w.text {
			t.Errorf("row %d (%s): disturbed %v %q, want %v %q", i, w.id, got.Value, got.Text, w.value, w.text)
		}
	}
	for _, f := range allFormats {
		var buf bytes.Buffer
		if err := Render(&buf, tab, f); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		checkGolden(t, "runs_disturbed."+extension[f], buf.Bytes())
	}
}

// TestRunsTableWithoutProbes checks that records without probes render
// no disturbed column, so tables of older records keep their shape.
func TestRunsTableWithoutProbes(t *testing.T) {
	for _, c := range RunsTable(runsSample(), RunsTableOptions{}).Columns {
		if c.Key == "disturbed" {
			t.Fatal("a table of records without probes has a disturbed column")
		}
	}
}
