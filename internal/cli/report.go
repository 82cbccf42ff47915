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
	Files  []string

	// The filters keep the records that match one value of every list
	// given; an empty list keeps all.
	Models    []string
	Schedules []string
	Devices   []int
	Micro     []int

	Detail   bool
	Pprof    string // pprof profile of the records
	Trace    string // Chrome trace of the records
	SVG      string // timeline of the first record's first measured step
	SVGChart string // chart comparing the records
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
profile (go tool pprof), a Chrome trace (chrome://tracing, Perfetto), an
SVG timeline of the first measured step of the first run and an SVG chart
comparing all runs.`,
		Example: `  pipecast report runs/runs.jsonl
  pipecast report runs/runs.jsonl --schedule gpipe,coop --devices 2 --detail
  pipecast report runs/runs.jsonl --output csv > runs.csv
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
	f.StringVar(&opts.SVG, "svg", "", "write an SVG timeline of the first run's first measured step to this file")
	f.StringVar(&opts.SVGChart, "svg-chart", "", "write an SVG chart comparing the runs to this file")
	addOutputFlag(cmd, &opts.Output, tableFormats...)
	return cmd
}

func reportRun(opts *ReportOptions) error {
	var all []profiler.Record
	for _, path := range opts.Files {
		recs, bad, err := profiler.ReadFile(path, profiler.ReadOptions{SkipBad: true})
		for _, le := range bad {
			fmt.Fprintf(opts.IO.ErrOut, "pipecast: %v (skipped)\n", &le)
		}
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
	if err := writeExports(opts.Trace, opts.Pprof, recs); err != nil {
		return err
	}
	if opts.SVG != "" {
		first := recs[0]
		if len(first.Steps) == 0 {
			return fmt.Errorf("write %s: run %s has no measured step", opts.SVG, first.ID)
		}
		step := first.Steps[0].Step
		if err := writeAtomically(opts.SVG, func(w io.Writer) error { return reports.WriteTimelineSVG(w, first, step) }); err != nil {
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
		return reports.Render(opts.IO.Out, t, reports.Format(opts.Output))
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
	if err := reports.Render(opts.IO.Out, t, reports.Format(opts.Output)); err != nil {
		return err
	}
	for _, d := range details {
		fmt.Fprintln(opts.IO.Out)
		if err := reports.Render(opts.IO.Out, d, reports.Format(opts.Output)); err != nil {
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
