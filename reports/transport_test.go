package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/profiler"
)

// mpiRecord is the export test's record as a run of one process per
// device over MPI would record it.
func mpiRecord() profiler.Record {
	r := exportTestRecord()
	r.Env.Transport, r.Env.TransportVersion = profiler.TransportMPI, "Open MPI v4.1.4"
	for d := range r.Devices {
		r.Env.Ranks = append(r.Env.Ranks, profiler.RankInfo{Rank: d, Host: "node" + string(rune('a'+d)), PID: 100 + d, Threads: 1})
	}
	r.Env.ClockResidualNanos = 1500
	return r
}

// TestMPIRecordsRender checks that records of multi-process runs render
// in every report, and that the runs table says how they ran.
func TestMPIRecordsRender(t *testing.T) {
	recs := []profiler.Record{mpiRecord(), mpiRecord()}
	recs[1].Env.ClockResidualNanos = 2500
	tab := RunsTable(recs, RunsTableOptions{})
	var notes []string
	for _, n := range tab.Footnotes {
		if strings.HasPrefix(n, "One process per device") {
			notes = append(notes, n)
		}
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "mpi (Open MPI v4.1.4)") || !strings.Contains(notes[0], "2.50 µs") {
		t.Errorf("transport notes %q: want one naming the library and the largest residual", notes)
	}
	for _, f := range []Format{FormatTable, FormatMarkdown, FormatCSV, FormatJSON} {
		if err := Render(&bytes.Buffer{}, tab, f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	var buf bytes.Buffer
	if err := WriteTrace(&buf, recs); err != nil || buf.Len() == 0 {
		t.Errorf("trace: %v (%d bytes)", err, buf.Len())
	}
	buf.Reset()
	if err := WritePprof(&buf, recs); err != nil || buf.Len() == 0 {
		t.Errorf("pprof: %v (%d bytes)", err, buf.Len())
	}
	buf.Reset()
	if err := WriteTimelineSVG(&buf, recs[0], recs[0].Events[0].Step); err != nil || buf.Len() == 0 {
		t.Errorf("timeline: %v (%d bytes)", err, buf.Len())
	}
	for _, tab := range RunDetailTables(recs) {
		if err := Render(&bytes.Buffer{}, tab, FormatTable); err != nil {
			t.Errorf("detail: %v", err)
		}
	}
}
