package reports

import (
	"slices"
	"strconv"

	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

// ModelLabel names a run's model for people, adding the input size and
// width where they differ from the zoo's defaults: "resnet50 32px ×0.25".
func ModelLabel(c profiler.RunConfig) string { return c.SizeRecord.Label(c.Model) }

// ScheduleLabel names a run's schedule with the option that shapes it:
// "gpipe (except-last)", "coop (d=2)", "interleaved (v=2)", "1f1b".
func ScheduleLabel(c profiler.RunConfig) string { return c.RecordOptions.Label() }

// scheduleShortNote is what scheduleShortLabel leaves out, for the
// footnote of a table fitted to a narrow terminal.
const scheduleShortNote = schedule.ShortLabelNote

// scheduleShortLabel is ScheduleLabel without the options at their
// defaults: "gpipe", "coop", but "gpipe (never)" and "coop (d=2)".
func scheduleShortLabel(c profiler.RunConfig) string { return c.RecordOptions.ShortLabel() }

// FormatNanos formats a duration for people with three or four
// significant digits: "850 ns", "12.3 µs", "4.56 ms", "1.23 s".
func FormatNanos(n int64) string {
	v := float64(n)
	units := []string{"ns", "µs", "ms", "s"}
	u := 0
	for (v >= 1000 || v <= -1000) && u < len(units)-1 {
		v /= 1000
		u++
	}
	if u == 0 {
		return strconv.FormatInt(n, 10) + " ns"
	}
	d := 2
	if v >= 100 || v <= -100 {
		d = 0
	} else if v >= 10 || v <= -10 {
		d = 1
	}
	return strconv.FormatFloat(v, 'f', d, 64) + " " + units[u]
}

// runsMillisCell holds nanoseconds, shown in milliseconds with two decimals
// so that a column of them lines up.
func runsMillisCell(n int64) Cell {
	return Cell{Value: n, Text: strconv.FormatFloat(float64(n)/1e6, 'f', 2, 64)}
}

// runsRatioCell holds a ratio, shown as "1.23×".
func runsRatioCell(v float64) Cell {
	return Cell{Value: v, Text: strconv.FormatFloat(v, 'f', 2, 64) + "×"}
}

// runsPercentCell holds a fraction, shown as a percentage: "12.3 %".
func runsPercentCell(f float64) Cell {
	return Cell{Value: f, Text: strconv.FormatFloat(100*f, 'f', 1, 64) + " %"}
}

// hasVirtualStages reports whether a record has interleaved's virtual
// stages: only then do tables carry their machine column, so that tables
// of the other schedules keep their shape.
func hasVirtualStages(recs ...[]profiler.Record) bool {
	for _, rs := range recs {
		if slices.ContainsFunc(rs, func(r profiler.Record) bool { return r.Config.Virtual > 0 }) {
			return true
		}
	}
	return false
}

// configShown says which columns of a configuration a table of runs
// shows beyond those every run has: interleaved's virtual stages, and
// the data-parallel replicas R when a run has more than one.
type configShown struct{ virtual, replicas bool }

// configShownOf returns what a table of recs shows.
func configShownOf(recs ...[]profiler.Record) configShown {
	s := configShown{virtual: hasVirtualStages(recs...)}
	for _, rs := range recs {
		s.replicas = s.replicas || slices.ContainsFunc(rs, func(r profiler.Record) bool { return r.Config.Replicas > 1 })
	}
	return s
}

// configColumns are the columns of a run's configuration that the runs
// table and the comparison share, from the model to M, with the
// virtual stages and the replicas R (before K) where shown says;
// configCells fills them.
func configColumns(shown configShown) []Column {
	columns := []Column{
		{Key: "model_label", Header: "model", Show: People},
		{Key: "model", Header: "model", Show: Machines},
		{Key: "image", Header: "image", Show: Machines},
		{Key: "classes", Header: "classes", Show: Machines},
		{Key: "width", Header: "width", Show: Machines},
		{Key: "schedule", Header: "schedule", ShortNote: scheduleShortNote},
		{Key: "checkpoint", Header: "checkpoint", Show: Machines},
		{Key: "prefetch", Header: "prefetch", Show: Machines},
		{Key: "devices", Header: "K", Align: AlignRight},
		{Key: "microbatches", Header: "M", Align: AlignRight},
	}
	if shown.virtual {
		columns = slices.Insert(columns, len(columns)-2, Column{Key: "virtual_stages", Header: "virtual stages", Show: Machines})
	}
	if shown.replicas {
		columns = slices.Insert(columns, len(columns)-2, Column{Key: "replicas", Header: "R", Align: AlignRight})
	}
	return columns
}

// configCells returns c's cells of configColumns(shown), the
// schedule's cell marked with mark (" *" for an oversubscribed run)
// unless it is empty. Checkpointing shows for gpipe only, the look-ahead
// for coop only, the virtual stages for interleaved only.
func configCells(c profiler.RunConfig, mark string, shown configShown) []Cell {
	sched := String(c.Schedule)
	sched.Text, sched.Short = ScheduleLabel(c)+mark, scheduleShortLabel(c)+mark
	checkpoint, prefetch := Empty(""), Empty("")
	if c.Schedule == baselineSchedule {
		checkpoint = String(c.Checkpoint)
	}
	if c.Schedule == "coop" {
		prefetch = Int(int64(c.Prefetch))
	}
	cells := []Cell{
		String(ModelLabel(c)), String(c.Model), Int(int64(c.Image)), Int(int64(c.Classes)), Float(c.Width, 2),
		sched, checkpoint, prefetch,
	}
	if shown.virtual {
		v := Empty("")
		if c.Schedule == "interleaved" {
			v = Int(int64(max(c.Virtual, 1)))
		}
		cells = append(cells, v)
	}
	if shown.replicas {
		cells = append(cells, Int(int64(max(c.Replicas, 1))))
	}
	return append(cells, Int(int64(c.Devices)), Int(int64(c.Micro)))
}
