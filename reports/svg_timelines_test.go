package reports

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/profiler"
)

// runOfEvents is a two-device measured run of schedule with one measured
// step numbered 1 of the given wall time, made of events.
func runOfEvents(id, schedule string, wall int64, bubble float64, events []profiler.Event) profiler.Record {
	rec := timelineRecord()
	rec.ID, rec.Config.Schedule, rec.Config.Checkpoint = id, schedule, ""
	rec.Steps = []profiler.Step{{Step: 1, WallNanos: wall}}
	rec.Events = events
	rec.Summary.BubbleFraction = bubble
	return rec
}

// coopRecord is a coop run of timelineRecord's workload: the weight
// sync, the predict step and the all-to-all, then the slices' forwards
// and backwards; 8 ms.
func coopRecord() profiler.Record {
	const us = 1000
	evs := []profiler.Event{
		ev(1, 0, "allgather", -1, 0, 400*us), ev(1, 0, "predict", -1, 400*us, 1200*us), ev(1, 0, "alltoall", -1, 1200*us, 1600*us),
		ev(1, 0, "forward", 0, 1600*us, 2400*us), ev(1, 0, "forward", 1, 2400*us, 3200*us),
		ev(1, 0, "recv", 0, 3800*us, 4000*us), ev(1, 0, "backward", 0, 4000*us, 5300*us),
		ev(1, 0, "recv", 1, 6200*us, 6400*us), ev(1, 0, "backward", 1, 6400*us, 7700*us), ev(1, 0, "update", -1, 7700*us, 8000*us),
		ev(1, 1, "allgather", -1, 0, 400*us), ev(1, 1, "predict", -1, 400*us, 1200*us), ev(1, 1, "alltoall", -1, 1200*us, 1600*us),
		ev(1, 1, "forward", 0, 1600*us, 2400*us), ev(1, 1, "loss", 0, 2400*us, 2450*us), ev(1, 1, "backward", 0, 2450*us, 3800*us),
		ev(1, 1, "send", 0, 3800*us, 4000*us), ev(1, 1, "forward", 1, 4000*us, 4800*us), ev(1, 1, "loss", 1, 4800*us, 4850*us),
		ev(1, 1, "backward", 1, 4850*us, 6200*us), ev(1, 1, "send", 1, 6200*us, 6400*us), ev(1, 1, "update", -1, 6400*us, 6700*us),
	}
	rec := runOfEvents("run-coop", "coop", 8_000_000, 0.15, evs)
	rec.Config.Prefetch = 1
	return rec
}

// oneFOneBRecord is a 1f1b run of timelineRecord's workload; 9 ms.
func oneFOneBRecord() profiler.Record {
	const us = 1000
	evs := []profiler.Event{
		ev(1, 0, "forward", 0, 0, 1500*us), ev(1, 0, "send", 0, 1500*us, 1800*us),
		ev(1, 0, "forward", 1, 1800*us, 3300*us), ev(1, 0, "send", 1, 3300*us, 3600*us),
		ev(1, 0, "recv", 0, 4800*us, 5000*us), ev(1, 0, "backward", 0, 5000*us, 6500*us),
		ev(1, 0, "recv", 1, 7000*us, 7200*us), ev(1, 0, "backward", 1, 7200*us, 8700*us), ev(1, 0, "update", -1, 8700*us, 9000*us),
		ev(1, 1, "recv", 0, 1500*us, 1800*us), ev(1, 1, "forward", 0, 1800*us, 3300*us), ev(1, 1, "loss", 0, 3300*us, 3350*us),
		ev(1, 1, "backward", 0, 3350*us, 4800*us), ev(1, 1, "send", 0, 4800*us, 5000*us), ev(1, 1, "recv", 1, 5000*us, 5100*us),
		ev(1, 1, "forward", 1, 5100*us, 5800*us), ev(1, 1, "loss", 1, 5800*us, 5850*us), ev(1, 1, "backward", 1, 5850*us, 7000*us),
		ev(1, 1, "send", 1, 7000*us, 7200*us), ev(1, 1, "update", -1, 7200*us, 7500*us),
	}
	return runOfEvents("run-1f1b", "1f1b", 9_000_000, 0.2, evs)
}

// threeRuns are gpipe, coop and 1f1b runs of one workload, step 1 each.
func threeRuns() []TimelineRun {
	gpipe := timelineRecord()
	gpipe.Summary.BubbleFraction = 0.25
	return []TimelineRun{{Record: gpipe, Step: 1}, {Record: coopRecord(), Step: 1}, {Record: oneFOneBRecord(), Step: 1}}
}

