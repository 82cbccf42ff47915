package reports

import (
	"bytes"
	"encoding/csv"
	"slices"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/profiler"
)

// splitRecord is a two-device zb-h1 run of one micro-batch: each device
// runs a forward, a backward-input and later a backward-weight, with
// per-block times of both halves.
func splitRecord() profiler.Record {
	const us = 1000
	rec := timelineRecord()
	rec.ID = "run-zb"
	rec.Config.Schedule, rec.Config.Checkpoint, rec.Config.Micro = "zb-h1", "", 1
	rec.Steps = rec.Steps[:1]
	rec.Events = []profiler.Event{
		ev(1, 0, "forward", 0, 0, 1000*us), ev(1, 0, "send", 0, 1000*us, 1100*us),
		ev(1, 1, "recv", 0, 1000*us, 1100*us), ev(1, 1, "forward", 0, 1100*us, 2000*us),
		ev(1, 1, "loss", 0, 2000*us, 2100*us), ev(1, 1, "backward-input", 0, 2100*us, 3000*us),
		ev(1, 1, "send", 0, 3000*us, 3100*us), ev(1, 1, "backward-weight", 0, 3100*us, 4000*us),
		ev(1, 0, "recv", 0, 3000*us, 3100*us), ev(1, 0, "backward-input", 0, 3100*us, 4000*us),
		ev(1, 0, "backward-weight", 0, 4000*us, 4900*us),
	}
	for d := range rec.Devices {
		rec.Devices[d].BusyNanosByOp = map[string]int64{"forward": 900 * us, "backward-input": 900 * us, "backward-weight": 900 * us, "send": 100 * us}
	}
	rec.Partition = []profiler.Stage{{Device: 0, FirstBlock: 0, EndBlock: 1, Blocks: []string{"a"}}, {Device: 1, FirstBlock: 1, EndBlock: 2, Blocks: []string{"b"}}}
	rec.Blocks = []profiler.BlockTiming{
		{Block: 0, Name: "a", Stage: 0, Samples: 8, ForwardNanos: 900 * us, BackwardInputNanos: 800 * us, BackwardWeightNanos: 700 * us},
		{Block: 1, Name: "b", Stage: 1, Samples: 8, ForwardNanos: 800 * us, BackwardInputNanos: 600 * us, BackwardWeightNanos: 500 * us},
	}
	return rec
}

// interleavedRecord is a two-device interleaved run of v = 2: device 0
// holds stages 0 and 2, device 1 stages 1 and 3, one block each.
func interleavedRecord() profiler.Record {
	const us = 1000
	rec := timelineRecord()
	rec.ID = "run-il"
	rec.Config.Schedule, rec.Config.Checkpoint, rec.Config.Virtual, rec.Config.Micro = "interleaved", "", 2, 1
	rec.Steps = rec.Steps[:1]
	at := func(e profiler.Event, stage int) profiler.Event { e.Stage = stage; return e }
	rec.Events = []profiler.Event{
		at(ev(1, 0, "forward", 0, 0, 500*us), 0), at(ev(1, 1, "forward", 0, 600*us, 1100*us), 1),
		at(ev(1, 0, "forward", 0, 1200*us, 1700*us), 2), at(ev(1, 1, "forward", 0, 1800*us, 2300*us), 3),
		at(ev(1, 1, "backward", 0, 2300*us, 3300*us), 3), at(ev(1, 0, "backward", 0, 3400*us, 4400*us), 2),
		at(ev(1, 1, "backward", 0, 4500*us, 5500*us), 1), at(ev(1, 0, "backward", 0, 5600*us, 6600*us), 0),
	}
	rec.Partition = nil
	for s, name := range []string{"a", "b", "c", "d"} {
		rec.Partition = append(rec.Partition, profiler.Stage{Device: s % 2, FirstBlock: s, EndBlock: s + 1, Blocks: []string{name}})
	}
	for d := range rec.Devices {
		rec.Devices[d].BusyNanosByOp = map[string]int64{"forward": 1000 * us, "backward": 2000 * us}
	}
	return rec
}

func TestOpColorsDistinct(t *testing.T) {
	seen := map[string]string{}
	for op, c := range OpColors {
		if other, ok := seen[c]; ok {
			t.Errorf("%s and %s share the colour %s", op, other, c)
		}
		seen[c] = op
	}
	for _, op := range []string{"backward-input", "backward-weight"} {
		if OpColors[op] == "" || !slices.Contains(legendOpOrder, op) || !slices.Contains(runsOpOrder, op) {
			t.Errorf("%s: colour %q, in the legend order %v, in the device table order %v", op, OpColors[op],
				slices.Contains(legendOpOrder, op), slices.Contains(runsOpOrder, op))
		}
	}
	if b, i, w := slices.Index(legendOpOrder, "backward"), slices.Index(legendOpOrder, "backward-input"), slices.Index(legendOpOrder, "backward-weight"); !(b < i && i < w) {
		t.Errorf("legend order %v: want backward, backward-input, backward-weight in turn", legendOpOrder)
	}
}

