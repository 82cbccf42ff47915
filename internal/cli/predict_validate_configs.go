package cli

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/pipecast/pipecast/predictor"
	"github.com/pipecast/pipecast/reports"
	"github.com/pipecast/pipecast/schedule"
)

// configurationTable is one row per held-out configuration: its
// measured median step beside the range of its rounds' medians, the
// forecast and its error, and whether the forecast lies outside that
// range. Rows go by model, schedule (in schedule.Names order), K, M and
// batch.
func configurationTable(v *predictor.Validation) *reports.Table {
	t := &reports.Table{
		Title: "Per configuration: forecast against the median of its measured steps",
		Columns: []reports.Column{
			{Key: "model", Header: "model"},
			{Key: "schedule", Header: "schedule", ShortNote: schedule.ShortLabelNote},
			{Key: "devices", Header: "K", Align: reports.AlignRight},
			{Key: "microbatches", Header: "M", Align: reports.AlignRight},
			{Key: "micro_batch_size", Header: "m", Align: reports.AlignRight},
			{Key: "fold", Header: "fold", Show: reports.Machines},
			{Key: "rounds", Header: "rounds", Align: reports.AlignRight, Fold: 1},
			{Key: "measured_nanos", Header: "measured (ms)", Align: reports.AlignRight},
			{Key: "round_spread", Header: "± round spread", Align: reports.AlignRight, Show: reports.People},
			{Key: "round_min_nanos", Header: "round min", Show: reports.Machines},
			{Key: "round_max_nanos", Header: "round max", Show: reports.Machines},
			{Key: "predicted_nanos", Header: "forecast (ms)", Align: reports.AlignRight},
			{Key: "err", Header: "error", Align: reports.AlignRight},
			{Key: "floor", Header: "floor", Show: reports.Machines},
			{Key: "outside", Header: "outside"},
		},
	}
	ps := slices.Clone(v.Pairs)
	replicas := slices.ContainsFunc(ps, func(p predictor.Pair) bool { return p.Config.Replicas > 1 })
	if replicas {
		at := slices.IndexFunc(t.Columns, func(c reports.Column) bool { return c.Key == "devices" })
		t.Columns = slices.Insert(t.Columns, at, reports.Column{Key: "replicas", Header: "R", Align: reports.AlignRight})
	}
	names := schedule.Names()
	slices.SortStableFunc(ps, func(a, b predictor.Pair) int {
		return cmp.Or(
			cmp.Compare(a.Key.String(), b.Key.String()),
			cmp.Compare(a.Config.Seq, b.Config.Seq),
			cmp.Compare(slices.Index(names, a.Config.Schedule), slices.Index(names, b.Config.Schedule)),
			cmp.Compare(a.Config.RecordOptions.Label(), b.Config.RecordOptions.Label()),
			cmp.Compare(a.Config.JobDevices(), b.Config.JobDevices()),
			cmp.Compare(a.Config.Devices, b.Config.Devices),
			cmp.Compare(a.Config.Micro, b.Config.Micro),
			cmp.Compare(a.Config.Batch, b.Config.Batch))
	})
	judged, outside := 0, 0
	for _, p := range ps {
		spread, lo, hi, floor, out := reports.Empty("—"), reports.Empty(""), reports.Empty(""), reports.Empty(""), reports.Empty("—")
		if p.Judged() {
			judged++
			spread = reports.Empty(fmt.Sprintf("%+.1f/%+.1f %%", 100*(p.RoundMin/p.Measured-1), 100*(p.RoundMax/p.Measured-1)))
			lo, hi = nanosCell(p.RoundMin), nanosCell(p.RoundMax)
			out = reports.Cell{Value: false}
			if p.Outside() {
				outside++
				out = reports.Cell{Value: true, Text: "outside"}
			}
			if !math.IsNaN(p.Floor) {
				floor = reports.Cell{Value: p.Floor}
			}
		}
		e := (p.Predicted - p.Measured) / p.Measured
		row := []reports.Cell{
			reports.String(pairLabel(p)),
			{Value: p.Config.Schedule, Text: p.Config.RecordOptions.Label(), Short: p.Config.RecordOptions.ShortLabel()},
			reports.Int(int64(p.Config.Devices)), reports.Int(int64(p.Config.Micro)), reports.Int(int64(p.Config.MicroBatchSize())),
			reports.String(p.Fold), reports.Int(int64(p.Rounds)),
			nanosCell(p.Measured), spread, lo, hi, nanosCell(p.Predicted),
			signedPercentCell(e), floor, out,
		}
		if replicas {
			row = slices.Insert(row, 2, reports.Int(int64(max(p.Config.Replicas, 1))))
		}
		t.Rows = append(t.Rows, row)
	}
	t.Footnotes = []string{
		"measured: the median of all the configuration's steps; ± round spread: the smallest and largest of its rounds' " +
			"median step times against it (records of profile --rounds; runs outside rounds count as one round each, in the " +
			"order of the data); error: (forecast − measured)/measured.",
		fmt.Sprintf("%d of %d forecasts outside their configuration's round spread", outside, judged),
	}
	switch n := len(ps) - judged; {
	case n == 1:
		t.Footnotes[1] += "; 1 configuration measured in one round is not judged (—)"
	case n > 1:
		t.Footnotes[1] += fmt.Sprintf("; %d configurations measured in one round are not judged (—)", n)
	}
	t.Footnotes[1] += "."
	return t
}

// nanosCell holds nanoseconds, shown in milliseconds with two decimals
// so that a column of them lines up.
func nanosCell(ns float64) reports.Cell {
	n := int64(math.Round(ns))
	return reports.Cell{Value: n, Text: strconv.FormatFloat(float64(n)/1e6, 'f', 2, 64)}
}

// signedPercentCell holds a signed fraction, shown as a percentage with
// its sign: "+4.2 %", "-0.7 %"; one that rounds to zero shows "0.0 %".
func signedPercentCell(f float64) reports.Cell {
	text := fmt.Sprintf("%+.1f %%", 100*f)
	if math.Abs(100*f) < 0.05 {
		text = "0.0 %"
	}
	return reports.Cell{Value: f, Text: text}
}

// pairLabel names a held-out configuration's model and size: its key's,
// with a language model's sequence length, which keys leave out.
func pairLabel(p predictor.Pair) string {
	size := p.Key.SizeRecord
	size.Seq = p.Config.Seq
	return size.Label(p.Key.Model)
}
