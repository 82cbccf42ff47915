package reports

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
)

// Plan chart layout, in SVG user units.
const (
	planWidth   = 720.0
	planHeight  = 480.0
	planLeft    = 80.0 // room for the y labels
	planRight   = 24.0
	planTop     = 48.0 // room for the title
	planBottom  = 56.0 // room for the x labels
	planBarRow  = 22.0 // a bar's row in the bar chart
	planBarLeft = 200.0
)

// errNoPlanEntries is returned for a plan chart with nothing to draw.
var errNoPlanEntries = errors.New("reports: plan chart: no configurations")

// WritePlanSVG writes a plan's chart: with forecasts (opts.Timed) a
// scatter of forecast step time against the largest device's peak
// memory, one labelled point per entry coloured by schedule, with the
// budget as a vertical line and each forecast's 1-σ uncertainty as a bar
// through its point; without, the peak memory of each entry as a
// horizontal bar, with the budget line across them.
func WritePlanSVG(w io.Writer, entries []PlanEntry, opts PlanTableOptions) error {
	if len(entries) == 0 {
		return errNoPlanEntries
	}
	s := &svgWriter{w: w}
	if opts.Timed {
		planScatter(s, entries, opts)
	} else {
		planBars(s, entries, opts)
	}
	s.printf("</svg>\n")
	return s.err
}

// planLabel names an entry on the chart: "gpipe (never) M=4".
func planLabel(e PlanEntry) string {
	name := e.Schedule
	if e.Options != "" {
		name += " (" + e.Options + ")"
	}
	return fmt.Sprintf("%s M=%d", name, e.Micro)
}

// planColor is an entry's fill, by schedule.
func planColor(e PlanEntry) string {
	c, ok := ScheduleColors[e.Schedule]
	if !ok {
		c = color.RGBA{R: 0x88, G: 0x88, B: 0x88, A: 0xFF}
	}
	return fmt.Sprintf("#%02X%02X%02X", c.R, c.G, c.B)
}

