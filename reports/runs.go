package reports

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pipecast/pipecast/models"
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

// RunsTable compares runs, one row per record in the given order: the
// configuration, the step time (median and range), throughput and its
// speed-up over the matching GPipe run, the bubble, the largest device's
// peak memory and its ratio to GPipe's, and the bytes moved per step.
// Machine formats carry raw values: nanoseconds, bytes, fractions.
func RunsTable(recs []profiler.Record, opts RunsTableOptions) *Table {
	t := &Table{
		Title: opts.Title,
		Columns: []Column{
			{Key: "id", Header: "id", Show: Machines},
			{Key: "kind", Header: "kind", Show: Machines},
			{Key: "model_label", Header: "model", Show: People},
			{Key: "model", Header: "model", Show: Machines},
			{Key: "image", Header: "image", Show: Machines},
			{Key: "classes", Header: "classes", Show: Machines},
			{Key: "width", Header: "width", Show: Machines},
			{Key: "schedule", Header: "schedule"},
			{Key: "checkpoint", Header: "checkpoint", Show: Machines},
			{Key: "prefetch", Header: "prefetch", Show: Machines},
			{Key: "devices", Header: "K", Align: AlignRight},
			{Key: "microbatches", Header: "M", Align: AlignRight},
			{Key: "batch", Header: "batch", Align: AlignRight},
			{Key: "threads", Header: "T", Align: AlignRight},
			{Key: "step_nanos_median", Header: "step", Align: AlignRight},
			{Key: "step_range", Header: "min–max", Align: AlignRight, Show: People},
			{Key: "step_nanos_min", Header: "step min", Show: Machines},
			{Key: "step_nanos_max", Header: "step max", Show: Machines},
			{Key: "samples_per_second", Header: "samples/s", Align: AlignRight},
			{Key: "speedup_vs_gpipe", Header: "vs gpipe", Align: AlignRight},
			{Key: "bubble_fraction", Header: "bubble", Align: AlignRight},
			{Key: "peak_bytes_max", Header: "peak/device", Align: AlignRight},
			{Key: "peak_vs_gpipe", Header: "mem vs gpipe", Align: AlignRight},
			{Key: "moved_bytes_per_step", Header: "moved/step", Align: AlignRight},
			{Key: "oversubscribed", Header: "oversubscribed", Show: Machines},
		},
	}
	if t.Title == "" {
		t.Title = fmt.Sprintf("Runs (%d)", len(recs))
	}
	// Forecasts carry an uncertainty that measured runs do not: a column
	// for it appears only beside predicted records, so that tables of
	// measured runs keep their shape.
	predicted := slices.ContainsFunc(recs, func(r profiler.Record) bool { return r.Kind == profiler.KindPredicted })
	if predicted {
		at := slices.IndexFunc(t.Columns, func(c Column) bool { return c.Key == "step_range" })
		t.Columns = slices.Insert(t.Columns, at, Column{Key: "predicted_rel_err", Header: "± step", Align: AlignRight})
	}
	var over []string
	for i := range recs {
		r := &recs[i]
		c := r.Config
		base := runsBaseline(recs, i)
		speed, mem := Empty("—"), Empty("—")
		if base != nil {
			if s := r.Summary.StepNanosMedian; s > 0 {
				speed = runsRatioCell(float64(base.Summary.StepNanosMedian) / float64(s))
			}
			if p := base.Summary.PeakBytesMax; p > 0 {
				mem = runsRatioCell(float64(r.Summary.PeakBytesMax) / float64(p))
			}
		}
		sched := String(c.Schedule)
		sched.Text = ScheduleLabel(c)
		if r.Oversubscribed {
			sched.Text += " *"
			note := fmt.Sprintf("%d×%d threads exceed the %d cores", c.Devices, c.Threads, r.Env.Cores)
			if !slices.Contains(over, note) {
				over = append(over, note)
			}
		}
		checkpoint, prefetch := Empty(""), Empty("")
		if c.Schedule == baselineSchedule {
			checkpoint = String(c.Checkpoint)
		}
		if c.Schedule == "coop" {
			prefetch = Int(int64(c.Prefetch))
		}
		s := r.Summary
		row := []Cell{
			String(r.ID), String(r.Kind),
			String(ModelLabel(c)), String(c.Model), Int(int64(c.Image)), Int(int64(c.Classes)), Float(c.Width, 2),
			sched, checkpoint, prefetch,
			Int(int64(c.Devices)), Int(int64(c.Micro)), Int(int64(c.Batch)), Int(int64(c.Threads)),
			Cell{Value: s.StepNanosMedian, Text: FormatNanos(s.StepNanosMedian)},
		}
		if predicted {
			band := Empty("—")
			if r.Kind == profiler.KindPredicted {
				band = Cell{Value: s.PredictedRelErr, Text: "±" + strconv.FormatFloat(100*s.PredictedRelErr, 'f', 1, 64) + " %"}
			}
			row = append(row, band)
		}
		t.Rows = append(t.Rows, append(row,
			String(FormatNanos(s.StepNanosMin)+"–"+FormatNanos(s.StepNanosMax)),
			Int(s.StepNanosMin), Int(s.StepNanosMax),
			Float(s.SamplesPerSecond, 1),
			speed,
			runsPercentCell(s.BubbleFraction),
			Bytes(s.PeakBytesMax),
			mem,
			Bytes(s.MovedBytesPerStep),
			Cell{Value: r.Oversubscribed, Text: strconv.FormatBool(r.Oversubscribed)},
		))
	}
	t.Footnotes = []string{
		"step: median wall time of the measured steps; vs gpipe: the GPipe run of the same model, sizes, batch, K and M " +
			"takes this many times as long (above 1: faster than GPipe); mem vs gpipe: peak bytes over GPipe's.",
		"bubble: the devices' mean idle time over the step time; peak/device: the largest device's peak bytes; " +
			"moved/step: bytes all devices received per step.",
	}
	if predicted {
		t.Footnotes = append(t.Footnotes, "± step: a predicted run's relative 1-σ uncertainty of its step time, "+
			"from the fitted costs' residuals and the measured runs' run-to-run noise; — for measured runs.")
	}
	for _, n := range over {
		t.Footnotes = append(t.Footnotes, "* oversubscribed: "+n+", so devices compete for cores and times are inflated.")
	}
	t.Footnotes = append(t.Footnotes, opts.Footnotes...)
	return t
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
	return a.Model == b.Model && a.Image == b.Image && a.Classes == b.Classes && a.Width == b.Width &&
		a.Batch == b.Batch && a.Devices == b.Devices && a.Micro == b.Micro
}

