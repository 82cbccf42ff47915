package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/pipecast/pipecast/predictor"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/reports"
)

// predictValidateRun refits the data with each held-out group removed,
// or with --train fits on the training files and forecasts the data,
// and prints how well the forecasts match the held-out measurements.
func predictValidateRun(ctx context.Context, opts *PredictOptions) error {
	recs, err := readMeasured(opts.IO.ErrOut, opts.Data)
	if err != nil {
		return err
	}
	var v *predictor.Validation
	var title string
	fitFlag := "--data"
	if len(opts.Train) > 0 {
		fitFlag = "--train"
		var train []profiler.Record
		if train, err = readMeasured(opts.IO.ErrOut, opts.Train); err != nil {
			return err
		}
		v, err = predictor.ValidateSplit(ctx, train, recs, "--train "+strings.Join(opts.Train, ","))
		if err == nil {
			title = splitTitle(v, opts.Data, opts.Train, len(train))
		}
	} else {
		v, err = predictor.Validate(ctx, recs, opts.Holdout, opts.Seed)
		if err == nil {
			title = validationTitle(v, len(recs))
		}
	}
	switch {
	case errors.Is(err, predictor.ErrMixedHugePages):
		return &InputError{Err: fmt.Errorf("%s: %w", fitFlag, err)}
	case errors.Is(err, predictor.ErrNoneForecast):
		return &InputError{Err: err}
	case err != nil:
		return err
	}
	if opts.SVG != "" {
		if err := writeAtomically(opts.SVG, func(w io.Writer) error {
			return reports.WritePredictionSVG(w, "Held-out runs, holdout "+v.Holdout, validationSeries(v))
		}); err != nil {
			return err
		}
	}
	return renderValidation(opts.IO.Out, v, title, opts.Output, opts.Wide)
}

// validateTrain checks --train: it takes --validate, holds nothing out
// (so --holdout and --seed do not apply), and names files that can be
// read.
func (o *PredictOptions) validateTrain(flags *pflag.FlagSet) error {
	if !flags.Changed("train") {
		return nil
	}
	if !o.Validate {
		return usageErrorf("--train applies to --validate only")
	}
	for _, name := range []string{"holdout", "seed"} {
		if flags.Changed(name) {
			return usageErrorf("--%s does not apply to --train, which holds nothing out: it fits on --train and forecasts --data", name)
		}
	}
	if len(o.Train) == 0 {
		return usageErrorf("--train: need at least one RUNS.jsonl file to fit on")
	}
	return checkInputFiles("train", o.Train...)
}

// renderValidation writes the validation table titled title in format,
// then the table of each configuration's forecast (csv: the validation
// table alone), folded to a narrow terminal unless wide; json is one
// document of the rows, the configurations and what the tables'
// footnotes say.
func renderValidation(w io.Writer, v *predictor.Validation, title string, format Format, wide bool) error {
	t := validationTable(v, title)
	configs := configurationTable(v)
	switch format {
	case FormatJSON:
		doc := struct {
			Rows           []reports.Object    `json:"rows"`
			Configurations []reports.Object    `json:"configurations"`
			Winners        []predictor.Winner  `json:"winners"`
			Memory         predictor.MemoryRow `json:"memory"`
			Skipped        []string            `json:"skipped"`
			Interference   []string            `json:"interference"`
			Drift          []predictor.Drift   `json:"drift"`
		}{Rows: t.Objects(), Configurations: configs.Objects(), Winners: v.Winners, Memory: v.Memory,
			Skipped: v.Skipped, Interference: v.Interference, Drift: v.Drift}
		return writeJSON(w, doc)
	case FormatCSV:
		// One csv, one header: the per-configuration rows are json's.
		return renderTable(w, t, format, wide)
	}
	if err := renderTable(w, t, format, wide); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return renderTable(w, configs, format, wide)
}

// splitTitle says which runs of data were forecast from how many runs of
// train.
func splitTitle(v *predictor.Validation, data, train []string, trainRuns int) string {
	all := v.Rows[len(v.Rows)-1]
	return fmt.Sprintf("pipecast predict --validate: %d configurations (%d runs) of %s forecast from the %d measured runs of %s",
		all.N, max(all.Runs, all.N), strings.Join(data, ","), trainRuns, strings.Join(train, ","))
}

// validationTitle names what was held out of how many runs.
func validationTitle(v *predictor.Validation, measured int) string {
	holdout := v.Holdout
	if holdout == predictor.HoldoutRandom {
		holdout += fmt.Sprintf(" (seed %d)", v.Seed)
	}
	configs, runs := len(v.Pairs), len(v.Pairs)
	for _, r := range v.Rows {
		if r.Schedule == "all" {
			configs, runs = r.N, max(r.Runs, r.N)
		}
	}
	if runs == configs {
		return fmt.Sprintf("pipecast predict --validate: %d of %d measured runs held out by %s", runs, measured, holdout)
	}
	return fmt.Sprintf("pipecast predict --validate: %d configurations (%d runs) of %d measured runs held out by %s",
		configs, runs, measured, holdout)
}

