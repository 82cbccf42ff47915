package reports

import (
	"bytes"
	"encoding/xml"
	"errors"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

// svgNode is an element of a decoded SVG document.
type svgNode struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Text     string     `xml:",chardata"`
	Children []svgNode  `xml:",any"`
}

// attr returns the element's attribute name, or "".
func (n svgNode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// walk calls fn on n and every element below it.
func (n svgNode) walk(fn func(svgNode)) {
	fn(n)
	for _, c := range n.Children {
		c.walk(fn)
	}
}

// decodeSVG parses doc as XML, failing the test if it is not well formed
// or its root is not <svg>.
func decodeSVG(t *testing.T, doc []byte) svgNode {
	t.Helper()
	var root svgNode
	if err := xml.Unmarshal(doc, &root); err != nil {
		t.Fatalf("output is not well-formed XML: %v", err)
	}
	if root.XMLName.Local != "svg" {
		t.Fatalf("got root <%s>, want <svg>", root.XMLName.Local)
	}
	return root
}

// withClass returns the elements whose class list holds class.
func withClass(root svgNode, class string) []svgNode {
	var found []svgNode
	root.walk(func(n svgNode) {
		for _, c := range strings.Fields(n.attr("class")) {
			if c == class {
				found = append(found, n)
				return
			}
		}
	})
	return found
}

// ev builds a whole-op event.
func ev(step, device int, op string, micro int, start, end int64) profiler.Event {
	return profiler.Event{Step: step, Device: device, Stage: device, Op: op, Micro: micro, Shard: -1, Peer: -1, Block: -1,
		StartNanos: start, EndNanos: end}
}

// timelineRecord is a two-device GPipe run of two micro-batches with two
// measured steps; step 1 has 13 ops and two per-block events, and two ops
// too short for their number.
func timelineRecord() profiler.Record {
	const ms = 1_000_000
	events := []profiler.Event{
		ev(1, 0, "forward", 0, 0, 2*ms), ev(1, 0, "send", 0, 2*ms, 2*ms+300_000),
		ev(1, 0, "forward", 1, 2*ms+300_000, 4*ms), ev(1, 0, "send", 1, 4*ms, 4*ms+300_000),
		ev(1, 1, "recv", 0, 2*ms, 2*ms+300_000), ev(1, 1, "forward", 0, 2*ms+300_000, 4*ms),
		ev(1, 1, "loss", 0, 4*ms, 4*ms+10_000), // 0.8 px wide: no room for its number
		ev(1, 1, "backward", 0, 4*ms+10_000, 6*ms), ev(1, 1, "recv", 1, 6*ms, 6*ms+100_000),
		ev(1, 1, "recompute", 1, 6*ms+100_000, 7*ms), ev(1, 1, "backward", 1, 7*ms, 9*ms),
		ev(1, 0, "update", -1, 9*ms, 9*ms+500_000), ev(1, 1, "update", -1, 9*ms, 9*ms+400_000),
		ev(2, 0, "forward", 0, 0, 2*ms), ev(2, 1, "forward", 0, 2*ms, 4*ms),
	}
	events[1].Peer, events[1].Bytes = 1, 3<<20
	block := ev(1, 0, "forward", 0, 0, ms)
	block.Block = 0
	events = append(events, block, block)
	return profiler.Record{
		Schema: profiler.SchemaVersion, Kind: profiler.KindMeasured, ID: "run-a",
		Config:  profiler.RunConfig{Model: "vgg16bn", Batch: 8, RecordOptions: schedule.RecordOptions{Devices: 2, Micro: 2, Schedule: "gpipe", Checkpoint: "except-last"}},
		Env:     profiler.Environment{Devices: []profiler.DeviceInfo{{Name: "cpu:0", Threads: 1}, {Name: "cpu:1", Threads: 1}}},
		Steps:   []profiler.Step{{Step: 1, WallNanos: 10 * ms}, {Step: 2, WallNanos: 5 * ms}},
		Devices: []profiler.Device{{Index: 0, Name: "cpu:0", Stage: 0}, {Index: 1, Name: "cpu:1", Stage: 1}},
		Events:  events,
	}
}

func TestWriteTimelineSVG(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteTimelineSVG(&buf, timelineRecord(), 1); err != nil {
		t.Fatal(err)
	}
	root := decodeSVG(t, buf.Bytes())

	ops := withClass(root, "op")
	if len(ops) != 13 {
		t.Errorf("got %d op groups, want 13 (the whole ops of step 1, no per-block events)", len(ops))
	}
	kinds := map[string]int{}
	labelled := 0
	for _, op := range ops {
		for _, c := range strings.Fields(op.attr("class")) {
			if kind, ok := strings.CutPrefix(c, "op-"); ok {
				kinds[kind]++
			}
		}
		rects, texts := 0, 0
		for _, c := range op.Children {
			switch c.XMLName.Local {
			case "rect":
				rects++
				if kind := strings.TrimPrefix(strings.Fields(op.attr("class"))[1], "op-"); c.attr("fill") != OpColors[kind] {
					t.Errorf("%s op filled %s, want %s", kind, c.attr("fill"), OpColors[kind])
				}
			case "text":
				texts++
				if c.Text != op.attr("data-micro") {
					t.Errorf("op labelled %q, want its micro-batch %q", c.Text, op.attr("data-micro"))
				}
			}
		}
		if rects != 1 {
			t.Errorf("op %s has %d rects, want 1", op.attr("class"), rects)
		}
		labelled += texts
	}
	want := map[string]int{"forward": 3, "send": 2, "recv": 2, "loss": 1, "backward": 2, "recompute": 1, "update": 2}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("got %d %s ops, want %d", kinds[k], k, n)
		}
	}
	// 11 ops have a micro-batch; the 10 µs loss (0.8 px) and the 0.1 ms
	// recv (7.9 px) are too narrow for a digit.
	if labelled != 9 {
		t.Errorf("got %d ops labelled with their micro-batch, want 9", labelled)
	}

	legend := withClass(root, "legend-item")
	if len(legend) != len(want)+1 {
		t.Errorf("got %d legend items, want %d (each kind and idle)", len(legend), len(want)+1)
	}
	titles := withClass(root, "title")
	wantTitle := "vgg16bn · gpipe · K=2 · M=2 · batch 8 · step 1: 10.00 ms"
	if len(titles) != 1 || titles[0].Text != wantTitle {
		t.Errorf("got titles %v, want one %q", titles, wantTitle)
	}
	var rows []string
	for _, d := range withClass(root, "device") {
		for _, c := range d.Children {
			if c.XMLName.Local == "text" {
				rows = append(rows, c.Text)
			}
		}
	}
	if strings.Join(rows, ", ") != "cpu:0 · stage 0, cpu:1 · stage 1" {
		t.Errorf("got device rows %q, want cpu:0 · stage 0, cpu:1 · stage 1", rows)
	}
	checkGolden(t, "svg_timeline.svg", buf.Bytes())
}

