package reports

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/pipecast/pipecast/profiler"
)

// Timeline layout, in SVG user units (pixels at 100 %).
const (
	tlWidth      = 960.0
	tlLeft       = 150.0 // room for "cpu:12 · stage 12"
	tlRight      = 24.0
	tlTop        = 44.0
	tlRowHeight  = 26.0
	tlRowGap     = 8.0
	tlFontSize   = 12.0
	tlLabelSize  = 11.0
	tlCharWidth  = 0.62 // average advance of a sans-serif glyph, in ems
	tlMinOpWidth = 0.5  // so that an op shorter than a pixel stays visible
	tlLegendLine = 22.0 // from one line of the legend to the next
)

// timelineRow is one device of the timeline.
type timelineRow struct {
	device int
	label  string
	// chunks is set when the device holds several stages (interleaved,
	// the V-shaped schedules): its ops are then labelled
	// "stage.micro-batch", so that every chunk change shows, and those of
	// its stages after its first (a V's way back) are hatched.
	chunks bool
	first  int // the device's first stage
}

// laterStages is the legend's item for the hatch over the ops of a
// device's stages after its first.
const laterStages = "later stage of a device"

// laterHatch is the id of the pattern that hatches them.
const laterHatch = "pipecast-later-stage"

// writeHatchDefs defines the hatch pattern.
func writeHatchDefs(s *svgWriter) {
	s.printf(`<defs><pattern id="%s" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)">`+
		`<line x1="0" y1="0" x2="0" y2="6" stroke="#FFFFFF" stroke-opacity="0.6" stroke-width="2.5"/></pattern></defs>`+"\n", laterHatch)
}

// withLaterStages returns kinds with the hatch's legend item when a band
// has a device of several stages.
func withLaterStages(kinds []string, bands ...timelineBand) []string {
	for _, b := range bands {
		for _, r := range b.rows {
			if r.chunks {
				return append(slices.Clip(kinds), laterStages)
			}
		}
	}
	return kinds
}