// ModelLabel names a run's model for people, adding the input size and
// width where they differ from the zoo's defaults: "resnet50 32px ×0.25".
func ModelLabel(c profiler.RunConfig) string {
	label := c.Model
	if a, err := models.LookupArch(c.Model); err == nil {
		if a.DefaultImage > 0 && c.Image > 0 && c.Image != a.DefaultImage {
			label += fmt.Sprintf(" %dpx", c.Image)
		}
	} else if c.Image > 0 {
		label += fmt.Sprintf(" %dpx", c.Image)
	}
	if c.Width > 0 && c.Width != 1 {
		label += " ×" + strconv.FormatFloat(c.Width, 'g', -1, 64)
	}
	return label
}

// ScheduleLabel names a run's schedule with the option that shapes it:
// "gpipe (except-last)", "coop (d=2)", "1f1b".
func ScheduleLabel(c profiler.RunConfig) string {
	switch c.Schedule {
	case baselineSchedule:
		if c.Checkpoint != "" {
			return fmt.Sprintf("%s (%s)", c.Schedule, c.Checkpoint)
		}
	case "coop":
		return fmt.Sprintf("%s (d=%d)", c.Schedule, c.Prefetch)
	}
	return c.Schedule
}

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

// runsOpOrder is the order ops appear in a device table: compute first, then
// communication, then the update; kinds not listed follow alphabetically.
var runsOpOrder = []string{"forward", "recompute", "backward", "loss", "predict", "send", "recv", "allgather", "alltoall", "update"}

