package reports

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pipecast/pipecast/profiler"
)

// Memory chart layout, in SVG user units; the horizontal layout is the
// timeline's (tlWidth, tlLeft, tlRight), so that the chart can sit under
// a timeline of the same step with the times aligned.
const (
	memTop         = 44.0
	memPanelHeight = 110.0
	memPanelGap    = 44.0 // room above each panel for its peak label's two lines
	memLabelSize   = 11.0 // the peak label's first line
	memPartsSize   = 10.0 // its second line, the categories
	// memBucketWidth is the resolution of the drawn track: of the changes
	// within one bucket only the one with the largest total is drawn, so
	// that no peak is lost and files stay small.
	memBucketWidth = 0.5
)

// MemoryColors fills each memory category in SVG memory charts: Paul
// Tol's "bright" qualitative scheme (https://personal.sron.nl/~pault/),
// seven colours distinct under the common forms of colour blindness.
var MemoryColors = map[string]string{
	"weights":     "#4477AA", // blue
	"gradients":   "#EE6677", // red
	"optimizer":   "#228833", // green
	"activations": "#CCBB44", // yellow
	"boundary":    "#66CCEE", // cyan
	"comm":        "#AA3377", // purple
	"workspace":   "#BBBBBB", // grey
}

// ErrNoMemoryTrack is returned by WriteMemorySVG for a record none of
// whose devices has a memory track.
var ErrNoMemoryTrack = errors.New("no device has a memory track")

// memPanel is one device's track as the chart draws it.
type memPanel struct {
	device int
	label  string
	track  *profiler.MemoryTrack
	points []profiler.MemoryPoint // bucketed, in time order
	peak   profiler.MemoryPoint
}

