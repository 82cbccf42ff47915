package reports

import (
	"cmp"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/pipecast/pipecast/profiler"
)

// ScheduleColors is the bar colour of each schedule in SVG charts, from
// the Okabe–Ito palette (Okabe and Ito, "Color Universal Design", 2008),
// which stays distinct under the common forms of colour blindness.
// Schedules it does not name take extraScheduleColors in turn.
var ScheduleColors = map[string]color.RGBA{
	"single": {R: 0x56, G: 0xB4, B: 0xE9, A: 0xFF}, // sky blue
	"gpipe":  {R: 0xE6, G: 0x9F, B: 0x00, A: 0xFF}, // orange
	"coop":   {R: 0x00, G: 0x72, B: 0xB2, A: 0xFF}, // blue
	"1f1b":   {R: 0x00, G: 0x9E, B: 0x73, A: 0xFF}, // bluish green
}

// extraScheduleColors are the rest of the Okabe–Ito palette but black,
// which gonum/plot's SVG canvas leaves implicit and tests could not find.
var extraScheduleColors = []color.RGBA{
	{R: 0xD5, G: 0x5E, B: 0x00, A: 0xFF}, // vermillion
	{R: 0xCC, G: 0x79, B: 0xA7, A: 0xFF}, // reddish purple
	{R: 0xF0, G: 0xE4, B: 0x42, A: 0xFF}, // yellow
}

// Chart layout.
const (
	chartSlot        = 0.5 * vg.Inch // horizontal room per bar
	chartMinWidth    = 7 * vg.Inch
	chartPanelHeight = 3.6 * vg.Inch
	chartMargin      = 1.3 * vg.Inch // axis, labels and padding beside the bars
)

// chartBar is one record's bar.
type chartBar struct {
	rec   profiler.Record
	label string
	slot  float64
}

// chartGroup is the bars of one schedule, in consecutive slots.
type chartGroup struct {
	schedule string
	color    color.RGBA
	bars     []chartBar
}

// WriteChartSVG writes an SVG chart of a set of records, such as a sweep,
// in two panels stacked: the median step time of each record in
// milliseconds as a bar, with the spread from the fastest to the slowest
// measured step as an error bar, and the peak memory of each record's
// largest device in MiB. Bars are grouped by schedule, coloured from
// ScheduleColors and labelled "gpipe K=2 M=4" (with the batch and model
// where the records differ in them). It returns an error for an empty set.
func WriteChartSVG(w io.Writer, recs []profiler.Record) error {
	if len(recs) == 0 {
		return errNoChartRecords
	}
	groups, slots := chartGroups(recs)

	width := max(chartMinWidth, chartMargin+vg.Length(slots)*chartSlot)
	barWidth := 0.7 * (width - chartMargin) / vg.Length(slots+1)
	timePanel, err := chartPanel(groups, barWidth, true)
	if err != nil {
		return fmt.Errorf("reports: chart step times: %w", err)
	}
	timePanel.Title.Text = "Step time: median, whiskers min–max" + chartCommon(recs)
	timePanel.Y.Label.Text = "step time (ms)"
	memPanel, err := chartPanel(groups, barWidth, false)
	if err != nil {
		return fmt.Errorf("reports: chart peak memory: %w", err)
	}
	memPanel.Title.Text = "Peak memory of the largest device"
	memPanel.Y.Label.Text = "peak memory (MiB)"

	c := vgsvg.New(width, 2*chartPanelHeight)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(12), PadY: vg.Points(18)}
	panels := [][]*plot.Plot{{timePanel}, {memPanel}}
	canvases := plot.Align(panels, tiles, draw.New(c))
	for i, row := range panels {
		row[0].Draw(canvases[i][0])
	}
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("reports: write chart: %w", err)
	}
	return nil
}

// chartGroups orders the records by schedule (in order of first
// appearance), then devices, micro-batches and batch, and gives each bar a
// slot on the x axis, leaving an empty slot between schedules. It returns
// the groups and the number of slots used.
func chartGroups(recs []profiler.Record) ([]chartGroup, int) {
	models, batches := map[string]bool{}, map[int]bool{}
	for _, r := range recs {
		models[r.Config.Model] = true
		batches[r.Config.Batch] = true
	}
	var groups []chartGroup
	index := map[string]int{}
	extra := 0
	for _, r := range recs {
		s := r.Config.Schedule
		i, ok := index[s]
		if !ok {
			col, known := ScheduleColors[s]
			if !known {
				col = extraScheduleColors[extra%len(extraScheduleColors)]
				extra++
			}
			i = len(groups)
			index[s] = i
			groups = append(groups, chartGroup{schedule: s, color: col})
		}
		label := fmt.Sprintf("%s K=%d M=%d", s, r.Config.Devices, r.Config.Micro)
		if len(batches) > 1 {
			label += fmt.Sprintf(" B=%d", r.Config.Batch)
		}
		if len(models) > 1 {
			label = r.Config.Model + " " + label
		}
		if r.Kind == profiler.KindPredicted {
			label += " (predicted)"
		}
		groups[i].bars = append(groups[i].bars, chartBar{rec: r, label: label})
	}
	slot := 0
	for g := range groups {
		slices.SortStableFunc(groups[g].bars, func(a, b chartBar) int {
			ca, cb := a.rec.Config, b.rec.Config
			return cmp.Or(cmp.Compare(ca.Devices, cb.Devices), cmp.Compare(ca.Micro, cb.Micro), cmp.Compare(ca.Batch, cb.Batch))
		})
		if g > 0 {
			slot++
		}
		for b := range groups[g].bars {
			groups[g].bars[b].slot = float64(slot)
			slot++
		}
	}
	return groups, slot
}