// bandFrameWidths returns, per run band, the width of its first device
// row's frame: the band's step on the shared axis.
func bandFrameWidths(t *testing.T, root svgNode) []float64 {
	t.Helper()
	var widths []float64
	for _, band := range withClass(root, "run") {
		rows := withClass(band, "device")
		if len(rows) == 0 {
			t.Fatalf("band %s has no device rows", band.attr("data-run"))
		}
		for _, c := range rows[0].Children {
			if c.XMLName.Local == "rect" {
				w, err := strconv.ParseFloat(c.attr("width"), 64)
				if err != nil {
					t.Fatal(err)
				}
				widths = append(widths, w)
			}
		}
	}
	return widths
}

func TestWriteTimelinesSVG(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteTimelinesSVG(&buf, threeRuns()); err != nil {
		t.Fatal(err)
	}
	root := decodeSVG(t, buf.Bytes())

	bands := withClass(root, "run")
	if len(bands) != 3 {
		t.Fatalf("got %d run bands, want 3", len(bands))
	}
	wantTitles := []string{
		"gpipe · checkpoint except-last · K=2 · M=2 · step 1: 10.00 ms · bubble 25.0 %",
		"coop · prefetch 1 · K=2 · M=2 · step 1: 8.00 ms · bubble 15.0 %",
		"1f1b · K=2 · M=2 · step 1: 9.00 ms · bubble 20.0 %",
	}
	wantOps := []int{13, 22, 20}
	for i, band := range bands {
		titles := withClass(band, "run-title")
		if len(titles) != 1 || titles[0].Text != wantTitles[i] {
			t.Errorf("band %d: got titles %v, want one %q", i, titles, wantTitles[i])
		}
		if got := len(withClass(band, "op")); got != wantOps[i] {
			t.Errorf("band %d: got %d ops, want %d", i, got, wantOps[i])
		}
		if got := len(withClass(band, "device")); got != 2 {
			t.Errorf("band %d: got %d device rows, want 2", i, got)
		}
	}
	if titles := withClass(root, "title"); len(titles) != 1 || titles[0].Text != "vgg16bn · batch 8 · 3 runs, one step each, on one time axis" {
		t.Errorf("got figure titles %v", titles)
	}
	// gpipe's recompute and coop's sync ops: all ten kinds of these
	// schedules (not the split backward's two) and idle, in one shared
	// legend.
	if got, want := len(withClass(root, "legend-item")), len(legendOpOrder)-2+1; got != want {
		t.Errorf("got %d legend items, want %d", got, want)
	}
	if got := len(withClass(root, "legend")); got != 1 {
		t.Errorf("got %d legends, want 1", got)
	}
	// One axis: the 10 ms gpipe step spans the plot, the others end
	// earlier in proportion.
	plotW := tlWidth - tlLeft - tlRight
	widths := bandFrameWidths(t, root)
	for i, want := range []float64{plotW, plotW * 0.8, plotW * 0.9} {
		if i >= len(widths) || math.Abs(widths[i]-want) > 0.01 {
			t.Errorf("band %d: got frame widths %v, want %.2f", i, widths, want)
		}
	}
	checkGolden(t, "svg_timelines.svg", buf.Bytes())
}

// TestWriteTimelinesSVGSharedScale draws a run beside itself at twice
// the time: it must draw twice as wide, and its ops at twice the offset.
func TestWriteTimelinesSVGSharedScale(t *testing.T) {
	short := timelineRecord()
	long := timelineRecord()
	for i := range long.Events {
		long.Events[i].StartNanos *= 2
		long.Events[i].EndNanos *= 2
	}
	for i := range long.Steps {
		long.Steps[i].WallNanos *= 2
	}
	for _, order := range [][]profiler.Record{{short, long}, {long, short}} {
		var buf bytes.Buffer
		if err := WriteTimelinesSVG(&buf, []TimelineRun{{Record: order[0], Step: 1}, {Record: order[1], Step: 1}}); err != nil {
			t.Fatal(err)
		}
		root := decodeSVG(t, buf.Bytes())
		widths := bandFrameWidths(t, root)
		if len(widths) != 2 {
			t.Fatalf("got %d bands, want 2", len(widths))
		}
		shortW, longW := widths[0], widths[1]
		if order[0].Steps[0].WallNanos > order[1].Steps[0].WallNanos {
			shortW, longW = longW, shortW
		}
		if math.Abs(longW-2*shortW) > 0.02 {
			t.Errorf("got frame widths %v: the run twice as long is not drawn twice as wide", widths)
		}
		// The last op's right edge, measured from the axis origin.
		ends := make([]float64, 2)
		for i, band := range withClass(root, "run") {
			for _, op := range withClass(band, "op") {
				for _, c := range op.Children {
					if c.XMLName.Local == "rect" {
						x, _ := strconv.ParseFloat(c.attr("x"), 64)
						w, _ := strconv.ParseFloat(c.attr("width"), 64)
						ends[i] = max(ends[i], x+w-tlLeft)
					}
				}
			}
		}
		if ends[0] > ends[1] {
			ends[0], ends[1] = ends[1], ends[0]
		}
		if math.Abs(ends[1]-2*ends[0]) > 0.05 {
			t.Errorf("got last op ends %v from the origin, want one twice the other", ends)
		}
	}
}

