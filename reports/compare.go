package reports

import (
	"fmt"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

// CompareOptions tune CompareTable.
type CompareOptions struct {
	// NameA and NameB name the two datasets in the title and footnotes,
	// e.g. their file names; empty selects "A" and "B".
	NameA, NameB string
}

// compareKey is what makes two runs the same configuration in
// CompareTable: the workload, the schedule with its options, the
// pipeline shape, the threads and the backend.
type compareKey struct {
	model   string
	size    models.SizeRecord
	batch   int
	opts    schedule.RecordOptions
	threads string // ThreadsLabel: "2", or per device "2,1"
	backend string
}

func compareKeyOf(r *profiler.Record) compareKey {
	c := r.Config
	return compareKey{
		model: c.Model, size: c.SizeRecord, batch: c.Batch, opts: c.RecordOptions,
		threads: c.ThreadsLabel(), backend: r.Env.Backend,
	}
}

// compareRuns is the first run of each configuration of a dataset, in
// the order read, and how many later runs repeated one.
type compareRuns struct {
	order    []compareKey
	first    map[compareKey]*profiler.Record
	repeated int
}

func compareIndex(recs []profiler.Record) compareRuns {
	idx := compareRuns{first: map[compareKey]*profiler.Record{}}
	for i := range recs {
		k := compareKeyOf(&recs[i])
		if _, ok := idx.first[k]; ok {
			idx.repeated++
			continue
		}
		idx.order = append(idx.order, k)
		idx.first[k] = &recs[i]
	}
	return idx
}

// CompareTable puts the same configurations of two datasets side by side
// (same model, sizes, batch, schedule and its options, K, M, threads and
// backend): the median step time of each, B's over A's, and the largest
// device's peak bytes of each, B's over A's. The configurations both hold
// come first, in A's order; then those only A holds, then those only B
// holds, marked in the "only" column. A configuration run more than once
// in a dataset is compared by its first run. Machine formats carry raw
// values: nanoseconds, bytes, ratios.
func CompareTable(a, b []profiler.Record, opts CompareOptions) *Table {
	nameA, nameB := opts.NameA, opts.NameB
	if nameA == "" {
		nameA = "A"
	}
	if nameB == "" {
		nameB = "B"
	}
	ia, ib := compareIndex(a), compareIndex(b)
	shown := configShownOf(a, b)
	t := &Table{
		Title:   fmt.Sprintf("Compare A: %s (%d runs) with B: %s (%d runs)", nameA, len(a), nameB, len(b)),
		Columns: compareColumns(shown),
	}
	var onlyA, onlyB int
	for _, k := range ia.order {
		if rb, ok := ib.first[k]; ok {
			t.Rows = append(t.Rows, compareRow(ia.first[k], rb, "", shown))
		}
	}
	for _, k := range ia.order {
		if _, ok := ib.first[k]; !ok {
			t.Rows = append(t.Rows, compareRow(ia.first[k], nil, "A", shown))
			onlyA++
		}
	}
	for _, k := range ib.order {
		if _, ok := ia.first[k]; !ok {
			t.Rows = append(t.Rows, compareRow(nil, ib.first[k], "B", shown))
			onlyB++
		}
	}
	t.Footnotes = compareFootnotes(len(t.Rows)-onlyA-onlyB, onlyA, onlyB, ia.repeated+ib.repeated)
	return t
}

// compareColumns returns the columns of the comparison. On a narrow
// terminal (Table.Fit) the backend, threads and batch fold first, then
// the absolute peaks and step times; the configuration and the ratios
// stay. shown adds interleaved's virtual stages and the replicas.
func compareColumns(shown configShown) []Column {
	return append(configColumns(shown), []Column{
		{Key: "batch", Header: "batch", Align: AlignRight, Fold: 7},
		{Key: "threads", Header: "T", Align: AlignRight, Fold: 8},
		{Key: "backend", Header: "backend", Fold: 9},
		{Key: "step_nanos_a", Header: "step A", Align: AlignRight, Fold: 4},
		{Key: "step_nanos_b", Header: "step B", Align: AlignRight, Fold: 3},
		{Key: "step_ratio", Header: "step B/A", Align: AlignRight},
		{Key: "peak_bytes_a", Header: "peak A", Align: AlignRight, Fold: 6},
		{Key: "peak_bytes_b", Header: "peak B", Align: AlignRight, Fold: 5},
		{Key: "peak_ratio", Header: "peak B/A", Align: AlignRight},
		{Key: "only_in", Header: "only"},
	}...)
}

// compareRow returns the row of a configuration: ra and rb are its runs
// in A and B, one of them nil when only marks the dataset that holds it;
// shown is which optional configuration columns the table has.
func compareRow(ra, rb *profiler.Record, only string, shown configShown) []Cell {
	r := ra
	if r == nil {
		r = rb
	}
	c := r.Config
	onlyCell := Empty("")
	if only != "" {
		onlyCell = String(only)
	}
	stepA, stepB, stepRatio := compareSide(ra, rb, func(r *profiler.Record) int64 { return r.Summary.StepNanosMedian }, FormatNanos)
	peakA, peakB, peakRatio := compareSide(ra, rb, func(r *profiler.Record) int64 { return r.Summary.PeakBytesMax }, FormatBytes)
	return append(configCells(c, "", shown),
		Int(int64(c.Batch)), ThreadsCell(c),
		String(r.Env.Backend),
		stepA, stepB, stepRatio, peakA, peakB, peakRatio,
		onlyCell,
	)
}

// compareSide returns the cells of one quantity of ra and rb, shown with
// format, and B's over A's: "—" for a side that is missing, and a ratio
// "—" unless both are there and A's is positive.
func compareSide(ra, rb *profiler.Record, of func(*profiler.Record) int64, format func(int64) string) (a, b, ratio Cell) {
	a, b, ratio = Empty("—"), Empty("—"), Empty("—")
	if ra != nil {
		a = Cell{Value: of(ra), Text: format(of(ra))}
	}
	if rb != nil {
		b = Cell{Value: of(rb), Text: format(of(rb))}
	}
	if ra != nil && rb != nil && of(ra) > 0 {
		ratio = runsRatioCell(float64(of(rb)) / float64(of(ra)))
	}
	return a, b, ratio
}

// compareFootnotes explain the columns and count the configurations
// compared, those only one dataset holds, and the repeated runs left out.
func compareFootnotes(both, onlyA, onlyB, repeated int) []string {
	notes := []string{
		"step: median wall time of the measured steps; peak: the largest device's peak bytes; " +
			"B/A: B's over A's (below 1: B is faster, or needs less memory); — where a dataset lacks the configuration.",
		fmt.Sprintf("%d configurations in both; %d only in A, %d only in B (listed last, marked in \"only\"). "+
			"A configuration is the model, sizes, batch, schedule and its options, K, M, threads and backend.", both, onlyA, onlyB),
	}
	if repeated > 0 {
		notes = append(notes, fmt.Sprintf("%d repeated run(s) left out: a configuration run more than once in a dataset is compared by its first run.", repeated))
	}
	return notes
}