// WriteMemorySVG writes each device's live memory over the step its
// memory track covers (profiler.MemoryTrack, the first measured step) as
// an SVG chart: a panel per device, labelled "cpu:0 · stage 0", with the
// live bytes stacked by category in MemoryColors, on the time axis of
// WriteTimelineSVG for that step (the same width, margins and scale), the
// bytes on a scale shared by the devices. Each panel marks the step's
// peak with a dashed line and names it in a label above: its value, its
// time, the op the device was running and the categories that make it
// up, largest first. It returns an error if no device has a track.
func WriteMemorySVG(w io.Writer, rec profiler.Record) error {
	panels, step, err := memPanels(rec)
	if err != nil {
		return err
	}
	span := memSpan(rec, step, panels)
	plotW := tlWidth - tlLeft - tlRight
	x := func(ns int64) float64 { return tlLeft + float64(min(max(ns, 0), span))/float64(span)*plotW }
	for i := range panels {
		panels[i].points = memBuckets(panels[i].track.Points(), x)
	}
	var most int64
	for _, p := range panels {
		most = max(most, p.peak.TotalBytes)
	}
	scale, unit, tick := memByteScale(most)
	bottom := memPanelTop(len(panels)) - memPanelGap
	cats := memCategories(panels)
	height := bottom + 84

	s := &svgWriter{w: w}
	title := memoryTitle(rec, step)
	s.printf(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	s.printf(`<svg xmlns="http://www.w3.org/2000/svg" class="pipecast-memory" width="%s" height="%s" viewBox="0 0 %s %s" font-family="sans-serif" font-size="%s">`+"\n",
		svgNum(tlWidth), svgNum(height), svgNum(tlWidth), svgNum(height), svgNum(tlFontSize))
	s.printf("<title>%s</title>\n", svgEscape(title))
	s.printf(`<rect width="100%%" height="100%%" fill="#FFFFFF"/>` + "\n")
	s.text(tlWidth/2, 24, ` class="title" text-anchor="middle" font-size="14" font-weight="bold"`, title)
	ix := newExportIndex(&rec)
	for i, p := range panels {
		top := memPanelTop(i)
		y := func(b int64) float64 { return top + memPanelHeight - float64(b)/scale*memPanelHeight }
		writeMemPanel(s, rec, ix, p, x, y, top, span, unit, tick)
	}
	writeTimeAxis(s, span, x, [][2]float64{{memTop + memPanelGap - 4, bottom + 4}}, "2 3", bottom)
	writeMemLegend(s, cats, bottom+58)
	s.printf("</svg>\n")
	return s.err
}

// memPanels returns a panel per device with a memory track, in device
// order, and the step they cover.
func memPanels(rec profiler.Record) ([]memPanel, int, error) {
	ix := newExportIndex(&rec)
	var panels []memPanel
	for _, d := range rec.Devices {
		if d.MemoryTrack == nil {
			continue
		}
		panels = append(panels, memPanel{
			device: d.Index, track: d.MemoryTrack, peak: d.MemoryTrack.PeakPoint(),
			label: ix.deviceName(d.Index) + " · " + stagesLabel(deviceStages(&rec, d.Index), d.Stage),
		})
	}
	if len(panels) == 0 {
		return nil, 0, fmt.Errorf("reports: memory of record %q: %w (pipecast profile records one of its first measured step; predicted records have none)", rec.ID, ErrNoMemoryTrack)
	}
	slices.SortStableFunc(panels, func(a, b memPanel) int { return cmp.Compare(a.device, b.device) })
	return panels, panels[0].track.Step, nil
}

// memSpan is the length of the time axis: as WriteTimelineSVG's for the
// step, the step's wall time or its last op's end, and at least the last
// change's time.
func memSpan(rec profiler.Record, step int, panels []memPanel) int64 {
	var span int64
	for _, s := range rec.Steps {
		if s.Step == step {
			span = s.WallNanos
		}
	}
	for _, e := range rec.Events {
		if e.Step == step && e.Block < 0 {
			span = max(span, e.EndNanos)
		}
	}
	for _, p := range panels {
		if n := len(p.track.Changes); n > 0 {
			span = max(span, p.track.Changes[n-1].Nanos)
		}
	}
	return max(span, 1)
}

// memBuckets keeps, of the points falling into one bucket of
// memBucketWidth units, the one with the largest total (the first if
// several) and the last, in time order, so that no peak is lost and every
// bucket ends at its true level; the starting point is always kept.
func memBuckets(points []profiler.MemoryPoint, x func(int64) float64) []profiler.MemoryPoint {
	out := []profiler.MemoryPoint{points[0]}
	bucket := func(p profiler.MemoryPoint) float64 { return math.Floor(x(p.Nanos) / memBucketWidth) }
	for i := 1; i < len(points); {
		b := bucket(points[i])
		top, j := i, i
		for ; j < len(points) && bucket(points[j]) == b; j++ {
			if points[j].TotalBytes > points[top].TotalBytes {
				top = j
			}
		}
		out = append(out, points[top])
		if last := j - 1; last != top {
			out = append(out, points[last])
		}
		i = j
	}
	return out
}

// memPanelTop is the top of panel i.
func memPanelTop(i int) float64 {
	return memTop + memPanelGap + float64(i)*(memPanelHeight+memPanelGap)
}

// memByteScale returns the bytes at the top of every panel, rounded up to
// a tick, the unit of the axis's labels (its name and size in bytes) and
// the tick spacing in that unit.
func memByteScale(most int64) (top float64, unit string, tick float64) {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	size := 1.0
	u := 0
	for float64(most) >= 1024*size && u < len(units)-1 {
		size *= 1024
		u++
	}
	v := max(float64(most)/size, 1)
	tick = svgNiceStep(v, 4)
	top = math.Ceil(v/tick*(1+1e-9)) * tick * size
	return top, units[u], tick
}

// memCategories lists the categories drawn in any panel, in the tracks'
// order.
func memCategories(panels []memPanel) []string {
	var cats []string
	for _, p := range panels {
		for c, name := range p.track.Categories {
			if !slices.Contains(cats, name) && memDrawn(p.points, c) {
				cats = append(cats, name)
			}
		}
	}
	return cats
}

// memDrawn reports whether category c holds bytes at any point.
func memDrawn(points []profiler.MemoryPoint, c int) bool {
	for _, p := range points {
		if p.LiveBytes[c] != 0 {
			return true
		}
	}
	return false
}

// writeMemPanel draws one device's panel: its label, the byte scale's
// grid and labels, the stacked areas, the frame and the peak.
func writeMemPanel(s *svgWriter, rec profiler.Record, ix *exportIndex, p memPanel, x func(int64) float64, y func(int64) float64, top float64, span int64, unit string, tick float64) {
	s.printf(`<g class="memory-device" data-device="%d" data-peak-bytes="%d">`+"\n", p.device, p.track.PeakBytes)
	s.text(tlLeft-8, top-20, ` text-anchor="end" font-weight="bold"`, p.label)
	size := float64(memUnitSize(unit))
	for k := 0; ; k++ {
		b := int64(math.Round(float64(k) * tick * size))
		ty := y(b)
		if ty < top-1e-6 {
			break
		}
		s.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#E4E4E4"/>`+"\n", svgNum(tlLeft), svgNum(ty), svgNum(x(span)), svgNum(ty))
		s.text(tlLeft-6, ty+4, ` class="bytes-label" text-anchor="end" font-size="10" fill="#444444"`, strconv.FormatFloat(float64(k)*tick, 'f', -1, 64)+" "+unit)
	}
	base := make([]int64, len(p.points))
	for c, name := range p.track.Categories {
		if !memDrawn(p.points, c) {
			continue
		}
		upper := make([]int64, len(p.points))
		for i, pt := range p.points {
			upper[i] = base[i] + pt.LiveBytes[c]
		}
		fill := MemoryColors[name]
		if fill == "" {
			fill = unknownOpColor
		}
		s.printf(`<path class="area cat-%s" fill="%s" stroke="none" d="%s"><title>%s</title></path>`+"\n",
			svgEscape(name), fill, memAreaPath(p.points, base, upper, x, y, span), svgEscape(name))
		base = upper
	}
	s.printf(`<rect x="%s" y="%s" width="%s" height="%s" fill="none" stroke="#BBBBBB"/>`+"\n",
		svgNum(tlLeft), svgNum(top), svgNum(x(span)-tlLeft), svgNum(memPanelHeight))
	writeMemPeak(s, rec, ix, p, x(p.peak.Nanos), y(p.peak.TotalBytes), top)
	s.printf("</g>\n")
}

// memUnitSize is the size in bytes of a unit memByteScale names.
func memUnitSize(unit string) int64 {
	size := int64(1)
	for _, u := range []string{"B", "KiB", "MiB", "GiB", "TiB"} {
		if u == unit {
			return size
		}
		size *= 1024
	}
	return 1
}

// memAreaPath is the outline of one category's band: its upper edge as
// a step function forwards, each level holding until the next point (the
// last until the axis's end), then its lower edge back. Points that do
// not move an edge, as drawn, are left out of it.
func memAreaPath(points []profiler.MemoryPoint, lower, upper []int64, x func(int64) float64, y func(int64) float64, span int64) string {
	var b strings.Builder
	n := len(points)
	level := svgNum(y(upper[0]))
	fmt.Fprintf(&b, "M%s %s", svgNum(x(points[0].Nanos)), level)
	for i := 1; i < n; i++ {
		if next := svgNum(y(upper[i])); next != level {
			fmt.Fprintf(&b, "H%sV%s", svgNum(x(points[i].Nanos)), next)
			level = next
		}
	}
	level = svgNum(y(lower[n-1]))
	fmt.Fprintf(&b, "H%sV%s", svgNum(x(span)), level)
	for i := n - 1; i > 0; i-- {
		if next := svgNum(y(lower[i-1])); next != level {
			fmt.Fprintf(&b, "H%sV%s", svgNum(x(points[i].Nanos)), next)
			level = next
		}
	}
	fmt.Fprintf(&b, "H%sZ", svgNum(x(points[0].Nanos)))
	return b.String()
}

// writeMemPeak marks the panel's peak at (px, py) with a dashed line and
// a dot, and names it above the panel in two lines: what and when, then
// what it is made of.
func writeMemPeak(s *svgWriter, rec profiler.Record, ix *exportIndex, p memPanel, px, py, top float64) {
	head, parts := memPeakLabel(rec, ix, p)
	s.printf(`<g class="peak" data-bytes="%d" data-nanos="%d">`+"\n", p.peak.TotalBytes, p.peak.Nanos)
	s.printf("<title>%s</title>\n", svgEscape(head+": "+parts))
	s.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#000000" stroke-dasharray="3 2"/>`+"\n",
		svgNum(px), svgNum(top-4), svgNum(px), svgNum(top+memPanelHeight))
	s.printf(`<circle cx="%s" cy="%s" r="3" fill="#000000"/>`+"\n", svgNum(px), svgNum(py))
	width := max(float64(len([]rune(head)))*memLabelSize, float64(len([]rune(parts)))*memPartsSize) * tlCharWidth
	anchor, lx := "start", px+4
	if px+4+width > tlWidth-tlRight {
		anchor, lx = "end", px-4
		if px-4-width < tlLeft {
			anchor, lx = "start", tlLeft
		}
	}
	attrs := fmt.Sprintf(` class="peak-label" text-anchor="%s"`, anchor)
	s.text(lx, top-20, attrs+fmt.Sprintf(` font-size="%s" font-weight="bold"`, svgNum(memLabelSize)), head)
	s.text(lx, top-7, attrs+fmt.Sprintf(` font-size="%s"`, svgNum(memPartsSize)), parts)
	s.printf("</g>\n")
}

