package reports

import (
	"bytes"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/tensor"
)

// memoryTestRecord is exportTestRecord with a memory track of step 1 on
// both devices, as a run of that schedule would allocate: the batch at the
// start, activations kept by each forward and released by its backward,
// transfers received into comm buffers, gradients from the first
// backward, workspace inside the backwards.
func memoryTestRecord() profiler.Record {
	rec := exportTestRecord()
	for d := range rec.Devices {
		rec.Devices[d].MemoryTrack = memoryTestTrack(&rec, d)
	}
	return rec
}

// memoryTestTrack builds device d's track of step 1 from its ops.
func memoryTestTrack(rec *profiler.Record, d int) *profiler.MemoryTrack {
	cat := func(c tensor.Category) int { return int(c) }
	weights := rec.Devices[d].PeakBytesByCategory["weights"]
	tr := &profiler.MemoryTrack{Step: 1, StartLiveBytesByCategory: map[string]int64{}}
	for _, c := range tensor.Categories() {
		tr.Categories = append(tr.Categories, c.String())
	}
	tr.StartLiveBytesByCategory["weights"] = weights
	tr.StartLiveBytesByCategory["optimizer"] = weights
	add := func(ns int64, c tensor.Category, b int64) {
		tr.Changes = append(tr.Changes, profiler.MemoryChange{Nanos: ns, Category: cat(c), Bytes: b, Event: memoryTestEvent(rec, d, ns)})
	}
	var ops []profiler.Event
	for _, e := range rec.Events {
		if e.Step == 1 && e.Device == d && e.Block < 0 {
			ops = append(ops, e)
		}
	}
	sort.Slice(ops, func(a, b int) bool { return ops[a].StartNanos < ops[b].StartNanos })
	if d == 0 {
		add(0, tensor.Boundary, 2048)
	}
	grads := false
	for _, e := range ops {
		s, f := e.StartNanos, e.EndNanos
		switch e.Op {
		case "forward":
			add(s+2000, tensor.Activations, 3000)
			add(s+30_000, tensor.Workspace, 700)
			add(s+31_000, tensor.Workspace, -700)
		case "recv":
			add(s+1000, tensor.Comm, 4096)
			add(f-1000, tensor.Comm, -4096)
			add(f-1000, tensor.Boundary, 4096)
		case "backward":
			if !grads {
				add(s+1000, tensor.Gradients, weights)
				grads = true
			}
			add(s+3000, tensor.Workspace, 1024)
			add(f-4000, tensor.Workspace, -1024)
			add(f-2000, tensor.Activations, -3000)
			if d == 1 {
				add(f-1000, tensor.Boundary, -4096)
			}
		case "loss":
			add(s+1000, tensor.Activations, 512)
			add(f-1000, tensor.Activations, -512)
		case "update":
			add(f-1000, tensor.Gradients, -weights)
		}
	}
	if d == 0 {
		add(ops[len(ops)-1].EndNanos+1000, tensor.Boundary, -2048)
	}
	byCat, total := tr.ReplayPeaks()
	tr.PeakBytesByCategory, tr.PeakBytes = byCat, total
	return tr
}

// memoryTestEvent returns the index of the shortest event of device d in
// step 1 holding ns, or −1.
func memoryTestEvent(rec *profiler.Record, d int, ns int64) int {
	best := -1
	for i, e := range rec.Events {
		if e.Step != 1 || e.Device != d || ns < e.StartNanos || ns > e.EndNanos {
			continue
		}
		if best < 0 || e.EndNanos-e.StartNanos < rec.Events[best].EndNanos-rec.Events[best].StartNanos {
			best = i
		}
	}
	return best
}