func TestWriteTimelinesSVGLabelsAndWorkloads(t *testing.T) {
	pred := coopRecord()
	pred.Kind = profiler.KindPredicted
	other := oneFOneBRecord()
	other.Config.Model, other.Config.Batch = "resnet50", 16
	other.Oversubscribed = true
	var buf bytes.Buffer
	err := WriteTimelinesSVG(&buf, []TimelineRun{{Record: pred, Step: 1}, {Record: coopRecord(), Step: 1, Label: "measured"}, {Record: other, Step: 1}})
	if err != nil {
		t.Fatal(err)
	}
	root := decodeSVG(t, buf.Bytes())
	var got []string
	for _, n := range withClass(root, "run-title") {
		got = append(got, n.Text)
	}
	want := []string{
		"predicted · vgg16bn · batch 8 · coop · prefetch 1 · K=2 · M=2 · simulated step: 8.00 ms · bubble 15.0 %",
		"measured · vgg16bn · batch 8 · coop · prefetch 1 · K=2 · M=2 · step 1: 8.00 ms · bubble 15.0 %",
		"resnet50 · batch 16 · 1f1b · K=2 · M=2 · step 1: 9.00 ms · bubble 20.0 % · oversubscribed",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got band titles\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if titles := withClass(root, "title"); len(titles) != 1 || titles[0].Text != "3 runs, one step each, on one time axis" {
		t.Errorf("got figure titles %v: runs of different workloads share no model", titles)
	}
}

func TestWriteTimelinesSVGErrors(t *testing.T) {
	noEvents := coopRecord()
	noEvents.Events = nil
	for _, tc := range []struct {
		name string
		runs []TimelineRun
		want string
	}{
		{name: "no runs", runs: nil, want: "no runs to draw"},
		{name: "a run without events", runs: []TimelineRun{{Record: timelineRecord(), Step: 1}, {Record: noEvents, Step: 1}},
			want: `record "run-coop": the record has no events (was it recorded with events?) (run 2 of 2)`},
		{name: "a step without events", runs: []TimelineRun{{Record: timelineRecord(), Step: 3}}, want: "step 3 has no events"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := WriteTimelinesSVG(&buf, tc.runs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes before failing, want none", buf.Len())
			}
		})
	}
	if err := WriteTimelinesSVG(&bytes.Buffer{}, nil); !errors.Is(err, errNoTimelineRuns) {
		t.Errorf("got %v, want errNoTimelineRuns", err)
	}
	if err := WriteTimelinesSVG(failingWriter{}, threeRuns()); err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Errorf("got %v, want the writer's broken pipe", err)
	}
}

func TestMedianStep(t *testing.T) {
	withSteps := func(walls map[int]int64, eventSteps ...int) profiler.Record {
		var rec profiler.Record
		for s := 1; s <= len(walls)+4; s++ {
			if w, ok := walls[s]; ok {
				rec.Steps = append(rec.Steps, profiler.Step{Step: s, WallNanos: w})
			}
		}
		for _, s := range eventSteps {
			rec.Events = append(rec.Events, ev(s, 0, "forward", 0, 0, 1))
		}
		return rec
	}
	for _, tc := range []struct {
		name   string
		rec    profiler.Record
		want   int
		wantOK bool
	}{
		{name: "odd count: the median step", rec: withSteps(map[int]int64{1: 30, 2: 10, 3: 12}, 1, 2, 3), want: 3, wantOK: true},
		{name: "even count: the lower of the middle steps", rec: withSteps(map[int]int64{1: 50, 2: 20, 3: 10, 4: 13}, 1, 2, 3, 4), want: 2, wantOK: true},
		{name: "equal times: the lower step", rec: withSteps(map[int]int64{1: 10, 2: 12, 3: 12}, 3, 2, 1), want: 2, wantOK: true},
		{name: "steps without events are not drawn", rec: withSteps(map[int]int64{1: 10, 2: 11, 3: 30}, 3), want: 3, wantOK: true},
		{name: "events of unlisted steps: the lowest", rec: withSteps(nil, 4, 2), want: 2, wantOK: true},
		{name: "step 0, its time not listed", rec: withSteps(map[int]int64{}, 0), want: 0, wantOK: true},
		{name: "no events", rec: withSteps(map[int]int64{1: 10}), want: 0, wantOK: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := MedianStep(tc.rec)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("got step %d, %v; want %d, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