// memPeakLabel names a panel's peak: "peak 12.3 MiB at 4.56 ms in
// forward 1.3 (layer2.0)", and what it is made of, largest first:
// "activations 8.00 MiB, weights 3.00 MiB, …". Categories that would
// make the second line longer than the plot are summed as "n more".
func memPeakLabel(rec profiler.Record, ix *exportIndex, p memPanel) (head, parts string) {
	head = fmt.Sprintf("peak %s at %s", FormatBytes(p.peak.TotalBytes), svgMillis(p.peak.Nanos))
	if p.peak.Change >= 0 {
		if ev := p.track.Changes[p.peak.Change].Event; ev >= 0 && ev < len(rec.Events) {
			e := &rec.Events[ev]
			head += " in " + traceEventName(e)
			if e.Block >= 0 {
				head += " (" + ix.blockName(e.Block) + ")"
			}
		}
	}
	type part struct {
		name  string
		bytes int64
	}
	var list []part
	for c, name := range p.track.Categories {
		if b := p.peak.LiveBytes[c]; b != 0 {
			list = append(list, part{name, b})
		}
	}
	slices.SortStableFunc(list, func(a, b part) int { return cmp.Compare(b.bytes, a.bytes) })
	maxChars := int(math.Floor((tlWidth - tlLeft - tlRight) / (tlCharWidth * memPartsSize)))
	for i, pt := range list {
		next := fmt.Sprintf("%s %s", pt.name, FormatBytes(pt.bytes))
		if i > 0 {
			next = ", " + next
		}
		if rest := len(list) - i - 1; rest > 0 && len([]rune(parts+next))+20 > maxChars {
			var sum int64
			for _, q := range list[i:] {
				sum += q.bytes
			}
			return head, fmt.Sprintf("%s, %d more %s", parts, len(list)-i, FormatBytes(sum))
		}
		parts += next
	}
	return head, parts
}

