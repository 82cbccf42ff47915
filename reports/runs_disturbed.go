package reports

import (
	"math"
	"slices"
	"strconv"

	"github.com/pipecast/pipecast/profiler"
)

// disturbedColumn shows how disturbed a run's machine was, from the
// probe the runner timed before each step (see profiler.Disturbances).
var disturbedColumn = Column{Key: "disturbed", Header: "disturbed", Align: AlignRight, Fold: 3}

// disturbedFootnote explains the disturbed column.
const disturbedFootnote = "disturbed: how much slower the machine's probe (fixed work timed before each step while no " +
	"device computed) ran than in the quietest run of the same host and CPU in this table, the median over a row's " +
	"rounds: a shared machine's other tenants slow the probe as they slow the run; — for runs without a probe."

// pointDisturbances returns each point's disturbance, the median over its
// records of profiler.Disturbances(recs) (NaN for a point with no probed
// record), and whether any point has one.
func pointDisturbances(recs []profiler.Record, points []roundPoint) (out []float64, probed bool) {
	all := profiler.Disturbances(recs)
	out = make([]float64, len(points))
	for i, p := range points {
		var ds []float64
		for _, m := range p.members {
			if !math.IsNaN(all[m]) {
				ds = append(ds, all[m])
			}
		}
		out[i] = math.NaN()
		if len(ds) > 0 {
			out[i], probed = profiler.Median(ds), true
		}
	}
	return out, probed
}

// disturbedCell shows a disturbance as "+12 %", or "—" for none; machine
// formats carry it as a fraction.
func disturbedCell(d float64) Cell {
	if math.IsNaN(d) {
		return Empty("—")
	}
	return Cell{Value: d, Text: "+" + strconv.FormatFloat(100*d, 'f', 0, 64) + " %"}
}

// insertDisturbed puts the disturbed column before the throughput, where
// it reads beside the step times it explains.
func insertDisturbed(columns []Column) (at int, out []Column) {
	at = slices.IndexFunc(columns, func(c Column) bool { return c.Key == "samples_per_second" })
	return at, slices.Insert(columns, at, disturbedColumn)
}