func TestTimelineSplitBackward(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteTimelineSVG(&buf, splitRecord(), 1); err != nil {
		t.Fatal(err)
	}
	root := decodeSVG(t, buf.Bytes())
	for op, want := range map[string]int{"backward-input": 2, "backward-weight": 2} {
		groups := withClass(root, "op-"+op)
		if len(groups) != want {
			t.Errorf("%d %s ops drawn, want %d", len(groups), op, want)
		}
		for _, g := range groups {
			for _, c := range g.Children {
				if c.XMLName.Local == "rect" && c.attr("fill") != OpColors[op] {
					t.Errorf("%s filled %s, want %s", op, c.attr("fill"), OpColors[op])
				}
			}
		}
	}
	var legend []string
	for _, it := range withClass(root, "legend-item") {
		legend = append(legend, it.attr("data-op"))
	}
	want := []string{"forward", "loss", "backward-input", "backward-weight", "send", "recv", "idle"}
	if !slices.Equal(legend, want) {
		t.Errorf("legend %v, want %v", legend, want)
	}
}

func TestTimelineInterleavedRows(t *testing.T) {
	var buf bytes.Buffer
	rec := interleavedRecord()
	if err := WriteTimelineSVG(&buf, rec, 1); err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, row := range withClass(decodeSVG(t, buf.Bytes()), "device") {
		for _, c := range row.Children {
			if c.XMLName.Local == "text" {
				labels = append(labels, c.Text)
			}
		}
	}
	if want := []string{"cpu:0 · stages 0, 2", "cpu:1 · stages 1, 3"}; !slices.Equal(labels, want) {
		t.Errorf("device rows %q, want %q", labels, want)
	}
	// The ops of each device's later stage (2 and 3) are hatched, the
	// others not, and the legend says what the hatch means.
	root := decodeSVG(t, buf.Bytes())
	for _, op := range withClass(root, "op") {
		var title string
		hatched := false
		for _, c := range op.Children {
			switch {
			case c.XMLName.Local == "title":
				title = c.Text
			case c.XMLName.Local == "rect" && c.attr("fill") == "url(#"+laterHatch+")":
				hatched = true
			}
		}
		later := strings.Contains(title, "stage 2") || strings.Contains(title, "stage 3")
		if hatched != later {
			t.Errorf("op %q: hatched %v, want %v", title, hatched, later)
		}
	}
	var legend []string
	for _, it := range withClass(root, "legend-item") {
		legend = append(legend, it.attr("data-op"))
	}
	if !slices.Contains(legend, laterStages) {
		t.Errorf("legend %v has no %q", legend, laterStages)
	}

	buf.Reset()
	if err := WriteTimelinesSVG(&buf, []TimelineRun{{Record: rec, Step: 1}, {Record: splitRecord(), Step: 1}}); err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, n := range withClass(decodeSVG(t, buf.Bytes()), "run-title") {
		titles = append(titles, n.Text)
	}
	if len(titles) != 2 || !strings.HasPrefix(titles[0], "interleaved · virtual stages 2 · K=2 · M=1") || !strings.HasPrefix(titles[1], "zb-h1 · K=2") {
		t.Errorf("band titles %q, want interleaved's with its virtual stages, then zb-h1's", titles)
	}
}

func TestStagesLabel(t *testing.T) {
	for _, tc := range []struct {
		held  []int
		first int
		want  string
	}{
		{nil, 3, "stage 3"}, {[]int{1}, 1, "stage 1"}, {[]int{0, 2}, 0, "stages 0, 2"},
		{[]int{1, 5, 9}, 1, "stages 1, 5, 9"}, {[]int{0, 4, 8, 12}, 0, "stages 0, 4 … 12"},
	} {
		if got := stagesLabel(tc.held, tc.first); got != tc.want {
			t.Errorf("stagesLabel(%v, %d) = %q, want %q", tc.held, tc.first, got, tc.want)
		}
	}
}

// csvRows renders t as CSV and parses it back.
func csvRows(t *testing.T, tab *Table) [][]string {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, tab, FormatCSV); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// csvColumn returns the values of column key in rows (header first).
func csvColumn(t *testing.T, rows [][]string, key string) []string {
	t.Helper()
	i := slices.Index(rows[0], key)
	if i < 0 {
		t.Fatalf("no column %q in %v", key, rows[0])
	}
	var out []string
	for _, r := range rows[1:] {
		out = append(out, r[i])
	}
	return out
}