func TestWriteMemorySVG(t *testing.T) {
	rec := memoryTestRecord()
	var buf bytes.Buffer
	if err := WriteMemorySVG(&buf, rec); err != nil {
		t.Fatal(err)
	}
	root := decodeSVG(t, buf.Bytes())
	panels := withClass(root, "memory-device")
	if len(panels) != len(rec.Devices) {
		t.Fatalf("%d device panels, want %d", len(panels), len(rec.Devices))
	}
	// The time axis is the timeline's: step 1's wall time spans the plot.
	span := rec.Steps[0].WallNanos
	plotW := tlWidth - tlLeft - tlRight
	for i, p := range panels {
		tr := rec.Devices[i].MemoryTrack
		peak := tr.PeakPoint()
		if got := p.attr("data-peak-bytes"); got != strconv.FormatInt(tr.PeakBytes, 10) {
			t.Errorf("device %d: data-peak-bytes %s, want %d", i, got, tr.PeakBytes)
		}
		marks := withClass(p, "peak")
		if len(marks) != 1 {
			t.Fatalf("device %d: %d peak marks, want 1", i, len(marks))
		}
		var line svgNode
		var label []string
		marks[0].walk(func(n svgNode) {
			switch n.XMLName.Local {
			case "line":
				line = n
			case "text":
				label = append(label, n.Text)
			}
		})
		if len(label) != 2 {
			t.Fatalf("device %d: peak label of %d lines %q, want 2", i, len(label), label)
		}
		x, _ := strconv.ParseFloat(line.attr("x1"), 64)
		if want := tlLeft + float64(peak.Nanos)/float64(span)*plotW; math.Abs(x-want) > 0.01 {
			t.Errorf("device %d: peak line at x %v, want %v (%d ns of %d)", i, x, want, peak.Nanos, span)
		}
		if !strings.HasPrefix(label[0], "peak "+FormatBytes(tr.PeakBytes)+" at ") {
			t.Errorf("device %d: peak label %q, want it to start with the peak %s", i, label[0], FormatBytes(tr.PeakBytes))
		}
		var sum int64
		for c, name := range tr.Categories {
			if b := peak.LiveBytes[c]; b > 0 && !strings.Contains(label[1], name+" "+FormatBytes(b)) {
				t.Errorf("device %d: peak label %q does not name %s %s", i, label[1], name, FormatBytes(b))
			}
			sum += peak.LiveBytes[c]
		}
		if sum != tr.PeakBytes {
			t.Errorf("device %d: the peak's categories sum to %d, want the peak %d", i, sum, tr.PeakBytes)
		}
		if areas := withClass(p, "area"); len(areas) < 5 {
			t.Errorf("device %d: %d category areas, want one per category held", i, len(areas))
		}
	}
	// Device 1 peaks in the first block of its first backward, holding
	// both micro-batches' activations, new gradients and workspace.
	if label := withClass(panels[1], "peak-label"); len(label) != 2 || !strings.Contains(label[0].Text, " in backward 1.1 (layer2.0)") {
		t.Errorf("device 1: peak label %v, want it in backward 1.1 (layer2.0)", label)
	}
	if n := len(withClass(root, "legend-item")); n != 7 {
		t.Errorf("%d legend items, want the 7 categories held", n)
	}
	checkGolden(t, "svg_memory.svg", buf.Bytes())
}

func TestWriteMemorySVGNoTrack(t *testing.T) {
	var buf bytes.Buffer
	err := WriteMemorySVG(&buf, exportTestRecord())
	if err == nil || !strings.Contains(err.Error(), "no device has a memory track") {
		t.Errorf("got %v, want an error saying no device has a memory track", err)
	}
}

// TestMemBucketsKeepPeak checks that bucketing the points of a track for
// drawing keeps its peak and every bucket's final level.
func TestMemBucketsKeepPeak(t *testing.T) {
	pt := func(ns, total int64) profiler.MemoryPoint {
		return profiler.MemoryPoint{Nanos: ns, TotalBytes: total, LiveBytes: []int64{total}}
	}
	points := []profiler.MemoryPoint{pt(0, 10), pt(1, 50), pt(2, 900), pt(3, 20), pt(1000, 30), pt(1001, 5)}
	x := func(ns int64) float64 { return float64(ns) / 100 } // 100 ns per unit: 0–3 in one bucket
	got := memBuckets(points, x)
	want := []int64{10, 900, 20, 30, 5}
	if len(got) != len(want) {
		t.Fatalf("got %d points %v, want totals %v", len(got), got, want)
	}
	for i := range want {
		if got[i].TotalBytes != want[i] {
			t.Errorf("point %d: total %d, want %d", i, got[i].TotalBytes, want[i])
		}
	}
}