// WriteTimelineSVG writes the measured step numbered step of rec (a
// Step.Step value, as in rec.Steps and rec.Events) as an SVG timeline: a
// row per device, labelled "cpu:0 · stage 0", each op a box from its start
// to its end filled with its kind's colour from OpColors, its micro-batch
// number inside when it fits, idle time blank, a time axis in
// milliseconds, a legend of the kinds present and a title with the model,
// schedule, devices K, micro-batches M, batch and the step time. Per-block
// events are not drawn: they lie inside their op. It returns an error if
// the record has no events of that step.
func WriteTimelineSVG(w io.Writer, rec profiler.Record, step int) error {
	b, err := newTimelineBand(rec, step)
	if err != nil {
		return err
	}
	plotW := tlWidth - tlLeft - tlRight
	x := func(ns int64) float64 { return tlLeft + float64(ns)/float64(b.span)*plotW }
	bottom := tlTop + float64(len(b.rows))*(tlRowHeight+tlRowGap) - tlRowGap
	kinds := withLaterStages(legendKinds(b.ops), b)
	height := bottom + 84 + float64(legendLines(kinds)-1)*tlLegendLine

	s := &svgWriter{w: w}
	title := timelineTitle(rec, step, b.stepNanos)
	s.printf(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	s.printf(`<svg xmlns="http://www.w3.org/2000/svg" class="pipecast-timeline" width="%s" height="%s" viewBox="0 0 %s %s" font-family="sans-serif" font-size="%s">`+"\n",
		svgNum(tlWidth), svgNum(height), svgNum(tlWidth), svgNum(height), svgNum(tlFontSize))
	s.printf("<title>%s</title>\n", svgEscape(title))
	s.printf(`<rect width="100%%" height="100%%" fill="#FFFFFF"/>` + "\n")
	s.text(tlWidth/2, 24, ` class="title" text-anchor="middle" font-size="14" font-weight="bold"`, title)
	writeHatchDefs(s)
	// Grid and rows first, so the ops are drawn over them.
	writeTimeAxis(s, b.span, x, [][2]float64{{tlTop - 4, bottom + 4}}, "", bottom)
	writeBandRows(s, b, x, tlTop)
	writeBandOps(s, b, x, tlTop)
	writeTimelineLegend(s, kinds, bottom+58)
	s.printf("</svg>\n")
	return s.err
}

// timelineBand is one run's step as a timeline draws it: its whole ops
// sorted by device and start, its device rows and its length.
type timelineBand struct {
	rec       profiler.Record
	step      int
	ops       []profiler.Event
	rows      []timelineRow
	rowOf     map[int]int // device → row
	stepNanos int64       // the step's wall time, 0 if rec.Steps lacks it
	span      int64       // the step's wall time or its last op's end, at least 1
}

// newTimelineBand collects the whole ops of the measured step numbered
// step of rec. It returns an error if the record has no events of that
// step.
func newTimelineBand(rec profiler.Record, step int) (timelineBand, error) {
	var ops []profiler.Event
	steps := map[int]bool{}
	for _, e := range rec.Events {
		steps[e.Step] = true
		if e.Step == step && e.Block < 0 {
			ops = append(ops, e)
		}
	}
	if len(ops) == 0 {
		if len(steps) == 0 {
			return timelineBand{}, fmt.Errorf("reports: timeline of record %q: the record has no events (was it recorded with events?)", rec.ID)
		}
		have := make([]int, 0, len(steps))
		for s := range steps {
			have = append(have, s)
		}
		slices.Sort(have)
		return timelineBand{}, fmt.Errorf("reports: timeline of record %q: step %d has no events (steps with events: %v)", rec.ID, step, have)
	}
	slices.SortStableFunc(ops, func(a, b profiler.Event) int {
		if a.Device != b.Device {
			return a.Device - b.Device
		}
		if a.StartNanos != b.StartNanos {
			return cmp.Compare(a.StartNanos, b.StartNanos)
		}
		return cmp.Compare(a.EndNanos, b.EndNanos)
	})
	b := timelineBand{rec: rec, step: step, ops: ops, rows: timelineRows(rec, ops), rowOf: map[int]int{}}
	for _, s := range rec.Steps {
		if s.Step == step {
			b.stepNanos = s.WallNanos
		}
	}
	b.span = b.stepNanos
	for _, e := range ops {
		b.span = max(b.span, e.EndNanos)
	}
	b.span = max(b.span, 1)
	for i, r := range b.rows {
		b.rowOf[r.device] = i
	}
	return b, nil
}

// height is the height of the band's rows.
func (b timelineBand) height() float64 {
	return float64(len(b.rows))*(tlRowHeight+tlRowGap) - tlRowGap
}

// rowY is the top of row i of a band whose first row starts at top.
func rowY(top float64, i int) float64 { return top + float64(i)*(tlRowHeight+tlRowGap) }

// writeTimeAxis draws the vertical grid at ticks of milliseconds over
// each [top, bottom] of grid (dashed as dash, an SVG stroke-dasharray,
// unless it is empty), and below bottom the axis line, the ticks' labels
// and the axis title.
func writeTimeAxis(s *svgWriter, span int64, x func(int64) float64, grid [][2]float64, dash string, bottom float64) {
	style := ""
	if dash != "" {
		style = ` stroke-dasharray="` + dash + `"`
	}
	ms := float64(span) / 1e6
	tick := svgNiceStep(ms, 10)
	decimals := 0
	for t := tick; t < 1-1e-9; t *= 10 {
		decimals++
	}
	s.printf(`<g class="axis">` + "\n")
	for k := 0; float64(k)*tick <= ms*(1+1e-9); k++ {
		tx := x(int64(math.Round(float64(k) * tick * 1e6)))
		for _, g := range grid {
			s.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#E4E4E4"%s/>`+"\n", svgNum(tx), svgNum(g[0]), svgNum(tx), svgNum(g[1]), style)
		}
		s.text(tx, bottom+18, ` text-anchor="middle"`, strconv.FormatFloat(float64(k)*tick, 'f', decimals, 64))
	}
	s.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#000000"/>`+"\n", svgNum(tlLeft), svgNum(bottom+4), svgNum(tlWidth-tlRight), svgNum(bottom+4))
	s.text((tlLeft+tlWidth-tlRight)/2, bottom+36, ` class="axis-label" text-anchor="middle"`, "time since the step began (ms)")
	s.printf("</g>\n")
}

// writeBandRows draws the band's device rows from top: each row's label
// and a frame as long as the band's step.
func writeBandRows(s *svgWriter, b timelineBand, x func(int64) float64, top float64) {
	for i, r := range b.rows {
		y := rowY(top, i)
		s.printf(`<g class="device" data-device="%d">`+"\n", r.device)
		s.text(tlLeft-8, y+tlRowHeight/2+4, ` text-anchor="end"`, r.label)
		s.printf(`<rect x="%s" y="%s" width="%s" height="%s" fill="none" stroke="#BBBBBB"/>`+"\n", svgNum(tlLeft), svgNum(y), svgNum(x(b.span)-tlLeft), svgNum(tlRowHeight))
		s.printf("</g>\n")
	}
}

// writeBandOps draws the band's ops over its rows.
func writeBandOps(s *svgWriter, b timelineBand, x func(int64) float64, top float64) {
	s.printf(`<g class="ops">` + "\n")
	for _, e := range b.ops {
		r := b.rows[b.rowOf[e.Device]]
		writeTimelineOp(s, e, x(e.StartNanos), x(e.EndNanos), rowY(top, b.rowOf[e.Device]), r.chunks, r.chunks && e.Stage > r.first)
	}
	s.printf("</g>\n")
}

// writeTimelineOp draws one op: its box, a tooltip and, when it fits, its
// micro-batch number, after its stage ("2.3") on a device that holds
// several stages (chunks), the box hatched when the stage is one of the
// device's later ones.
func writeTimelineOp(s *svgWriter, e profiler.Event, x0, x1, y float64, chunks, later bool) {
	fill, stroke := OpColors[e.Op], "#FFFFFF"
	if fill == "" {
		fill, stroke = unknownOpColor, "#444444"
	}
	s.printf(`<g class="op op-%s" data-device="%d" data-micro="%d">`+"\n", svgEscape(e.Op), e.Device, e.Micro)
	tip := e.Op
	if e.Stage >= 0 && e.Op != "recv" && e.Op != "send" {
		tip += " · stage " + strconv.Itoa(e.Stage)
	}
	if e.Micro >= 0 {
		tip += " · micro-batch " + strconv.Itoa(e.Micro)
	}
	if e.Shard >= 0 {
		tip += " · shard " + strconv.Itoa(e.Shard)
	}
	if e.Peer >= 0 {
		tip += " · peer " + strconv.Itoa(e.Peer)
	}
	if e.Bytes > 0 {
		tip += " · " + FormatBytes(e.Bytes)
	}
	tip += fmt.Sprintf(" · %s → %s (%s)", svgMillis(e.StartNanos), svgMillis(e.EndNanos), svgMillis(e.EndNanos-e.StartNanos))
	s.printf("<title>%s</title>\n", svgEscape(tip))
	w := max(x1-x0, tlMinOpWidth)
	s.printf(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s" stroke="%s" stroke-width="0.5"/>`+"\n",
		svgNum(x0), svgNum(y), svgNum(w), svgNum(tlRowHeight), fill, stroke)
	if later {
		s.printf(`<rect x="%s" y="%s" width="%s" height="%s" fill="url(#%s)"/>`+"\n", svgNum(x0), svgNum(y), svgNum(w), svgNum(tlRowHeight), laterHatch)
	}
	if e.Micro >= 0 {
		label := strconv.Itoa(e.Micro)
		if chunks && e.Stage >= 0 {
			label = strconv.Itoa(e.Stage) + "." + label
		}
		if float64(len(label))*tlCharWidth*tlLabelSize+4 <= w {
			color := "#000000"
			if svgDarkFills[fill] {
				color = "#FFFFFF"
			}
			s.text(x0+w/2, y+tlRowHeight/2+4, fmt.Sprintf(` text-anchor="middle" font-size="%s" fill="%s"`, svgNum(tlLabelSize), color), label)
		}
	}
	s.printf("</g>\n")
}

// legendKinds lists the op kinds of ops in legendOpOrder; kinds
// OpColors does not know follow, sorted.
func legendKinds(ops []profiler.Event) []string {
	present := map[string]bool{}
	for _, e := range ops {
		present[e.Op] = true
	}
	var kinds, unknown []string
	for _, k := range legendOpOrder {
		if present[k] {
			kinds = append(kinds, k)
		}
	}
	for k := range present {
		if _, ok := OpColors[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	return append(kinds, unknown...)
}

// legendItem is where the legend draws one swatch: its left edge and its
// line, counted from 0.
type legendItem struct {
	name string
	x    float64
	line int
}

// legendLayout places a swatch for each kind and one for idle time from
// tlLeft rightwards, starting a new line where the next would pass the
// right margin.
func legendLayout(kinds []string) []legendItem {
	items := make([]legendItem, 0, len(kinds)+1)
	x, line := tlLeft, 0
	for _, name := range append(slices.Clip(kinds), "idle") {
		w := 19 + float64(len([]rune(name)))*tlCharWidth*tlFontSize
		if x > tlLeft && x+w > tlWidth-tlRight {
			x, line = tlLeft, line+1
		}
		items = append(items, legendItem{name: name, x: x, line: line})
		x += w + 16
	}
	return items
}

// legendLines is the number of lines the legend of kinds takes.
func legendLines(kinds []string) int {
	items := legendLayout(kinds)
	return items[len(items)-1].line + 1
}

// writeTimelineLegend draws a swatch per op kind of kinds and one for
// idle time, its first line's baseline at y.
func writeTimelineLegend(s *svgWriter, kinds []string, y float64) {
	s.printf(`<g class="legend">` + "\n")
	for _, it := range legendLayout(kinds) {
		fill, stroke := OpColors[it.name], "#FFFFFF"
		switch {
		case it.name == laterStages:
			fill, stroke = "#999999", "#FFFFFF"
		case it.name == "idle" && fill == "":
			fill, stroke = "#FFFFFF", "#BBBBBB"
		case fill == "":
			fill, stroke = unknownOpColor, "#444444"
		}
		ly := y + float64(it.line)*tlLegendLine
		s.printf(`<g class="legend-item" data-op="%s">`+"\n", svgEscape(it.name))
		s.printf(`<rect x="%s" y="%s" width="14" height="14" fill="%s" stroke="%s"/>`+"\n", svgNum(it.x), svgNum(ly-11), fill, stroke)
		if it.name == laterStages {
			s.printf(`<rect x="%s" y="%s" width="14" height="14" fill="url(#%s)"/>`+"\n", svgNum(it.x), svgNum(ly-11), laterHatch)
		}
		s.text(it.x+19, ly, "", it.name)
		s.printf("</g>\n")
	}
	s.printf("</g>\n")
}

// timelineRows lists the devices of the record and of the step's ops in
// index order, labelled "name · stage s", or "name · stages 0, 2" for a
// device that holds several (interleaved).
func timelineRows(rec profiler.Record, ops []profiler.Event) []timelineRow {
	names := map[int]string{}
	stages := map[int]int{}
	for i, d := range rec.Env.Devices {
		names[i] = d.Name
	}
	for _, d := range rec.Devices {
		if d.Name != "" {
			names[d.Index] = d.Name
		}
		stages[d.Index] = d.Stage
	}
	for _, e := range ops {
		if _, ok := stages[e.Device]; !ok {
			stages[e.Device] = e.Stage
		}
	}
	devices := make([]int, 0, len(stages))
	for d := range stages {
		devices = append(devices, d)
	}
	slices.Sort(devices)
	rows := make([]timelineRow, len(devices))
	for i, d := range devices {
		name := names[d]
		if name == "" {
			name = "device " + strconv.Itoa(d)
		}
		held := deviceStages(&rec, d)
		rows[i] = timelineRow{device: d, label: name + " · " + stagesLabel(held, stages[d]), chunks: len(held) > 1}
		if len(held) > 0 {
			rows[i].first = slices.Min(held)
		}
	}
	return rows
}

// timelineTitle names the run and the step: "vgg16bn · gpipe · K=4 · M=8
// · batch 32 · step 2: 123.4 ms".
func timelineTitle(rec profiler.Record, step int, stepNanos int64) string {
	c := rec.Config
	t := fmt.Sprintf("%s · %s · K=%d · M=%d · batch %d · step %d", c.Model, c.Schedule, c.Devices, c.Micro, c.Batch, step)
	if stepNanos > 0 {
		t += ": " + svgMillis(stepNanos)
	}
	if rec.Kind == profiler.KindPredicted {
		t = "predicted · " + t
	}
	if rec.Oversubscribed {
		t += " · oversubscribed"
	}
	return t
}

// errNoChartRecords is returned by the charts of record sets when the set is
// empty.
var errNoChartRecords = errors.New("reports: no run records to chart")
