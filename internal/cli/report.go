package cli

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/reports"
)

// ReportOptions is what the report command needs.
type ReportOptions struct {
	IO     *IOStreams
	Output Format
	Wide   bool // --wide: every column, however narrow the terminal
	Files  []string
	// Compare puts the two Files side by side, configuration by
	// configuration, instead of listing their runs.
	Compare bool

	// The filters keep the records that match one value of every list
	// given; an empty list keeps all.
	Models    []string
	Schedules []string
	Devices   []int
	Micro     []int

	Detail   bool
	Pprof    string // pprof profile of the records
	Trace    string // Chrome trace of the records
	SVG      string // timelines of the runs, one band each (see timelineRecords)
	SVGChart string // chart comparing the records
	// SVGMemory is the live memory of the first record's tracked step.
	SVGMemory string
}

// errNoRecords is returned when no record is left to report.
var errNoRecords = errors.New("no records to report")

// NewCmdReport returns the report command. runF, when not nil, runs
// instead of the real work.
func NewCmdReport(streams *IOStreams, runF func(*ReportOptions) error) *cobra.Command {
	opts := &ReportOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "report RUNS.jsonl [more.jsonl ...]",
		Short: "Compare recorded runs and export them as pprof, Chrome trace or SVG",
		Long: `Read run records (the runs.jsonl that pipecast profile --out writes) and
print the table pipecast profile prints: one row per run, compared with the
GPipe run of the same workload. --detail adds, for every run, a table of
its devices (busy time by op, idle time, bubble, peak memory by category,
bytes sent and received) and one of its blocks (forward, backward and
recompute times).

A line that holds no valid record, such as the truncated last line an
interrupted sweep leaves, is reported on standard error as FILE:LINE and
skipped. The filters keep the runs that match; when none is left, report
says so and exits with status 1.

--pprof, --trace, --svg and --svg-chart write the records as a pprof
profile (go tool pprof), a Chrome trace (chrome://tracing, Perfetto), SVG
timelines and an SVG chart comparing all runs.

--svg draws one step of each run, one band per run stacked on one time
axis, so that a faster schedule's band ends visibly earlier. The step
drawn is the one whose time is nearest the run's median step time. With a
filter (--model, --schedule, --devices, --microbatches) it draws every run
the filters keep; without one, every schedule of the first record's
workload: the runs with its model, image size, width, batch, K and M. At
most 8 runs are drawn, the first 8 in the order read; standard error says
how many were left out, and runs recorded without events.

--svg-memory draws the first run the filters keep: each device's live
bytes, stacked by category, over its first measured step on that step's
time axis, its peak marked with the op running and what the peak is made
of. A run without a memory track (a predicted one, or one recorded by an
older pipecast) is bad input: report says so and exits with status 2.

--compare takes exactly two datasets, A and B (say, before and after a
change, or measured and predicted), and prints the configurations they
share side by side: the step time in each, B's over A's, the peak memory
in each, B's over A's; the configurations only one of them holds follow,
marked. The filters apply to both. It prints one table, so it does not
take --detail, --pprof, --trace, --svg or --svg-chart: run report on each
file for those.

On a terminal too narrow for a table, the table format folds its least
telling columns and says which; --wide prints them all.`,
		Example: `  pipecast report runs/runs.jsonl
  pipecast report runs/runs.jsonl --schedule gpipe,coop --devices 2 --detail
  pipecast report runs/runs.jsonl --output csv > runs.csv
  pipecast report --compare before/runs.jsonl after/runs.jsonl --devices 4
  pipecast report runs/runs.jsonl --trace trace.json --svg timeline.svg --svg-chart chart.svg`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("%q needs at least one RUNS.jsonl file", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Files = args
			if opts.Detail && opts.Output == FormatCSV {
				return usageErrorf("--detail prints several tables, which csv cannot hold: use table, markdown or json")
			}
			if err := opts.checkCompare(); err != nil {
				return err
			}
			if err := checkOutputFiles("pprof", opts.Pprof, "trace", opts.Trace, "svg", opts.SVG,
				"svg-chart", opts.SVGChart, "svg-memory", opts.SVGMemory); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return reportRun(opts)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&opts.Models, "model", nil, "keep runs of these models")
	f.StringSliceVar(&opts.Schedules, "schedule", nil, "keep runs of these schedules")
	f.IntSliceVar(&opts.Devices, "devices", nil, "keep runs on these numbers of devices")
	f.IntSliceVar(&opts.Micro, "microbatches", nil, "keep runs with these numbers of micro-batches")
	f.BoolVar(&opts.Detail, "detail", false, "add per-device and per-block tables of every run")
	f.StringVar(&opts.Pprof, "pprof", "", "write a pprof profile of the runs to this file (.pb.gz)")
	f.StringVar(&opts.Trace, "trace", "", "write a Chrome trace of the runs to this file (.json)")
	f.StringVar(&opts.SVG, "svg", "", "write SVG timelines of the runs to this file, one band per run (default: every schedule of the first run's workload)")
	f.StringVar(&opts.SVGChart, "svg-chart", "", "write an SVG chart comparing the runs to this file")
	f.StringVar(&opts.SVGMemory, "svg-memory", "", "write an SVG of the first run's live memory by category over its first measured step, per device, to this file")
	f.BoolVar(&opts.Compare, "compare", false, "compare two datasets, A.jsonl B.jsonl, configuration by configuration (one table; no --detail or exports)")
	addTableFlags(cmd, &opts.Output, &opts.Wide)
	return cmd
}

