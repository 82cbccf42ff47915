package reports

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/pipecast/pipecast/profiler"
)

// Layout of the bands of WriteTimelinesSVG, in SVG user units; the rows
// inside a band are laid out as WriteTimelineSVG lays them out.
const (
	tlBandTitle = 22.0 // from a band's top to its first row
	tlBandGap   = 20.0 // from a band's last row to the next band's top
	tlMargin    = 12.0 // left edge of the band titles
)

// TimelineRun is one run drawn by WriteTimelinesSVG: the step of Record
// numbered Step (a Step.Step value), and a Label such as "measured" or
// "predicted" that starts the band's title. An empty Label on a
// predicted record reads "predicted".
type TimelineRun struct {
	Record profiler.Record
	Step   int
	Label  string
}

// errNoTimelineRuns is returned by WriteTimelinesSVG for no runs.
var errNoTimelineRuns = errors.New("reports: timelines: no runs to draw")

// WriteTimelinesSVG writes one step of each run as an SVG: a band per
// run, stacked in the order given, each with the device rows, ops and
// labels of WriteTimelineSVG, all on one time axis whose scale the
// longest step sets, so that a shorter step's rows end visibly earlier.
// Each band is titled with the run's label, schedule, schedule options
// (checkpointing, look-ahead, virtual stages, straggler), K, M, the step's time and the
// run's bubble fraction (its record's summary, the mean over its measured
// steps); the model and batch head the whole figure when the runs share
// them and each band otherwise. One legend lists the op kinds of all
// bands. It returns an error, having written nothing, when runs is empty
// or a run has no events of its step.
func WriteTimelinesSVG(w io.Writer, runs []TimelineRun) error {
	if len(runs) == 0 {
		return errNoTimelineRuns
	}
	bands := make([]timelineBand, len(runs))
	var span int64 = 1
	var ops []profiler.Event
	for i, r := range runs {
		b, err := newTimelineBand(r.Record, r.Step)
		if err != nil {
			return fmt.Errorf("%w (run %d of %d)", err, i+1, len(runs))
		}
		bands[i] = b
		span = max(span, b.span)
		ops = append(ops, b.ops...)
	}
	tops := make([]float64, len(bands))
	y := tlTop
	for i, b := range bands {
		tops[i] = y
		y += tlBandTitle + b.height() + tlBandGap
	}
	bottom := y - tlBandGap
	kinds := withLaterStages(legendKinds(ops), bands...)
	height := bottom + 84 + float64(legendLines(kinds)-1)*tlLegendLine

	plotW := tlWidth - tlLeft - tlRight
	x := func(ns int64) float64 { return tlLeft + float64(ns)/float64(span)*plotW }
	title, shared := timelinesTitle(runs)
	s := &svgWriter{w: w}
	s.printf(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	s.printf(`<svg xmlns="http://www.w3.org/2000/svg" class="pipecast-timelines" width="%s" height="%s" viewBox="0 0 %s %s" font-family="sans-serif" font-size="%s">`+"\n",
		svgNum(tlWidth), svgNum(height), svgNum(tlWidth), svgNum(height), svgNum(tlFontSize))
	s.printf("<title>%s</title>\n", svgEscape(title))
	s.printf(`<rect width="100%%" height="100%%" fill="#FFFFFF"/>` + "\n")
	s.text(tlWidth/2, 24, ` class="title" text-anchor="middle" font-size="14" font-weight="bold"`, title)
	writeHatchDefs(s)

	// The grid runs through each band's rows, not through the titles.
	grid := make([][2]float64, len(bands))
	for i, b := range bands {
		top := tops[i] + tlBandTitle
		grid[i] = [2]float64{top - 4, top + b.height() + 4}
	}
	writeTimeAxis(s, span, x, grid, "", bottom)
	for i, b := range bands {
		c := b.rec.Config
		s.printf(`<g class="run" data-run="%d" data-schedule="%s" data-step="%d" data-step-nanos="%d">`+"\n",
			i, svgEscape(c.Schedule), b.step, b.span)
		s.text(tlMargin, tops[i]+14, ` class="run-title" font-weight="bold"`, bandTitle(runs[i], b, !shared))
		writeBandRows(s, b, x, tops[i]+tlBandTitle)
		writeBandOps(s, b, x, tops[i]+tlBandTitle)
		s.printf("</g>\n")
	}
	writeTimelineLegend(s, kinds, bottom+58)
	s.printf("</svg>\n")
	return s.err
}

// timelinesTitle heads the figure: the model and batch when every run
// has the same (shared is then true), and how many runs it shows.
func timelinesTitle(runs []TimelineRun) (title string, shared bool) {
	first := runs[0].Record.Config
	shared = true
	for _, r := range runs[1:] {
		if c := r.Record.Config; c.Model != first.Model || c.Batch != first.Batch {
			shared = false
		}
	}
	what := fmt.Sprintf("%d runs, one step each, on one time axis", len(runs))
	if len(runs) == 1 {
		what = "1 run"
	}
	if !shared {
		return what, false
	}
	return fmt.Sprintf("%s · batch %d · %s", first.Model, first.Batch, what), true
}

// bandTitle names a band's run and step: "measured · coop · prefetch 1 ·
// K=4 · M=8 · step 2: 123.4 ms · bubble 12.5 %", with the model and
// batch after the label when withWorkload is set.
func bandTitle(r TimelineRun, b timelineBand, withWorkload bool) string {
	rec := b.rec
	c := rec.Config
	var parts []string
	label := r.Label
	if label == "" && rec.Kind == profiler.KindPredicted {
		label = "predicted"
	}
	if label != "" {
		parts = append(parts, label)
	}
	if withWorkload {
		parts = append(parts, c.Model, "batch "+strconv.Itoa(c.Batch))
	}
	parts = append(parts, c.Schedule)
	parts = append(parts, scheduleOptions(c)...)
	parts = append(parts, fmt.Sprintf("K=%d", c.Devices), fmt.Sprintf("M=%d", c.Micro))
	step := "step " + strconv.Itoa(b.step)
	if rec.Kind == profiler.KindPredicted {
		step = "simulated step"
	}
	if b.stepNanos > 0 {
		step += ": " + svgMillis(b.stepNanos)
	}
	parts = append(parts, step, fmt.Sprintf("bubble %.1f %%", 100*rec.Summary.BubbleFraction))
	if rec.Oversubscribed {
		parts = append(parts, "oversubscribed")
	}
	return strings.Join(parts, " · ")
}

// scheduleOptions lists the options of a run's schedule that its name
// does not say: checkpointing, look-ahead depth, virtual stages, an
// injected straggler and the devices' threads and speeds where they
// differ.
func scheduleOptions(c profiler.RunConfig) []string {
	var opts []string
	if c.Checkpoint != "" {
		opts = append(opts, "checkpoint "+c.Checkpoint)
	}
	if c.Prefetch > 0 {
		opts = append(opts, "prefetch "+strconv.Itoa(c.Prefetch))
	}
	if c.Virtual > 0 {
		opts = append(opts, "virtual stages "+strconv.Itoa(c.Virtual))
	}
	if c.StragglerFactor > 0 && c.StragglerFactor != 1 {
		opts = append(opts, fmt.Sprintf("straggler device %d ×%g", c.StragglerDevice, c.StragglerFactor))
	}
	if len(c.DeviceThreads) > 0 {
		opts = append(opts, "threads "+c.ThreadsLabel())
	}
	if len(c.DeviceSpeeds) > 0 {
		speeds := make([]string, len(c.DeviceSpeeds))
		for i, v := range c.DeviceSpeeds {
			speeds[i] = strconv.FormatFloat(v, 'f', 2, 64)
		}
		opts = append(opts, "speeds "+strings.Join(speeds, ", "))
	}
	return opts
}

// MedianStep returns the step of rec that a timeline of the run shows: of
// the steps that have events, the one whose wall time is nearest the
// median of their wall times (the lower-numbered on a tie, so of an even
// count's two middle steps the lower-numbered), so that neither an
// unusually slow nor an unusually fast step stands for the run. Steps with events but no entry in rec.Steps are taken only when
// no step has both, the lowest first. ok is false when rec has no
// events.
func MedianStep(rec profiler.Record) (step int, ok bool) {
	withEvents := map[int]bool{}
	for _, e := range rec.Events {
		withEvents[e.Step] = true
	}
	if len(withEvents) == 0 {
		return 0, false
	}
	var steps []profiler.Step
	for _, s := range rec.Steps {
		if withEvents[s.Step] {
			steps = append(steps, s)
		}
	}
	if len(steps) == 0 {
		return slices.Min(slices.Collect(maps.Keys(withEvents))), true
	}
	walls := make([]int64, len(steps))
	for i, s := range steps {
		walls[i] = s.WallNanos
	}
	slices.Sort(walls)
	n := len(walls)
	median := 2 * walls[n/2] // doubled, so that an even count's midpoint stays an integer
	if n%2 == 0 {
		median = walls[n/2-1] + walls[n/2]
	}
	dist := func(s profiler.Step) int64 {
		d := 2*s.WallNanos - median
		return max(d, -d)
	}
	best := slices.MinFunc(steps, func(a, b profiler.Step) int {
		return cmp.Or(cmp.Compare(dist(a), dist(b)), cmp.Compare(a.Step, b.Step))
	})
	return best.Step, true
}