func TestRunsTableVirtualStages(t *testing.T) {
	il := runsRecord("run-il", "interleaved", "", 0, 2, 4, 70, 5<<20)
	il.Config.Virtual = 2
	recs := []profiler.Record{runsRecord("run-g", "gpipe", "except-last", 0, 2, 4, 100, 8<<20), il}
	rows := csvRows(t, RunsTable(recs, RunsTableOptions{}))
	if got := csvColumn(t, rows, "virtual_stages"); !slices.Equal(got, []string{"", "2"}) {
		t.Errorf("virtual_stages %q, want empty for gpipe and 2 for interleaved", got)
	}
	var buf bytes.Buffer
	if err := Render(&buf, RunsTable(recs, RunsTableOptions{}), FormatTable); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "interleaved (v=2)") {
		t.Errorf("runs table does not name interleaved (v=2):\n%s", buf.String())
	}
	if rows := csvRows(t, RunsTable(recs[:1], RunsTableOptions{})); slices.Contains(rows[0], "virtual_stages") {
		t.Errorf("a table without interleaved runs has a virtual_stages column: %v", rows[0])
	}

	// Two interleaved runs that differ only in v are two configurations.
	il1 := il
	il1.Config.Virtual = 1
	cmp := csvRows(t, CompareTable([]profiler.Record{il}, []profiler.Record{il1}, CompareOptions{}))
	if got := csvColumn(t, cmp, "only_in"); !slices.Equal(got, []string{"A", "B"}) {
		t.Errorf("compare v=2 with v=1: only_in %q, want A then B", got)
	}
	if got := csvColumn(t, cmp, "virtual_stages"); !slices.Equal(got, []string{"2", "1"}) {
		t.Errorf("compare: virtual_stages %q, want 2 then 1", got)
	}
}

func TestRunDetailSplitAndInterleaved(t *testing.T) {
	tabs := RunDetailTables([]profiler.Record{splitRecord(), interleavedRecord()})
	if len(tabs) != 4 {
		t.Fatalf("%d tables, want 4", len(tabs))
	}
	devs := csvRows(t, tabs[0])
	want := []string{"busy_forward_nanos", "busy_backward-input_nanos", "busy_backward-weight_nanos", "busy_send_nanos"}
	var got []string
	for _, k := range devs[0] {
		if strings.HasPrefix(k, "busy_") && k != "busy_nanos" {
			got = append(got, k)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("zb-h1 device table op columns %v, want %v", got, want)
	}
	blocks := csvRows(t, tabs[1])
	if got := csvColumn(t, blocks, "backward_input_nanos"); !slices.Equal(got, []string{"800000", "600000"}) {
		t.Errorf("backward_input_nanos %q", got)
	}
	if got := csvColumn(t, blocks, "backward_weight_nanos"); !slices.Equal(got, []string{"700000", "500000"}) {
		t.Errorf("backward_weight_nanos %q", got)
	}
	var md bytes.Buffer
	if err := Render(&md, tabs[1], FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	// The split run never ran a whole backward nor a recompute: dashes,
	// not 0 ms.
	for _, line := range strings.Split(md.String(), "\n") {
		if strings.Contains(line, "| a ") && strings.Count(line, "—") != 2 {
			t.Errorf("zb-h1 block row, want dashes for backward and recompute: %s", line)
		}
	}
	if rows := csvRows(t, tabs[3]); slices.Contains(rows[0], "backward_input_nanos") {
		t.Errorf("a run without split backwards has split-backward block columns: %v", rows[0])
	}

	var buf bytes.Buffer
	if err := Render(&buf, tabs[2], FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"|  0, 2 | a (1); c (3) |", "|  1, 3 | b (2); d (4) |"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("interleaved device table lacks %q:\n%s", s, buf.String())
		}
	}
	ilDevs := csvRows(t, tabs[2])
	if got := csvColumn(t, ilDevs, "blocks"); !slices.Equal(got, []string{"2", "2"}) {
		t.Errorf("interleaved devices' block counts %q, want 2 each", got)
	}
}

func TestTraceSplitAndInterleaved(t *testing.T) {
	_, doc := writeTestTrace(t, interleavedRecord(), splitRecord())
	processes := map[int]string{}
	compute := map[string]bool{}
	for _, e := range doc.TraceEvents {
		if e.Ph == "M" && e.Name == "process_name" {
			processes[e.PID], _ = e.Args["name"].(string)
		}
		if e.Ph == "X" && strings.HasPrefix(e.Name, "backward-") {
			compute[e.Cat] = traceThreadName(doc, e.PID, e.TID) == "compute"
		}
	}
	var names []string
	for _, n := range processes {
		names = append(names, n)
	}
	for _, want := range []string{"run run-il: cpu:0 (stages 0, 2)", "run run-il: cpu:1 (stages 1, 3)", "run run-zb: cpu:0 (stage 0)"} {
		if !slices.Contains(names, want) {
			t.Errorf("processes %q lack %q", names, want)
		}
	}
	if !compute["backward-input"] || !compute["backward-weight"] {
		t.Errorf("split backwards on the compute thread: %v, want both", compute)
	}
}

func TestMemoryPanelsInterleaved(t *testing.T) {
	rec := interleavedRecord()
	track := &profiler.MemoryTrack{Step: 1, Categories: []string{"weights"}, StartLiveBytesByCategory: map[string]int64{"weights": 10}}
	rec.Devices[0].MemoryTrack, rec.Devices[1].MemoryTrack = track, track
	panels, _, err := memPanels(rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(panels) != 2 || panels[0].label != "cpu:0 · stages 0, 2" || panels[1].label != "cpu:1 · stages 1, 3" {
		t.Errorf("memory panels %+v, want one per device labelled with its stages", panels)
	}
}
