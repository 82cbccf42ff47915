package reports

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// PlanEntry is one configuration of a plan as the plan table shows it.
type PlanEntry struct {
	// Schedule is the schedule's name; Options its options ("except-last",
	// "d=1"), "" for none.
	Schedule, Options string
	Micro             int
	// Replicas and Devices are R and K: the plan of a job's devices
	// (PlanTableOptions.Replicas) splits them into R replicas of K.
	Replicas, Devices int
	// PeakBytes is the largest device's peak, PeakDevice that device and
	// TopCategory the memory category holding the most of it.
	PeakBytes   int64
	PeakDevice  int
	TopCategory string
	// Timed says whether the forecast figures hold a forecast.
	Timed     bool
	StepNanos int64
	// StepRelErr is the forecast step time's relative 1-σ uncertainty
	// (predictor.CostModel.RelErr), 0 for none.
	StepRelErr float64
	// Extrapolated marks a forecast at a micro-batch size outside the
	// range the fitted runs measured.
	Extrapolated bool
	// MeasuredNanos is the median step of the MeasuredRuns runs of the
	// entry's configuration that the data holds (0 and 0: none).
	MeasuredNanos    int64
	MeasuredRuns     int
	BubbleFraction   float64
	SamplesPerSecond float64
	// Rank is the entry's place among those within the budget (1: the
	// best); OverBudget marks one above it, which has no rank.
	Rank       int
	OverBudget bool
	// Partition is the split the entry's memory was replayed at, as
	// blocks per stage ("5,8,8,9"), "" where unknown; MemorySplit marks
	// a split chosen for memory instead of the one the balance gives.
	Partition   string
	MemorySplit bool
}

// PlanTableOptions are a plan table's title and what its rows rest on.
type PlanTableOptions struct {
	Title string
	// Timed shows the forecast columns; BudgetBytes, when positive, is
	// the memory budget per device.
	Timed       bool
	BudgetBytes int64
	// Replicas shows each entry's R and K: a plan of a job's devices
	// split every way into replicas of a pipeline.
	Replicas bool
	// Footnotes are added after the table's own.
	Footnotes []string
}

// PlanTable returns the table of a plan's entries, in their order. On a
// narrow terminal (Table.Fit) the partition folds first, then the
// samples/s, the top category, the bubble and the options; schedule, M,
// peak, step, rank and budget stay.
func PlanTable(entries []PlanEntry, opts PlanTableOptions) *Table {
	cols := []Column{
		{Key: "schedule", Header: "schedule"},
		{Key: "options", Header: "options", Fold: 2},
		{Key: "microbatches", Header: "M", Align: AlignRight},
		{Key: "partition", Header: "partition", Fold: 7},
		{Key: "memory_split", Header: "memory split", Show: Machines},
		{Key: "peak_bytes_max", Header: "peak/device", Align: AlignRight},
		{Key: "peak_device", Header: "device", Show: Machines},
		{Key: "top_category", Header: "top category", Fold: 4},
	}
	if opts.Replicas {
		cols = slices.Insert(cols, 1,
			Column{Key: "replicas", Header: "R", Align: AlignRight},
			Column{Key: "devices", Header: "K", Align: AlignRight})
	}
	if opts.Timed {
		measured := Column{Key: "measured_step_nanos", Header: "measured", Align: AlignRight, Fold: 6}
		if !planMeasured(entries) {
			measured.Show = Machines // a column of dashes says nothing on a terminal
		}
		cols = append(cols,
			Column{Key: "step_nanos", Header: "step", Align: AlignRight},
			Column{Key: "step_rel_err", Header: "± step", Align: AlignRight, Show: Machines},
			Column{Key: "extrapolated", Header: "extrapolated", Show: Machines},
			measured,
			Column{Key: "measured_runs", Header: "runs", Align: AlignRight, Show: Machines},
			Column{Key: "bubble_fraction", Header: "bubble", Align: AlignRight, Fold: 3},
			Column{Key: "samples_per_second", Header: "samples/s", Align: AlignRight, Fold: 5})
	}
	cols = append(cols,
		Column{Key: "rank", Header: "rank", Align: AlignRight},
		Column{Key: "over_budget", Header: "budget"})
	t := &Table{Title: opts.Title, Columns: cols}
	for _, e := range entries {
		t.Rows = append(t.Rows, planRow(e, opts))
	}
	t.Footnotes = append(planFootnotes(entries, opts), opts.Footnotes...)
	return t
}

