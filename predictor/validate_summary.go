package predictor

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

// summarise fills the rows, the winner checks and the memory row from the
// pairs.
func (v *Validation) summarise() {
	v.Rows = nil
	for _, s := range schedule.Names() {
		var ps []Pair
		for _, p := range v.Pairs {
			if p.Config.Schedule == s {
				ps = append(ps, p)
			}
		}
		if len(ps) > 0 {
			v.Rows = append(v.Rows, rowOf(s, ps))
		}
	}
	v.Rows = append(v.Rows, rowOf("all", v.Pairs))
	v.Winners = winners(v.Pairs)
	v.Memory = memoryRow(v.Pairs)
}

// rowOf aggregates pairs.
func rowOf(name string, ps []Pair) ValidationRow {
	row := ValidationRow{Schedule: name, N: len(ps)}
	for _, p := range ps {
		row.Runs += max(p.Runs, 1)
	}
	meas, pred, noise := make([]float64, len(ps)), make([]float64, len(ps)), make([]float64, len(ps))
	var spreads, floors []float64
	for i, p := range ps {
		if p.Judged() {
			row.Judged++
			floors = append(floors, p.Floor)
			if p.Outside() {
				row.Outside++
			}
		}
		e, be := p.Err(), p.BaselineErr()
		row.MAPE += e / float64(len(ps))
		row.BaselineMAPE += be / float64(len(ps))
		row.MaxErr = math.Max(row.MaxErr, e)
		row.BaselineMaxErr = math.Max(row.BaselineMaxErr, be)
		meas[i], pred[i], noise[i] = p.Measured, p.Predicted, p.Noise
		if p.Runs > 1 {
			spreads = append(spreads, p.RunSpread)
		}
	}
	floor := floorRow(floors)
	row.FloorN, row.FloorMAPE, row.FloorMax = floor.N, floor.MAPE, floor.Max
	row.KendallTau = KendallTau(pred, meas)
	sort.Float64s(noise)
	if n := len(noise); n > 0 {
		row.Noise = (noise[(n-1)/2] + noise[n/2]) / 2
	}
	row.RunSpread = math.NaN()
	if len(spreads) > 0 {
		row.RunSpread = profiler.Median(spreads)
	}
	return row
}

// winners pairs every held-out gpipe run with every held-out coop run of
// the same key and size (a language model's sequence length, which its
// key leaves out), K, M and batch held out in the same fold: forecasts from
// different fits would differ by the fits as well as by the schedules.
func winners(ps []Pair) []Winner {
	var out []Winner
	for _, g := range ps {
		if g.Config.Schedule != schedule.GPipe {
			continue
		}
		for _, c := range ps {
			if c.Config.Schedule != schedule.Coop || c.Key != g.Key || c.Config.SizeRecord != g.Config.SizeRecord || c.Config.Devices != g.Config.Devices ||
				c.Config.Micro != g.Config.Micro || c.Config.Batch != g.Config.Batch || c.Fold != g.Fold {
				continue
			}
			w := Winner{
				Key: g.Key, Seq: g.Config.Seq, Devices: g.Config.Devices, Micro: g.Config.Micro, Batch: g.Config.Batch,
				MeasuredGPipe: g.Measured, MeasuredCoop: c.Measured,
				PredictedGPipe: g.Predicted, PredictedCoop: c.Predicted,
				MeasuredFaster: faster(g.Measured, c.Measured), PredictedFaster: faster(g.Predicted, c.Predicted),
			}
			if g.Predicted == c.Predicted {
				w.PredictedFaster = Tie
			}
			w.Agree = w.MeasuredFaster == w.PredictedFaster
			out = append(out, w)
		}
	}
	return out
}

// faster names the faster of gpipe's and coop's times; a tie goes to
// gpipe, the simpler schedule.
func faster(gpipe, coop float64) string {
	if coop < gpipe {
		return schedule.Coop
	}
	return schedule.GPipe
}

// memoryRow compares peak bytes: the largest device's per run, and every
// device's.
func memoryRow(ps []Pair) MemoryRow {
	var row MemoryRow
	for _, p := range ps {
		mx, px := slices.Max(append([]int64{0}, p.MeasuredPeakBytes...)), slices.Max(append([]int64{0}, p.PredictedPeakBytes...))
		if mx <= 0 {
			continue
		}
		e := math.Abs(float64(px-mx)) / float64(mx)
		row.N++
		row.MAPE += e
		row.MaxErr = math.Max(row.MaxErr, e)
		row.DeviceMaxErr = math.Max(row.DeviceMaxErr, e)
		for d, m := range p.MeasuredPeakBytes {
			if m <= 0 {
				continue
			}
			if d >= len(p.PredictedPeakBytes) {
				row.DeviceMaxErr = math.Max(row.DeviceMaxErr, 1)
				continue
			}
			row.DeviceMaxErr = math.Max(row.DeviceMaxErr, math.Abs(float64(p.PredictedPeakBytes[d]-m))/float64(m))
		}
	}
	if row.N > 0 {
		row.MAPE /= float64(row.N)
	}
	return row
}

// KendallTau returns Kendall's τ-b between x and y, which corrects τ for
// ties in either: (concordant − discordant)/√((n₀ − n₁)(n₀ − n₂)) with
// n₀ = n(n−1)/2 pairs and n₁, n₂ the pairs tied in x and in y. A pair
// tied in both counts in n₁ and n₂ but in neither sum. It returns NaN
// when τ is undefined: fewer than two values, or every pair tied in x or
// in every pair tied in y. It panics when x and y differ in length.
func KendallTau(x, y []float64) float64 {
	if len(x) != len(y) {
		panic(fmt.Sprintf("predictor: kendall tau: %d x values and %d y values", len(x), len(y)))
	}
	n := len(x)
	var conc, disc, tiesX, tiesY float64
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			dx, dy := x[i]-x[j], y[i]-y[j]
			switch {
			case dx == 0 && dy == 0:
				tiesX++
				tiesY++
			case dx == 0:
				tiesX++
			case dy == 0:
				tiesY++
			case (dx > 0) == (dy > 0):
				conc++
			default:
				disc++
			}
		}
	}
	n0 := float64(n) * float64(n-1) / 2
	den := math.Sqrt((n0 - tiesX) * (n0 - tiesY))
	if den == 0 {
		return math.NaN()
	}
	return (conc - disc) / den
}