func TestWriteTimelineSVGErrors(t *testing.T) {
	noEvents := timelineRecord()
	noEvents.Events = nil
	for _, tc := range []struct {
		name string
		rec  profiler.Record
		step int
		want string
	}{
		{name: "step not recorded", rec: timelineRecord(), step: 3, want: "step 3 has no events (steps with events: [1 2])"},
		{name: "step zero", rec: timelineRecord(), step: 0, want: "step 0 has no events"},
		{name: "no events", rec: noEvents, step: 1, want: "the record has no events"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := WriteTimelineSVG(&buf, tc.rec, tc.step)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes before failing, want none", buf.Len())
			}
		})
	}
}

// chartRecords is a small sweep: two GPipe and two coop configurations and
// one 1f1b, listed out of order.
func chartRecords() []profiler.Record {
	mk := func(name string, k, m int, median, spread, peak int64) profiler.Record {
		return profiler.Record{
			Schema: profiler.SchemaVersion, Kind: profiler.KindMeasured,
			Config:  profiler.RunConfig{Model: "resnet50", Batch: 16, RecordOptions: schedule.RecordOptions{Devices: k, Micro: m, Schedule: name}},
			Summary: profiler.Summary{StepNanosMedian: median, StepNanosMin: median - spread, StepNanosMax: median + 2*spread, PeakBytesMax: peak},
		}
	}
	return []profiler.Record{
		mk("gpipe", 4, 4, 80e6, 2e6, 300<<20),
		mk("coop", 2, 4, 70e6, 1e6, 150<<20),
		mk("gpipe", 2, 4, 95e6, 3e6, 400<<20),
		mk("1f1b", 2, 4, 90e6, 0, 250<<20),
		mk("coop", 4, 4, 60e6, 4e6, 100<<20),
	}
}