// writeMemLegend draws a swatch per drawn category, its baseline at y.
func writeMemLegend(s *svgWriter, cats []string, y float64) {
	s.printf(`<g class="legend">` + "\n")
	lx := tlLeft
	for _, name := range cats {
		fill := MemoryColors[name]
		if fill == "" {
			fill = unknownOpColor
		}
		s.printf(`<g class="legend-item" data-category="%s">`+"\n", svgEscape(name))
		s.printf(`<rect x="%s" y="%s" width="14" height="14" fill="%s" stroke="#FFFFFF"/>`+"\n", svgNum(lx), svgNum(y-11), fill)
		s.text(lx+19, y, "", name)
		s.printf("</g>\n")
		lx += 19 + float64(len([]rune(name)))*tlCharWidth*tlFontSize + 16
	}
	s.printf("</g>\n")
}

// memoryTitle names the run and the step: "memory · resnet50 · gpipe ·
// K=2 · M=4 · batch 8 · step 1".
func memoryTitle(rec profiler.Record, step int) string {
	c := rec.Config
	t := fmt.Sprintf("memory · %s · %s · K=%d · M=%d · batch %d · step %d", c.Model, c.Schedule, c.Devices, c.Micro, c.Batch, step)
	if rec.Kind == profiler.KindPredicted {
		t = "predicted · " + t
	}
	return t
}
