package reports

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pipecast/pipecast/profiler"
)

// baselineSchedule is the schedule every run is compared with: GPipe is
// the published reference the other schedules improve on.
const baselineSchedule = "gpipe"

// baselineCheckpoint is the GPipe mode preferred as the baseline when a
// dataset holds several: torchgpipe's default.
const baselineCheckpoint = "except-last"

// RunsTableOptions tune RunsTable.
type RunsTableOptions struct {
	// Title is printed above the table; empty selects "Runs (N)".
	Title string
	// Footnotes are appended after the table's own.
	Footnotes []string
}

// RunsTable compares runs, one row per record in the given order (the
// rounds of one configuration, profile --rounds, one row: the median
// round, with their spread): the
// configuration, the step time (median and range), how disturbed the
// machine was (where records carry probes), throughput and its
// speed-up over the matching GPipe run, the bubble, the largest device's
// peak memory and its ratio to GPipe's, and the bytes moved per step.
// Machine formats carry raw values: nanoseconds, bytes, fractions.
func RunsTable(recs []profiler.Record, opts RunsTableOptions) *Table {
	// Forecasts carry an uncertainty that measured runs do not: a column
	// for it appears only beside predicted records, so that tables of
	// measured runs keep their shape.
	predicted := slices.ContainsFunc(recs, func(r profiler.Record) bool { return r.Kind == profiler.KindPredicted })
	shownCols := configShownOf(recs)
	t := &Table{Title: opts.Title, Columns: runsColumns(predicted, shownCols)}
	if t.Title == "" {
		t.Title = fmt.Sprintf("Runs (%d)", len(recs))
	}
	// The rounds of one configuration are one row, with a column for
	// their spread that appears only where rounds were measured.
	points := roundPoints(recs)
	rounded := slices.ContainsFunc(points, func(p roundPoint) bool { return p.rounds > 1 })
	at := slices.IndexFunc(t.Columns, func(c Column) bool { return c.Key == "step_range" })
	if rounded {
		t.Columns = slices.Insert(t.Columns, at, Column{Key: "round_spread", Header: "rounds", Align: AlignRight, Fold: 3})
	}
	disturbances, disturbed := pointDisturbances(recs, points)
	disturbedAt := -1
	if disturbed {
		disturbedAt, t.Columns = insertDisturbed(t.Columns)
	}
	shown := make([]profiler.Record, len(points))
	for i, p := range points {
		shown[i] = p.rec
	}
	var over []string
	for i := range shown {
		row, note := runsRow(shown, i, predicted, shownCols)
		if note != "" && !slices.Contains(over, note) {
			over = append(over, note)
		}
		if rounded {
			row = slices.Insert(row, at, roundsCell(points[i]))
		}
		if disturbed {
			row = slices.Insert(row, disturbedAt, disturbedCell(disturbances[i]))
		}
		t.Rows = append(t.Rows, row)
	}
	extra := append(append(transportNotes(recs), partitionNotes(shown)...), opts.Footnotes...)
	if disturbed {
		extra = append([]string{disturbedFootnote}, extra...)
	}
	if rounded {
		extra = append([]string{roundsFootnote}, extra...)
	}
	t.Footnotes = runsFootnotes(predicted, over, extra)
	return t
}