// runsCategoryOrder is the order of memory categories in a device table.
var runsCategoryOrder = []string{"weights", "gradients", "optimizer", "activations", "boundary", "comm", "workspace"}

// runsOrderedKeys returns the keys of the maps, those in order first and the
// rest sorted.
func runsOrderedKeys(order []string, maps ...map[string]int64) []string {
	seen := map[string]bool{}
	for _, m := range maps {
		for k := range m {
			seen[k] = true
		}
	}
	var keys []string
	for _, k := range order {
		if seen[k] {
			keys = append(keys, k)
			delete(seen, k)
		}
	}
	rest := make([]string, 0, len(seen))
	for k := range seen {
		rest = append(rest, k)
	}
	sort.Strings(rest)
	return append(keys, rest...)
}

// RunDetailTables returns two tables per record, in record order: its
// devices (stage and blocks, busy time per op kind, idle time, bubble,
// peak memory per category, bytes sent and received per step) and its
// blocks (per-call forward, backward and recompute times). Times are
// milliseconds per step for people and nanoseconds for machines.
func RunDetailTables(recs []profiler.Record) []*Table {
	var out []*Table
	for i := range recs {
		out = append(out, runsDeviceTable(&recs[i]), runsBlockTable(&recs[i]))
	}
	return out
}

// runsName names a record in a detail table's title.
func runsName(r *profiler.Record) string {
	c := r.Config
	return fmt.Sprintf("%s, %s, K=%d, M=%d, batch %d (run %s)", ModelLabel(c), ScheduleLabel(c), c.Devices, c.Micro, c.Batch, r.ID)
}

// runsDeviceTable is the per-device table of one record.
func runsDeviceTable(r *profiler.Record) *Table {
	var busyMaps, peakMaps []map[string]int64
	for _, d := range r.Devices {
		busyMaps = append(busyMaps, d.BusyNanosByOp)
		peakMaps = append(peakMaps, d.PeakBytesByCategory)
	}
	ops := runsOrderedKeys(runsOpOrder, busyMaps...)
	cats := runsOrderedKeys(runsCategoryOrder, peakMaps...)
	t := &Table{
		Title: "Devices of " + runsName(r),
		Columns: []Column{
			{Key: "device", Header: "device", Align: AlignRight},
			{Key: "name", Header: "name", Show: Machines},
			{Key: "stage", Header: "stage", Align: AlignRight},
			{Key: "blocks", Header: "blocks"},
		},
	}
	for _, op := range ops {
		t.Columns = append(t.Columns, Column{Key: "busy_" + op + "_nanos", Header: op + " ms", Align: AlignRight})
	}
	t.Columns = append(t.Columns,
		Column{Key: "busy_nanos", Header: "busy ms", Align: AlignRight},
		Column{Key: "idle_nanos", Header: "idle ms", Align: AlignRight},
		Column{Key: "bubble_fraction", Header: "bubble", Align: AlignRight})
	for _, c := range cats {
		t.Columns = append(t.Columns, Column{Key: "peak_" + c + "_bytes", Header: c, Align: AlignRight})
	}
	t.Columns = append(t.Columns,
		Column{Key: "peak_bytes", Header: "peak", Align: AlignRight},
		Column{Key: "sent_bytes_per_step", Header: "sent/step", Align: AlignRight},
		Column{Key: "received_bytes_per_step", Header: "received/step", Align: AlignRight})
	for _, d := range r.Devices {
		row := []Cell{Int(int64(d.Index)), String(d.Name), Int(int64(d.Stage)), runsStageBlocks(r, d.Stage)}
		for _, op := range ops {
			if n, ok := d.BusyNanosByOp[op]; ok {
				row = append(row, runsMillisCell(n))
			} else {
				row = append(row, Empty("—"))
			}
		}
		bubble := Empty("—")
		if total := d.BusyNanos + d.IdleNanos; total > 0 {
			bubble = runsPercentCell(float64(d.IdleNanos) / float64(total))
		}
		row = append(row, runsMillisCell(d.BusyNanos), runsMillisCell(d.IdleNanos), bubble)
		for _, c := range cats {
			if n, ok := d.PeakBytesByCategory[c]; ok {
				row = append(row, Bytes(n))
			} else {
				row = append(row, Empty("—"))
			}
		}
		row = append(row, Bytes(d.PeakBytes), Bytes(d.SentBytesPerStep), Bytes(d.ReceivedBytesPerStep))
		t.Rows = append(t.Rows, row)
	}
	t.Footnotes = []string{"Times are means per measured step; bubble: idle ÷ (busy + idle); peaks are the largest over the steps."}
	return t
}