func reportRun(opts *ReportOptions) error {
	if opts.Compare {
		return reportCompareRun(opts)
	}
	var all []profiler.Record
	for _, path := range opts.Files {
		recs, err := readRecords(opts.IO.ErrOut, path)
		if err != nil {
			return err // it names the file
		}
		all = append(all, recs...)
	}
	if len(all) == 0 {
		return &InputError{Err: fmt.Errorf("%w: %s holds no valid record", errNoRecords, strings.Join(opts.Files, ", "))}
	}
	recs := opts.filter(all)
	if len(recs) == 0 {
		return &InputError{Err: fmt.Errorf("%w: none of the %d records matches the filters", errNoRecords, len(all))}
	}
	if opts.SVGMemory != "" {
		// The first run the filters keep; one without a memory track is
		// an input that cannot serve, found before any other file is
		// written.
		err := writeAtomically(opts.SVGMemory, func(w io.Writer) error { return reports.WriteMemorySVG(w, recs[0]) })
		if errors.Is(err, reports.ErrNoMemoryTrack) {
			return &InputError{Err: fmt.Errorf("--svg-memory: %w", err)}
		}
		if err != nil {
			return err
		}
	}
	if err := writeExports(opts.Trace, opts.Pprof, recs); err != nil {
		return err
	}
	if opts.SVG != "" {
		if err := writeTimelines(opts.IO.ErrOut, opts.SVG, opts.timelineRecords(recs)); err != nil {
			return err
		}
	}
	if opts.SVGChart != "" {
		if err := writeAtomically(opts.SVGChart, func(w io.Writer) error { return reports.WriteChartSVG(w, recs) }); err != nil {
			return err
		}
	}
	names := make([]string, len(opts.Files))
	for i, f := range opts.Files {
		names[i] = filepath.Base(f)
	}
	title := fmt.Sprintf("%d runs from %s", len(recs), strings.Join(names, ", "))
	t := reports.RunsTable(recs, reports.RunsTableOptions{Title: title})
	if !opts.Detail {
		return renderTable(opts.IO.Out, t, opts.Output, opts.Wide)
	}
	details := reports.RunDetailTables(recs)
	if opts.Output == FormatJSON {
		// One json document: the runs, then each run's two tables.
		type detail struct {
			ID      string           `json:"id"`
			Devices []reports.Object `json:"devices"`
			Blocks  []reports.Object `json:"blocks"`
		}
		doc := struct {
			Runs    []reports.Object `json:"runs"`
			Details []detail         `json:"details"`
		}{Runs: t.Objects()}
		for i := range recs {
			doc.Details = append(doc.Details, detail{ID: recs[i].ID, Devices: details[2*i].Objects(), Blocks: details[2*i+1].Objects()})
		}
		return writeJSON(opts.IO.Out, doc)
	}
	if err := renderTable(opts.IO.Out, t, opts.Output, opts.Wide); err != nil {
		return err
	}
	for _, d := range details {
		fmt.Fprintln(opts.IO.Out)
		if err := renderTable(opts.IO.Out, d, opts.Output, opts.Wide); err != nil {
			return err
		}
	}
	return nil
}

