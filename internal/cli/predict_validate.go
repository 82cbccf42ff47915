package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/pipecast/pipecast/predictor"
	"github.com/pipecast/pipecast/reports"
)

// predictValidateRun refits the data with each held-out group removed and
// prints how well the forecasts match the held-out measurements.
func predictValidateRun(ctx context.Context, opts *PredictOptions) error {
	recs, err := readMeasured(opts.IO.ErrOut, opts.Data)
	if err != nil {
		return err
	}
	v, err := predictor.Validate(ctx, recs, opts.Holdout, opts.Seed)
	if errors.Is(err, predictor.ErrMixedHugePages) {
		return &InputError{Err: fmt.Errorf("--data: %w", err)}
	}
	if err != nil {
		return err
	}
	if opts.SVG != "" {
		if err := writeAtomically(opts.SVG, func(w io.Writer) error {
			return reports.WritePredictionSVG(w, "Held-out runs, holdout "+v.Holdout, validationSeries(v))
		}); err != nil {
			return err
		}
	}
	return renderValidation(opts.IO.Out, v, len(recs), opts.Output, opts.Wide)
}

// renderValidation writes the validation table in format, folded to a
// narrow terminal unless wide; json is one document of the rows and what
// the table's footnotes say.
func renderValidation(w io.Writer, v *predictor.Validation, measured int, format Format, wide bool) error {
	t := validationTable(v, measured)
	if format != FormatJSON {
		return renderTable(w, t, format, wide)
	}
	doc := struct {
		Rows         []reports.Object    `json:"rows"`
		Winners      []predictor.Winner  `json:"winners"`
		Memory       predictor.MemoryRow `json:"memory"`
		Skipped      []string            `json:"skipped"`
		Interference []string            `json:"interference"`
	}{Rows: t.Objects(), Winners: v.Winners, Memory: v.Memory, Skipped: v.Skipped, Interference: v.Interference}
	return writeJSON(w, doc)
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
func validationTable(v *predictor.Validation, measured int) *reports.Table {
	t := &reports.Table{
		Title: validationTitle(v, measured),
		Columns: []reports.Column{
			{Key: "schedule", Header: "schedule"},
			{Key: "n", Header: "N", Align: reports.AlignRight},
			{Key: "mape", Header: "MAPE", Align: reports.AlignRight},
			{Key: "max_err", Header: "max error", Align: reports.AlignRight},
			{Key: "kendall_tau", Header: "Kendall τ", Align: reports.AlignRight},
			// On a narrow terminal the baseline goes first, then the
			// measurements' own spread; the forecast's errors stay.
			{Key: "noise", Header: "noise", Align: reports.AlignRight, Fold: 2},
			{Key: "run_spread", Header: "run spread", Align: reports.AlignRight, Fold: 1},
			{Key: "baseline_mape", Header: "baseline MAPE", Align: reports.AlignRight, Fold: 3},
			{Key: "baseline_max_err", Header: "baseline max", Align: reports.AlignRight, Fold: 4},
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
			percentCell(r.BaselineMAPE), percentCell(r.BaselineMaxErr),
		})
	}
	t.Footnotes = []string{"N counts configurations; one measured by several runs is compared by the median of all their steps. " +
		"Errors are relative to that measured median step time; Kendall τ (τ-b) ranks forecasts against " +
		"measurements (1: the same order); noise: the median over the runs of their own steps' (max − min)/median; " +
		"run spread: the median over the configurations run more than once of their runs' median step times' (max − min)/median: " +
		"what measuring again could change; baseline: a regression of step time on configuration features."}
	if len(v.Winners) > 0 {
		agree, picked := 0, 0
		var wrong, ties []string
		for _, w := range v.Winners {
			at := fmt.Sprintf("%s K=%d M=%d batch %d", w.Key.Model, w.Devices, w.Micro, w.Batch)
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