// chartCommon names what all records share — model and batch — for the
// title, or returns "" when they differ.
func chartCommon(recs []profiler.Record) string {
	c := recs[0].Config
	for _, r := range recs[1:] {
		if r.Config.Model != c.Model || r.Config.Batch != c.Batch {
			return ""
		}
	}
	return fmt.Sprintf(" · %s, batch %d", c.Model, c.Batch)
}

// chartPanel draws one panel: step times with their spread when times is
// set, peak memory otherwise. The step-time panel carries the legend.
func chartPanel(groups []chartGroup, barWidth vg.Length, times bool) (*plot.Plot, error) {
	p := plot.New()
	for _, f := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font, &p.Legend.TextStyle.Font} {
		f.Variant = "Sans"
	}
	// The grid goes first, so that the bars cover it.
	p.Add(plotter.NewGrid())
	var ticks plot.ConstantTicks
	top := 0.0
	for _, g := range groups {
		values := make(plotter.Values, len(g.bars))
		var spread chartSpread
		for i, b := range g.bars {
			ticks = append(ticks, plot.Tick{Value: b.slot, Label: b.label})
			if times {
				s := b.rec.Summary
				values[i] = float64(s.StepNanosMedian) / 1e6
				lo, hi := values[i], values[i]
				if s.StepNanosMin > 0 || s.StepNanosMax > 0 {
					lo, hi = float64(s.StepNanosMin)/1e6, float64(s.StepNanosMax)/1e6
				}
				spread.XYs = append(spread.XYs, plotter.XY{X: b.slot, Y: values[i]})
				spread.errs = append(spread.errs, struct{ Low, High float64 }{Low: math.Max(values[i]-lo, 0), High: math.Max(hi-values[i], 0)})
				top = max(top, hi)
			} else {
				values[i] = float64(chartPeakBytes(b.rec)) / (1 << 20)
			}
			top = max(top, values[i])
		}
		bars, err := plotter.NewBarChart(values, barWidth)
		if err != nil {
			return nil, err
		}
		bars.XMin = g.bars[0].slot
		bars.Color = g.color
		bars.LineStyle.Width = 0
		p.Add(bars)
		if times {
			whiskers, err := plotter.NewYErrorBars(spread)
			if err != nil {
				return nil, err
			}
			p.Add(whiskers)
			p.Legend.Add(g.schedule, bars)
		}
	}
	p.X.Tick.Marker = ticks
	p.X.Tick.Label.Rotation = math.Pi / 5
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YTop
	p.X.Min = ticks[0].Value - 0.7
	p.X.Max = ticks[len(ticks)-1].Value + 0.7
	p.Y.Min = 0
	// Headroom above the tallest bar for the legend, a row per schedule.
	p.Y.Max = max(top*(1.15+0.12*float64(len(groups))), 1e-3)
	p.Y.Tick.Marker = plot.TickerFunc(chartYTicks)
	// Keep the legend below the title, inside the headroom.
	p.Legend.Top = true
	p.Legend.YOffs = -vg.Points(18)
	p.Legend.XOffs = -vg.Points(6)
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	p.Legend.Padding = vg.Points(3)
	return p, nil
}

// chartPeakBytes is the record's largest device peak: the larger of the
// summary's and its devices' peaks, so that a record whose summary lacks it
// still charts.
func chartPeakBytes(r profiler.Record) int64 {
	peak := r.Summary.PeakBytesMax
	for _, d := range r.Devices {
		peak = max(peak, d.PeakBytes)
	}
	return peak
}

// chartYTicks are gonum/plot's default ticks labelled without trailing
// zeros ("250", not "250.00").
func chartYTicks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i, t := range ticks {
		if t.Label != "" {
			ticks[i].Label = strconv.FormatFloat(t.Value, 'f', -1, 64)
		}
	}
	return ticks
}

// chartSpread holds the whiskers of one schedule's bars.
type chartSpread struct {
	plotter.XYs
	errs plotter.YErrors
}

// YError returns the distances from the median down to the fastest step
// and up to the slowest.
func (s chartSpread) YError(i int) (float64, float64) { return s.errs.YError(i) }
