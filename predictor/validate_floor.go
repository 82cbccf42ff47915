package predictor

import (
	"math"
	"slices"

	"github.com/pipecast/pipecast/profiler"
)

// FloorRow is the noise floor of a set of configurations: how well
// their measurements forecast themselves. For a configuration measured
// in two rounds or more, its floor is the relative error
// |odd − even|/even of the median step time of its odd rounds (the
// first, third, …) against that of its even rounds, each the median of
// all the rounds' steps together. A forecast whose error is of the size
// of the floor is as good as measuring again.
type FloorRow struct {
	// N counts the configurations measured in at least two rounds.
	N int
	// MAPE and Max are the mean and largest of their floors; NaN when N
	// is 0.
	MAPE, Max float64
}

// RoundFloor returns the noise floor (see FloorRow) of the measured
// records of recs, grouped into configurations as validation groups
// them, without fitting anything: what a forecast of the same
// configurations could at best hope for.
func RoundFloor(recs []profiler.Record) FloorRow {
	var measured []profiler.Record
	for _, r := range recs {
		if r.Kind == profiler.KindMeasured {
			measured = append(measured, r)
		}
	}
	var floors []float64
	for _, runs := range groupRuns(measured) {
		floors = append(floors, roundsOf(runs).floor)
	}
	return floorRow(floors)
}

// floorRow aggregates floors, skipping the NaN of configurations
// measured in one round.
func floorRow(floors []float64) FloorRow {
	row := FloorRow{MAPE: math.NaN(), Max: math.NaN()}
	var sum float64
	for _, f := range floors {
		if math.IsNaN(f) {
			continue
		}
		if row.N == 0 {
			row.Max = f
		}
		row.N++
		sum += f
		row.Max = math.Max(row.Max, f)
	}
	if row.N > 0 {
		row.MAPE = sum / float64(row.N)
	}
	return row
}

// rounds is what one configuration's rounds say about it.
type rounds struct {
	// n counts the rounds; lo and hi are the smallest and largest of
	// their median step times.
	n      int
	lo, hi float64
	// floor is |odd − even|/even of the odd and even rounds' median
	// steps; NaN with fewer than two rounds.
	floor float64
}

// roundsOf splits the runs of one configuration into rounds: by their
// records' Round where every record has one (profile --rounds), else
// each record a round of its own in the order of the data, so that runs
// repeated before rounds were recorded count as rounds too. Rounds are
// taken in ascending order, and the odd ones are the first, third, … of
// those present, so that a configuration missing from some round still
// alternates.
func roundsOf(runs []profiler.Record) rounds {
	numbered := true
	for _, r := range runs {
		numbered = numbered && r.Round > 0
	}
	byRound := map[int][]float64{}
	for i, r := range runs {
		k := i + 1
		if numbered {
			k = r.Round
		}
		byRound[k] = append(byRound[k], stepTimes(&r)...)
	}
	keys := make([]int, 0, len(byRound))
	for k := range byRound {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := rounds{n: len(keys), floor: math.NaN()}
	var odd, even []float64
	for i, k := range keys {
		m := profiler.Median(byRound[k])
		if i == 0 {
			out.lo, out.hi = m, m
		}
		out.lo, out.hi = math.Min(out.lo, m), math.Max(out.hi, m)
		if i%2 == 0 {
			odd = append(odd, byRound[k]...)
		} else {
			even = append(even, byRound[k]...)
		}
	}
	if len(keys) >= 2 {
		if e := profiler.Median(even); e > 0 {
			out.floor = math.Abs(profiler.Median(odd)-e) / e
		}
	}
	return out
}

// stepTimes returns the wall times of a record's measured steps; a
// record that lists none stands for them by its summary's median,
// minimum and maximum.
func stepTimes(r *profiler.Record) []float64 {
	if len(r.Steps) == 0 {
		return []float64{float64(r.Summary.StepNanosMedian), float64(r.Summary.StepNanosMin), float64(r.Summary.StepNanosMax)}
	}
	steps := make([]float64, len(r.Steps))
	for i, s := range r.Steps {
		steps[i] = float64(s.WallNanos)
	}
	return steps
}