// planRow is the row of e in the columns of PlanTable.
func planRow(e PlanEntry, opts PlanTableOptions) []Cell {
	options := String(e.Options)
	if e.Options == "" {
		options = Cell{Value: "", Text: "—"}
	}
	partition := Cell{Value: e.Partition, Text: e.Partition}
	switch {
	case e.Partition == "":
		partition.Text = "—"
	case e.MemorySplit:
		partition.Text += " *"
	}
	row := []Cell{String(e.Schedule), options, Int(int64(e.Micro)), partition,
		Cell{Value: e.MemorySplit, Text: strconv.FormatBool(e.MemorySplit)}, Bytes(e.PeakBytes),
		Int(int64(e.PeakDevice)), String(e.TopCategory)}
	if opts.Replicas {
		row = slices.Insert(row, 1, Int(int64(e.Replicas)), Int(int64(e.Devices)))
	}
	if opts.Timed {
		row = append(row, Cell{Value: e.StepNanos, Text: FormatNanos(e.StepNanos)}, relErrCell(e.StepRelErr),
			Cell{Value: e.Extrapolated, Text: strconv.FormatBool(e.Extrapolated)}, measuredCell(e),
			Int(int64(e.MeasuredRuns)),
			runsPercentCell(e.BubbleFraction), Float(e.SamplesPerSecond, 1))
	}
	rank, budget := Int(int64(e.Rank)), Cell{Value: false, Text: "ok"}
	switch {
	case e.OverBudget:
		rank, budget = Cell{Text: "—"}, Cell{Value: true, Text: "over budget"}
	case opts.BudgetBytes <= 0:
		budget = Cell{Value: false, Text: "—"}
	}
	return append(row, rank, budget)
}

// planMeasured says whether the data measured any entry.
func planMeasured(entries []PlanEntry) bool {
	return slices.ContainsFunc(entries, func(e PlanEntry) bool { return e.MeasuredRuns > 0 })
}

// measuredCell shows an entry's measured step, "—" for none.
func measuredCell(e PlanEntry) Cell {
	if e.MeasuredRuns == 0 {
		return Cell{Value: nil, Text: "—"}
	}
	return Cell{Value: e.MeasuredNanos, Text: FormatNanos(e.MeasuredNanos)}
}

// relErrCell shows a relative uncertainty as "±3.9 %", "—" for none.
func relErrCell(f float64) Cell {
	if f <= 0 {
		return Cell{Value: 0.0, Text: "—"}
	}
	return Cell{Value: f, Text: "±" + strconv.FormatFloat(100*f, 'f', 1, 64) + " %"}
}

// planRelErr is the step-time uncertainty the entries' forecasts share
// (one cost model forecasts them all), 0 for none.
func planRelErr(entries []PlanEntry) float64 {
	for _, e := range entries {
		if e.Timed && e.StepRelErr > 0 {
			return e.StepRelErr
		}
	}
	return 0
}

// planFootnotes say what the columns mean and how the rows are ranked.
func planFootnotes(entries []PlanEntry, opts PlanTableOptions) []string {
	notes := []string{"peak/device: the largest device's peak bytes in a training step, exact from the runner's " +
		"memory accounting on the meta backend; top category: what holds the most of it."}
	if opts.Timed {
		band := ""
		if f := planRelErr(entries); f > 0 {
			band = " (step " + relErrCell(f).Text + ", 1 σ, from the fits' residuals and the runs' noise)"
		}
		notes = append(notes, "step, bubble, samples/s: forecast from the costs fitted to --data, as pipecast predict does"+
			band+"; rank: by forecast step time.")
	} else {
		notes = append(notes, "rank: by peak memory (give --data RUNS.jsonl to forecast and rank by step time).")
	}
	if opts.Timed && planMeasured(entries) {
		notes = append(notes, "measured: the median step of the runs of that configuration the data holds, beside its forecast; "+
			"the ranking stays by forecast, so that every configuration is weighed alike.")
	}
	if opts.BudgetBytes > 0 {
		notes = append(notes, "budget: "+FormatBytes(opts.BudgetBytes)+" per device; over budget: not ranked.")
	}
	if slices.ContainsFunc(entries, func(e PlanEntry) bool { return e.MemorySplit }) {
		notes = append(notes, "partition: the blocks of each stage; * a split chosen for memory, uneven where the first or "+
			"last stages hold more than their layers (micro-batches in flight, an embedding, an LM head): "+planSplitAim(opts)+".")
	}
	return notes
}