func TestWriteChartSVG(t *testing.T) {
	var buf bytes.Buffer
	recs := chartRecords()
	if err := WriteChartSVG(&buf, recs); err != nil {
		t.Fatal(err)
	}
	root := decodeSVG(t, buf.Bytes())

	// gonum/plot writes anonymous paths: find the bars by their fill. Each
	// schedule has a bar per record in each of the two panels, and one
	// swatch in the legend.
	fills := map[string]int{}
	var texts []string
	root.walk(func(n svgNode) {
		if n.XMLName.Local == "path" {
			for _, s := range strings.Split(n.attr("style"), ";") {
				if c, ok := strings.CutPrefix(s, "fill:"); ok {
					fills[c]++
				}
			}
		}
		if n.XMLName.Local == "text" {
			texts = append(texts, n.Text)
		}
	})
	perSchedule := map[string]int{}
	for _, r := range recs {
		perSchedule[r.Config.Schedule]++
	}
	for s, n := range perSchedule {
		c := ScheduleColors[s]
		hex := strings.ToUpper(string([]byte{hexDigit(c.R >> 4), hexDigit(c.R), hexDigit(c.G >> 4), hexDigit(c.G), hexDigit(c.B >> 4), hexDigit(c.B)}))
		if got := fills["#"+hex]; got != 2*n+1 {
			t.Errorf("%s: got %d shapes filled #%s, want %d (%d bars in each panel and a legend swatch)", s, got, hex, 2*n+1, n)
		}
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{"gpipe K=2 M=4", "gpipe K=4 M=4", "coop K=2 M=4", "coop K=4 M=4", "1f1b K=2 M=4",
		"step time (ms)", "peak memory (MiB)", "Step time: median, whiskers min–max · resnet50, batch 16",
		"Peak memory of the largest device", "gpipe", "coop", "1f1b"} {
		if !strings.Contains(all, want) {
			t.Errorf("chart lacks the text %q", want)
		}
	}
	checkGolden(t, "svg_chart.svg", buf.Bytes())
}

// hexDigit is the hexadecimal digit of the low four bits of b.
func hexDigit(b uint8) byte { return "0123456789abcdef"[b&0xF] }

func TestChartGroupsOrderAndLabels(t *testing.T) {
	recs := chartRecords()
	recs[0].Config.Batch = 32
	recs[1].Kind = profiler.KindPredicted
	groups, slots := chartGroups(recs)
	var got []string
	for _, g := range groups {
		for _, b := range g.bars {
			got = append(got, b.label)
		}
	}
	want := "gpipe K=2 M=4 B=16, gpipe K=4 M=4 B=32, coop K=2 M=4 B=16 (predicted), coop K=4 M=4 B=16, 1f1b K=2 M=4 B=16"
	if strings.Join(got, ", ") != want {
		t.Errorf("got bars %q, want %s", got, want)
	}
	// Five bars and a gap between each of the three schedules.
	if slots != 7 {
		t.Errorf("got %d slots, want 7", slots)
	}
}

func TestWriteSVGErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func() error
		want  string
	}{
		{name: "chart of no records", write: func() error { return WriteChartSVG(&bytes.Buffer{}, nil) }, want: "no run records"},
		{name: "chart of an empty set", write: func() error { return WriteChartSVG(&bytes.Buffer{}, []profiler.Record{}) }, want: "no run records"},
		{name: "chart to a broken pipe", write: func() error { return WriteChartSVG(failingWriter{}, chartRecords()) }, want: "broken pipe"},
		{name: "timeline to a broken pipe", write: func() error { return WriteTimelineSVG(failingWriter{}, timelineRecord(), 1) }, want: "broken pipe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.write()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if err := WriteChartSVG(&bytes.Buffer{}, nil); !errors.Is(err, errNoChartRecords) {
		t.Errorf("got %v, want errNoChartRecords", err)
	}
}

func TestSVGNiceStep(t *testing.T) {
	for _, tc := range []struct {
		name   string
		span   float64
		target int
		want   float64
	}{
		{name: "ten ms in ten", span: 10, target: 10, want: 1},
		{name: "twelve ms in ten", span: 12, target: 10, want: 2},
		{name: "forty ms in ten", span: 40, target: 10, want: 5},
		{name: "sub-millisecond", span: 0.3, target: 10, want: 0.05},
		{name: "empty span", span: 0, target: 10, want: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := svgNiceStep(tc.span, tc.target); got < tc.want*0.999999 || got > tc.want*1.000001 {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