// partitionNotes name the splits of the runs that were not balanced by
// a cost: given whole (profile --partition) or chosen for memory, one
// note for all, each workload's split once: "Splits (blocks per stage):
// mlp ×0.25 at K=2 2,1 as given."
func partitionNotes(recs []profiler.Record) []string {
	var parts []string
	for i := range recs {
		r := &recs[i]
		how := map[string]string{"given": "as given", "memory": "for memory"}[r.Config.Balance]
		if how == "" || len(r.Partition) < 2 {
			continue
		}
		sizes := make([]string, len(r.Partition))
		for s, st := range r.Partition {
			sizes[s] = strconv.Itoa(st.EndBlock - st.FirstBlock)
		}
		part := fmt.Sprintf("%s at K=%d %s %s", ModelLabel(r.Config), r.Config.Devices, strings.Join(sizes, ","), how)
		if !slices.Contains(parts, part) {
			parts = append(parts, part)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return []string{"Splits (blocks per stage): " + strings.Join(parts, "; ") + "."}
}

// transportNotes say, for runs of one process per device, over what and
// on which hosts they ran and how well their clocks were aligned (the
// largest residual of the runs): one note per transport version and list
// of hosts.
func transportNotes(recs []profiler.Record) []string {
	var heads []string
	residual := map[string]int64{}
	for i := range recs {
		env := &recs[i].Env
		if profiler.TransportOf(env) == profiler.TransportInProcess {
			continue
		}
		var hosts []string
		for _, r := range env.Ranks {
			if !slices.Contains(hosts, r.Host) {
				hosts = append(hosts, r.Host)
			}
		}
		h := fmt.Sprintf("One process per device over %s (%s) on %d host(s) %v", env.Transport, env.TransportVersion, len(hosts), hosts)
		if _, ok := residual[h]; !ok {
			heads = append(heads, h)
		}
		residual[h] = max(residual[h], env.ClockResidualNanos)
	}
	notes := make([]string, len(heads))
	for i, h := range heads {
		notes[i] = h + "."
		if r := residual[h]; r > 0 {
			notes[i] = h + "; the ranks' clock offsets moved by up to " + FormatNanos(r) + " during a run."
		}
	}
	return notes
}

// runsColumns returns the columns of the runs table, with the predicted
// step's uncertainty before the step range when predicted is set and
// the optional configuration columns shown says.
// On a narrow terminal (Table.Fit) the columns fold from the least
// telling: the step range, the bytes moved, threads, throughput (the
// batch over the step), the batch, the bubble, then the comparisons with
// GPipe and the peak; the configuration and the step time stay.
func runsColumns(predicted bool, shown configShown) []Column {
	columns := []Column{
		{Key: "id", Header: "id", Show: Machines},
		{Key: "kind", Header: "kind", Show: Machines},
	}
	columns = append(columns, configColumns(shown)...)
	columns = append(columns, []Column{
		{Key: "batch", Header: "batch", Align: AlignRight, Fold: 6},
		{Key: "threads", Header: "T", Align: AlignRight, Fold: 8},
		{Key: "step_nanos_median", Header: "step", Align: AlignRight},
		{Key: "step_range", Header: "min–max", Align: AlignRight, Show: People, Fold: 10},
		{Key: "step_nanos_min", Header: "step min", Show: Machines},
		{Key: "step_nanos_max", Header: "step max", Show: Machines},
		{Key: "samples_per_second", Header: "samples/s", Align: AlignRight, Fold: 7},
		{Key: "speedup_vs_gpipe", Header: "vs gpipe", Align: AlignRight, Fold: 1},
		{Key: "bubble_fraction", Header: "bubble", Align: AlignRight, Fold: 5},
		{Key: "peak_bytes_max", Header: "peak/device", Align: AlignRight, Fold: 2},
		{Key: "peak_vs_gpipe", Header: "mem vs gpipe", Align: AlignRight, Fold: 4},
		{Key: "moved_bytes_per_step", Header: "moved/step", Align: AlignRight, Fold: 9},
		{Key: "oversubscribed", Header: "oversubscribed", Show: Machines},
	}...)
	if predicted {
		at := slices.IndexFunc(columns, func(c Column) bool { return c.Key == "step_range" })
		columns = slices.Insert(columns, at, Column{Key: "predicted_rel_err", Header: "± step", Align: AlignRight, Fold: 3})
	}
	return columns
}

// runsRow returns the row of recs[i], in the order of runsColumns, and,
// for an oversubscribed run, the note its footnote gives; else "".
func runsRow(recs []profiler.Record, i int, predicted bool, shown configShown) (row []Cell, note string) {
	r := &recs[i]
	c := r.Config
	speed, mem := runsVsBaseline(recs, i)
	mark := ""
	if r.Oversubscribed {
		mark = " *"
		note = fmt.Sprintf("%s threads exceed the %d cores", c.ThreadsSpec(), r.Env.Cores)
	}
	s := r.Summary
	row = append([]Cell{String(r.ID), String(r.Kind)}, configCells(c, mark, shown)...)
	row = append(row,
		Int(int64(c.Batch)), ThreadsCell(c),
		Cell{Value: s.StepNanosMedian, Text: FormatNanos(s.StepNanosMedian)},
	)
	if predicted {
		band := Empty("—")
		if r.Kind == profiler.KindPredicted {
			band = Cell{Value: s.PredictedRelErr, Text: "±" + strconv.FormatFloat(100*s.PredictedRelErr, 'f', 1, 64) + " %"}
		}
		row = append(row, band)
	}
	return append(row,
		String(FormatNanos(s.StepNanosMin)+"–"+FormatNanos(s.StepNanosMax)),
		Int(s.StepNanosMin), Int(s.StepNanosMax),
		Float(s.SamplesPerSecond, 1),
		speed,
		runsPercentCell(s.BubbleFraction),
		Bytes(s.PeakBytesMax),
		mem,
		Bytes(s.MovedBytesPerStep),
		Cell{Value: r.Oversubscribed, Text: strconv.FormatBool(r.Oversubscribed)},
	), note
}

// runsVsBaseline returns the speed-up and the peak-memory ratio of
// recs[i] over its GPipe baseline (see runsBaseline), each "—" where
// there is no baseline or nothing to divide by.
func runsVsBaseline(recs []profiler.Record, i int) (speed, mem Cell) {
	r := &recs[i]
	base := runsBaseline(recs, i)
	speed, mem = Empty("—"), Empty("—")
	if base != nil {
		if s := r.Summary.StepNanosMedian; s > 0 {
			speed = runsRatioCell(float64(base.Summary.StepNanosMedian) / float64(s))
		}
		if p := base.Summary.PeakBytesMax; p > 0 {
			mem = runsRatioCell(float64(r.Summary.PeakBytesMax) / float64(p))
		}
	}
	return speed, mem
}

// runsFootnotes returns the runs table's footnotes: its columns, the
// uncertainty when predicted is set, one per oversubscription note in
// over, then extra.
func runsFootnotes(predicted bool, over, extra []string) []string {
	notes := []string{
		"step: median wall time of the measured steps; vs gpipe: the GPipe run of the same model, sizes, batch, K and M " +
			"takes this many times as long (above 1: faster than GPipe); mem vs gpipe: peak bytes over GPipe's.",
		"bubble: the devices' mean idle time over the step time; peak/device: the largest device's peak bytes; " +
			"moved/step: bytes all devices received per step.",
	}
	if predicted {
		notes = append(notes, "± step: a predicted run's relative 1-σ uncertainty of its step time, "+
			"from the fitted costs' residuals and the measured runs' run-to-run noise; — for measured runs.")
	}
	for _, n := range over {
		notes = append(notes, "* oversubscribed: "+n+", so devices compete for cores and times are inflated.")
	}
	return append(notes, extra...)
}

// runsBaseline returns the record recs[i] is compared with: itself for a
// GPipe run, otherwise the GPipe run of the same model, sizes, batch, K
// and M, preferring torchgpipe's default checkpointing; nil if none.
func runsBaseline(recs []profiler.Record, i int) *profiler.Record {
	r := &recs[i]
	if r.Config.Schedule == baselineSchedule {
		return r
	}
	var found *profiler.Record
	for j := range recs {
		b := &recs[j]
		if b.Config.Schedule != baselineSchedule || !runsSameWorkload(r.Config, b.Config) {
			continue
		}
		if found == nil || (found.Config.Checkpoint != baselineCheckpoint && b.Config.Checkpoint == baselineCheckpoint) {
			found = b
		}
	}
	return found
}

// runsSameWorkload reports whether two runs train the same model on the same
// pipeline shape, so that their times compare schedules alone.
func runsSameWorkload(a, b profiler.RunConfig) bool {
	return a.Model == b.Model && a.SizeRecord == b.SizeRecord &&
		a.Batch == b.Batch && a.Devices == b.Devices && a.Micro == b.Micro && max(a.Replicas, 1) == max(b.Replicas, 1)
}

// ThreadsCell returns the cell of a run's threads: a count, or where the
// devices' threads differ their list ("2,1"), a string in machine output.
func ThreadsCell(c profiler.RunConfig) Cell {
	if len(c.DeviceThreads) == 0 {
		return Int(int64(c.Threads))
	}
	return String(c.ThreadsLabel())
}