// planSplitAim says what a plan's memory splits aim at.
func planSplitAim(opts PlanTableOptions) string {
	if opts.BudgetBytes > 0 {
		return "where the balanced split is over budget, the most even compute within it, else the lightest split"
	}
	return "the lightest split, since the plan ranks by peak memory"
}

// planExtrapolated warns when the best entry's forecast is extrapolated.
func planExtrapolated(e PlanEntry) string {
	if !e.Extrapolated {
		return ""
	}
	return " Its micro-batch size lies outside those the runs measured, so its forecast is extrapolated."
}

// planMaxTies is how many runners-up the verdict names as not told apart
// from the fastest.
const planMaxTies = 3

// planTies names the ranked entries whose forecast step lies within the
// forecast's 1-σ uncertainty of best's, in rank order: the forecast does
// not tell them apart from the fastest, so measuring them is what
// decides. It is "" when there are none or no uncertainty is known.
func planTies(entries []PlanEntry, best PlanEntry) string {
	f := best.StepRelErr
	if f <= 0 {
		return ""
	}
	var ties []PlanEntry
	for _, e := range entries {
		if e.Rank > 1 && !e.OverBudget && e.Timed && float64(e.StepNanos) <= float64(best.StepNanos)*(1+f) {
			ties = append(ties, e)
		}
	}
	if len(ties) == 0 {
		return ""
	}
	slices.SortStableFunc(ties, func(a, b PlanEntry) int { return a.Rank - b.Rank })
	var names []string
	for _, e := range ties[:min(len(ties), planMaxTies)] {
		names = append(names, planLabel(e)+" ("+FormatNanos(e.StepNanos)+")")
	}
	if n := len(ties) - planMaxTies; n > 0 {
		names = append(names, fmt.Sprintf("%d more", n))
	}
	return fmt.Sprintf(" Within the forecast's %s (1 σ) of it, so not told apart: %s.",
		relErrCell(f).Text, JoinAnd(names))
}

// JoinAnd joins names as "a, b and c".
func JoinAnd(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// PlanVerdict is the line that names the plan's best entry (rank 1) with
// its numbers, or says that none fits the budget.
func PlanVerdict(entries []PlanEntry, opts PlanTableOptions) string {
	for _, e := range entries {
		if e.Rank != 1 {
			continue
		}
		name := e.Schedule
		if e.Options != "" {
			name += " (" + e.Options + ")"
		}
		if opts.Replicas {
			name = fmt.Sprintf("%s, R=%d × K=%d", name, e.Replicas, e.Devices)
		}
		if opts.Timed {
			return fmt.Sprintf("Fastest: %s with M=%d%s, %s a step (%s samples/s, bubble %s), peak %s per device.",
				name, e.Micro, planSplit(e), FormatNanos(e.StepNanos), strconv.FormatFloat(e.SamplesPerSecond, 'f', 1, 64),
				runsPercentCell(e.BubbleFraction).Text, FormatBytes(e.PeakBytes)) + planExtrapolated(e) + planTies(entries, e)
		}
		return fmt.Sprintf("Lightest: %s with M=%d%s, peak %s per device (device %d, mostly %s).",
			name, e.Micro, planSplit(e), FormatBytes(e.PeakBytes), e.PeakDevice, e.TopCategory)
	}
	if opts.BudgetBytes > 0 {
		return "No configuration fits the budget of " + FormatBytes(opts.BudgetBytes) +
			" per device: use more devices, a smaller batch or a smaller model."
	}
	return "No configuration to rank."
}

// planSplit names an entry's split in the verdict where it was chosen
// for memory: " split 3,2,2,3 for memory".
func planSplit(e PlanEntry) string {
	if !e.MemorySplit || e.Partition == "" {
		return ""
	}
	return " split " + e.Partition + " for memory"
}