// runsStageBlocks names a stage's blocks as "first … last (n)", counting
// blocks from 1 as the models commands do; raw, the count.
func runsStageBlocks(r *profiler.Record, stage int) Cell {
	if stage < 0 || stage >= len(r.Partition) {
		return Empty("—")
	}
	s := r.Partition[stage]
	n := s.EndBlock - s.FirstBlock
	text := fmt.Sprintf("%d–%d", s.FirstBlock+1, s.EndBlock)
	if n == 1 {
		text = strconv.Itoa(s.EndBlock)
	}
	if len(s.Blocks) > 0 {
		first, last := s.Blocks[0], s.Blocks[len(s.Blocks)-1]
		if first == last {
			text = fmt.Sprintf("%s (%s)", first, text)
		} else {
			text = fmt.Sprintf("%s … %s (%s)", first, last, text)
		}
	}
	return Cell{Value: int64(n), Text: text}
}

// runsBlockTable is the per-block table of one record.
func runsBlockTable(r *profiler.Record) *Table {
	var predict bool
	for _, b := range r.Blocks {
		predict = predict || b.PredictNanos > 0
	}
	t := &Table{
		Title: "Blocks of " + runsName(r),
		Columns: []Column{
			{Key: "block", Header: "block", Align: AlignRight},
			{Key: "name", Header: "name"},
			{Key: "stage", Header: "stage", Align: AlignRight},
			{Key: "samples", Header: "samples", Align: AlignRight},
			{Key: "forward_nanos", Header: "forward ms", Align: AlignRight},
			{Key: "backward_nanos", Header: "backward ms", Align: AlignRight},
			{Key: "recompute_nanos", Header: "recompute ms", Align: AlignRight},
		},
	}
	if predict {
		t.Columns = append(t.Columns, Column{Key: "predict_nanos", Header: "predict ms", Align: AlignRight})
	}
	for _, b := range r.Blocks {
		recompute := Empty("—")
		if b.RecomputeNanos > 0 {
			recompute = runsMillisCell(b.RecomputeNanos)
		}
		row := []Cell{Int(int64(b.Block + 1)), String(b.Name), Int(int64(b.Stage)), Int(int64(b.Samples)),
			runsMillisCell(b.ForwardNanos), runsMillisCell(b.BackwardNanos), recompute}
		if predict {
			row = append(row, runsMillisCell(b.PredictNanos))
		}
		t.Rows = append(t.Rows, row)
	}
	note := "Times are per call (one micro-batch of the given samples), the median over the measured steps; blocks are numbered from 1."
	if len(r.Blocks) == 0 {
		note = "The run recorded no per-block times."
	}
	t.Footnotes = []string{strings.TrimSpace(note)}
	return t
}