// filter returns the records that pass every filter.
func (o *ReportOptions) filter(recs []profiler.Record) []profiler.Record {
	var out []profiler.Record
	for _, r := range recs {
		c := r.Config
		if (len(o.Models) == 0 || slices.Contains(o.Models, c.Model)) &&
			(len(o.Schedules) == 0 || slices.Contains(o.Schedules, c.Schedule)) &&
			(len(o.Devices) == 0 || slices.Contains(o.Devices, c.Devices)) &&
			(len(o.Micro) == 0 || slices.Contains(o.Micro, c.Micro)) {
			out = append(out, r)
		}
	}
	return out
}

// maxTimelineBands is the most runs --svg draws: more bands than this
// are too thin to compare at a glance.
const maxTimelineBands = 8

// timelineRecords returns the records --svg draws: all of recs when a
// filter was given, else those of the first record's workload (model,
// size, batch, K, M), whatever their schedule.
func (o *ReportOptions) timelineRecords(recs []profiler.Record) []profiler.Record {
	if len(o.Models)+len(o.Schedules)+len(o.Devices)+len(o.Micro) > 0 {
		return recs
	}
	first := recs[0].Config
	var out []profiler.Record
	for _, r := range recs {
		c := r.Config
		if c.Model == first.Model && c.SizeRecord == first.SizeRecord &&
			c.Batch == first.Batch && c.Devices == first.Devices && c.Micro == first.Micro {
			out = append(out, r)
		}
	}
	return out
}

// writeTimelines writes the timelines of recs, the step nearest each
// run's median, to path; on errOut it names the runs without events and
// says how many runs past maxTimelineBands were left out.
func writeTimelines(errOut io.Writer, path string, recs []profiler.Record) error {
	var runs []reports.TimelineRun
	for _, r := range recs {
		step, ok := reports.MedianStep(r)
		if !ok {
			fmt.Fprintf(errOut, "pipecast: --svg: run %s has no events to draw (left out)\n", r.ID)
			continue
		}
		runs = append(runs, reports.TimelineRun{Record: r, Step: step})
	}
	if len(runs) == 0 {
		return fmt.Errorf("write %s: none of the %d runs has events to draw", path, len(recs))
	}
	if n := len(runs); n > maxTimelineBands {
		fmt.Fprintf(errOut, "pipecast: --svg: drew %d of %d runs, %d left out (choose with --schedule, --devices or --microbatches)\n",
			maxTimelineBands, n, n-maxTimelineBands)
		runs = runs[:maxTimelineBands]
	}
	return writeAtomically(path, func(w io.Writer) error { return reports.WriteTimelinesSVG(w, runs) })
}

// checkCompare rejects what --compare cannot do: other than two files,
// or the flags that need the runs one by one.
func (o *ReportOptions) checkCompare() error {
	if !o.Compare {
		return nil
	}
	if len(o.Files) != 2 {
		return usageErrorf("--compare takes exactly two RUNS.jsonl files, A and B; got %d", len(o.Files))
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"--detail", o.Detail}, {"--pprof", o.Pprof != ""}, {"--trace", o.Trace != ""}, {"--svg", o.SVG != ""}, {"--svg-chart", o.SVGChart != ""}, {"--svg-memory", o.SVGMemory != ""}} {
		if f.set {
			return usageErrorf("--compare prints one table of the two datasets and does not take %s: run report on each file for it", f.name)
		}
	}
	return nil
}

// reportCompareRun prints the comparison of the two files, each read
// and filtered on its own.
func reportCompareRun(opts *ReportOptions) error {
	var sides [2][]profiler.Record
	for i, path := range opts.Files {
		recs, err := readRecords(opts.IO.ErrOut, path)
		if err != nil {
			return err // it names the file
		}
		if len(recs) == 0 {
			return &InputError{Err: fmt.Errorf("%w: %s holds no valid record", errNoRecords, path)}
		}
		sides[i] = opts.filter(recs)
	}
	if len(sides[0])+len(sides[1]) == 0 {
		return &InputError{Err: fmt.Errorf("%w: no record of %s matches the filters", errNoRecords, strings.Join(opts.Files, " or "))}
	}
	nameA, nameB := filepath.Base(opts.Files[0]), filepath.Base(opts.Files[1])
	if nameA == nameB {
		nameA, nameB = opts.Files[0], opts.Files[1]
	}
	t := reports.CompareTable(sides[0], sides[1], reports.CompareOptions{NameA: nameA, NameB: nameB})
	return renderTable(opts.IO.Out, t, opts.Output, opts.Wide)
}