// planHeader opens the SVG document of the given height with its title.
func planHeader(s *svgWriter, height float64, title string) {
	s.printf(`<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="sans-serif" font-size="11">`+"\n",
		svgNum(planWidth), svgNum(height), svgNum(planWidth), svgNum(height))
	s.printf(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	s.text(planWidth/2, 24, ` text-anchor="middle" font-size="14"`, title)
}

// planScatter draws step time against peak memory.
func planScatter(s *svgWriter, entries []PlanEntry, opts PlanTableOptions) {
	planHeader(s, planHeight, "Forecast step time against peak memory per device")
	xHi := float64(opts.BudgetBytes)
	yHi := 0.0
	for _, e := range entries {
		xHi = math.Max(xHi, float64(e.PeakBytes))
		yHi = math.Max(yHi, float64(e.StepNanos)*(1+e.StepRelErr))
	}
	xHi, yHi = 1.1*math.Max(xHi, 1), 1.1*math.Max(yHi, 1)
	plotW, plotH := planWidth-planLeft-planRight, planHeight-planTop-planBottom
	x := func(b float64) float64 { return planLeft + plotW*b/xHi }
	y := func(ns float64) float64 { return planTop + plotH*(1-ns/yHi) }
	s.printf(`<rect x="%s" y="%s" width="%s" height="%s" fill="none" stroke="#888"/>`+"\n",
		svgNum(planLeft), svgNum(planTop), svgNum(plotW), svgNum(plotH))
	planXTicks(s, xHi, x, planTop+plotH)
	step := svgNiceStep(yHi/1e6, 5)
	for v := 0.0; v*1e6 <= yHi; v += step {
		s.text(planLeft-6, y(v*1e6)+4, ` text-anchor="end"`, svgMillis(int64(v*1e6)))
	}
	s.text(planWidth/2, planHeight-12, ` text-anchor="middle"`, "peak memory of the largest device")
	s.text(16, planTop+plotH/2, fmt.Sprintf(` text-anchor="middle" transform="rotate(-90 16 %s)"`, svgNum(planTop+plotH/2)), "forecast step time")
	if opts.BudgetBytes > 0 {
		bx := x(float64(opts.BudgetBytes))
		s.printf(`<line class="budget" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#CC3311" stroke-dasharray="6 4"/>`+"\n",
			svgNum(bx), svgNum(planTop), svgNum(bx), svgNum(planTop+plotH))
		s.text(bx+4, planTop+12, ` fill="#CC3311"`, "budget "+FormatBytes(opts.BudgetBytes))
	}
	for _, e := range entries {
		px, py := x(float64(e.PeakBytes)), y(float64(e.StepNanos))
		fill := planColor(e)
		if e.OverBudget {
			fill = "none"
		}
		if f := e.StepRelErr; f > 0 {
			// The forecast's 1-σ band, as a vertical bar through the point.
			s.printf(`<line class="plan-err" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-opacity="0.6"/>`+"\n",
				svgNum(px), svgNum(y(float64(e.StepNanos)*(1+f))), svgNum(px), svgNum(y(float64(e.StepNanos)*(1-f))), planColor(e))
		}
		s.printf(`<circle class="plan-point" cx="%s" cy="%s" r="4" fill="%s" stroke="%s"><title>%s</title></circle>`+"\n",
			svgNum(px), svgNum(py), fill, planColor(e), svgEscape(planLabel(e)+": "+FormatBytes(e.PeakBytes)+", "+FormatNanos(e.StepNanos)))
		// A label that would run past the plot's right edge goes on
		// the point's left (about 5 px a character at 9 px).
		if label := planLabel(e); px+6+5*float64(len([]rune(label))) > planWidth-planRight {
			s.text(px-6, py-4, ` font-size="9" text-anchor="end"`, label)
		} else {
			s.text(px+6, py-4, ` font-size="9"`, label)
		}
	}
}

// planXTicks draws byte ticks along the x axis at height base.
func planXTicks(s *svgWriter, hi float64, x func(float64) float64, base float64) {
	unit := 1.0
	for unit*1024 <= hi/2 {
		unit *= 1024
	}
	step := svgNiceStep(hi/unit, 6) * unit
	for v := 0.0; v <= hi; v += step {
		s.text(x(v), base+16, ` text-anchor="middle"`, FormatBytes(int64(v)))
	}
}

// planBars draws each entry's peak memory as a bar.
func planBars(s *svgWriter, entries []PlanEntry, opts PlanTableOptions) {
	height := planTop + planBarRow*float64(len(entries)) + planBottom
	planHeader(s, height, "Peak memory per device of each configuration")
	hi := float64(opts.BudgetBytes)
	for _, e := range entries {
		hi = math.Max(hi, float64(e.PeakBytes))
	}
	hi = 1.1 * math.Max(hi, 1)
	plotW := planWidth - planBarLeft - planRight
	x := func(b float64) float64 { return planBarLeft + plotW*b/hi }
	bottom := planTop + planBarRow*float64(len(entries))
	for i, e := range entries {
		top := planTop + planBarRow*float64(i)
		s.text(planBarLeft-6, top+planBarRow/2+4, ` text-anchor="end"`, planLabel(e))
		s.printf(`<rect class="plan-bar" x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s</title></rect>`+"\n",
			svgNum(planBarLeft), svgNum(top+3), svgNum(x(float64(e.PeakBytes))-planBarLeft), svgNum(planBarRow-6),
			planColor(e), svgEscape(planLabel(e)+": "+FormatBytes(e.PeakBytes)))
		s.text(x(float64(e.PeakBytes))+4, top+planBarRow/2+4, ` font-size="9"`, FormatBytes(e.PeakBytes))
	}
	planXTicks(s, hi, x, bottom)
	if opts.BudgetBytes > 0 {
		bx := x(float64(opts.BudgetBytes))
		s.printf(`<line class="budget" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#CC3311" stroke-dasharray="6 4"/>`+"\n",
			svgNum(bx), svgNum(planTop), svgNum(bx), svgNum(bottom))
		s.text(bx+4, planTop-4, ` fill="#CC3311"`, "budget "+FormatBytes(opts.BudgetBytes))
	}
}