// validationTable is one row per schedule and one over all held-out
// runs: errors of the forecasts and of the baseline, Kendall's τ and the
// measurements' noise; the winner check, the memory errors and the runs
// that could not be forecast follow as footnotes.
func validationTable(v *predictor.Validation, title string) *reports.Table {
	t := &reports.Table{
		Title: title,
		Columns: []reports.Column{
			{Key: "schedule", Header: "schedule"},
			{Key: "n", Header: "N", Align: reports.AlignRight},
			{Key: "mape", Header: "MAPE", Align: reports.AlignRight},
			{Key: "max_err", Header: "max error", Align: reports.AlignRight},
			{Key: "kendall_tau", Header: "Kendall τ", Align: reports.AlignRight},
			// On a narrow terminal the baseline goes first, then the
			// measurements' own spread, then their floor; the
			// forecast's errors stay.
			{Key: "noise", Header: "noise", Align: reports.AlignRight, Fold: 4},
			{Key: "run_spread", Header: "run spread", Align: reports.AlignRight, Fold: 3},
			{Key: "floor_n", Header: "floor N", Show: reports.Machines},
			{Key: "floor_mape", Header: "floor MAPE", Align: reports.AlignRight, Fold: 1},
			{Key: "floor_max", Header: "floor max", Align: reports.AlignRight, Fold: 2},
			{Key: "judged", Header: "judged", Show: reports.Machines},
			{Key: "outside", Header: "outside", Show: reports.Machines},
			{Key: "baseline_mape", Header: "baseline MAPE", Align: reports.AlignRight, Fold: 5},
			{Key: "baseline_max_err", Header: "baseline max", Align: reports.AlignRight, Fold: 6},
		},
	}
	for _, r := range v.Rows {
		tau := reports.Empty("—")
		if !math.IsNaN(r.KendallTau) {
			tau = reports.Float(r.KendallTau, 2)
		}
		t.Rows = append(t.Rows, []reports.Cell{
			reports.String(r.Schedule), reports.Int(int64(r.N)),
			percentCell(r.MAPE), percentCell(r.MaxErr), tau, percentCell(r.Noise), percentCell(r.RunSpread),
			reports.Int(int64(r.FloorN)), percentCell(r.FloorMAPE), percentCell(r.FloorMax),
			reports.Int(int64(r.Judged)), reports.Int(int64(r.Outside)),
			percentCell(r.BaselineMAPE), percentCell(r.BaselineMaxErr),
		})
	}
	t.Footnotes = []string{"N counts configurations; one measured by several runs is compared by the median of all their steps. " +
		"Errors are relative to that measured median step time; Kendall τ (τ-b) ranks forecasts against " +
		"measurements (1: the same order); noise: the median over the runs of their own steps' (max − min)/median; " +
		"run spread: the median over the configurations run more than once of their runs' median step times' (max − min)/median: " +
		"what measuring again could change; floor: over the configurations measured in two rounds or more, how far the median " +
		"step of their odd rounds misses that of their even rounds (mean and largest): the error of forecasting a configuration " +
		"by measuring it again; baseline: a regression of step time on configuration features."}
	if len(v.Winners) > 0 {
		agree, picked := 0, 0
		var wrong, ties []string
		for _, w := range v.Winners {
			at := fmt.Sprintf("%s K=%d M=%d batch %d", w.Key.Model, w.Devices, w.Micro, w.Batch)
			if w.Seq > 0 {
				at = fmt.Sprintf("%s K=%d M=%d batch %d seq %d", w.Key.Model, w.Devices, w.Micro, w.Batch, w.Seq)
			}
			switch {
			case w.Tie():
				ties = append(ties, at)
				continue
			case w.Agree:
				agree++
			default:
				wrong = append(wrong, fmt.Sprintf("%s (measured %s faster, forecast %s)", at, w.MeasuredFaster, w.PredictedFaster))
			}
			picked++
		}
		line := fmt.Sprintf("Winner, gpipe against coop: the forecasts pick the measured faster in %d of %d cases", agree, picked)
		if len(wrong) > 0 {
			line += "; not at " + strings.Join(wrong, ", ")
		}
		if len(ties) > 0 {
			line += "; where the forecasts tie (the same ops either way) they pick neither: " + strings.Join(ties, ", ")
		}
		t.Footnotes = append(t.Footnotes, line+".")
	}
	if m := v.Memory; m.N > 0 {
		t.Footnotes = append(t.Footnotes, fmt.Sprintf("Peak memory of the largest device over %d configurations: MAPE %.1f %%, max error %.1f %%; "+
			"largest error of any device %.1f %%.", m.N, 100*m.MAPE, 100*m.MaxErr, 100*m.DeviceMaxErr))
	}
	for _, s := range v.Interference {
		t.Footnotes = append(t.Footnotes, "Applied co-location "+s+" (measured by the single-device records).")
	}
	t.Footnotes = append(t.Footnotes, driftNotes(v.Drift)...)
	for _, s := range v.Skipped {
		t.Footnotes = append(t.Footnotes, "Not forecast: "+s+".")
	}
	return t
}

// percentCell holds a fraction, shown as a percentage: "4.2 %".
func percentCell(f float64) reports.Cell {
	if math.IsNaN(f) {
		return reports.Empty("—")
	}
	return reports.Cell{Value: f, Text: strconv.FormatFloat(100*f, 'f', 1, 64) + " %"}
}

// validationSeries are the forecasts of the held-out runs, one series per
// schedule, and the baseline's as one more.
func validationSeries(v *predictor.Validation) []reports.PredictionSeries {
	var series []reports.PredictionSeries
	index := map[string]int{}
	base := reports.PredictionSeries{Label: "baseline (all schedules)", Hollow: true}
	for _, p := range v.Pairs {
		name := p.Config.Schedule
		i, ok := index[name]
		if !ok {
			i = len(series)
			index[name] = i
			series = append(series, reports.PredictionSeries{Label: name})
		}
		series[i].Measured = append(series[i].Measured, p.Measured)
		series[i].Predicted = append(series[i].Predicted, p.Predicted)
		if p.Baseline > 0 {
			base.Measured = append(base.Measured, p.Measured)
			base.Predicted = append(base.Predicted, p.Baseline)
		}
	}
	return append(series, base)
}
