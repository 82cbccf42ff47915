package predictor

import (
	"math"
	"testing"

	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

// floorRun is a measured record of the configuration at micro, in round
// (0: outside rounds), whose steps took ms milliseconds each.
func floorRun(micro, round int, ms ...float64) profiler.Record {
	r := profiler.Record{Kind: profiler.KindMeasured, Round: round,
		Config: profiler.RunConfig{Batch: 16, RecordOptions: schedule.RecordOptions{Schedule: schedule.GPipe, Devices: 1, Micro: micro}}}
	for i, m := range ms {
		r.Steps = append(r.Steps, profiler.Step{Step: i + 1, WallNanos: int64(m * 1e6)})
	}
	return r
}

// floorTol is the tolerance of the hand-computed floors: their fractions
// are exact to a few ulps of float64 arithmetic.
const floorTol = 1e-12

func TestRoundsOf(t *testing.T) {
	tests := []struct {
		name   string
		runs   []profiler.Record
		n      int
		lo, hi float64 // ms
		floor  float64 // NaN: none
	}{
		// Round medians 100, 120, 100 ms. Odd rounds 1 and 3: steps 90,
		// 96, 100, 100, 104, 110, median 100; even round 2: 120.
		// |100 − 120|/120 = 1/6. The data order is not the rounds'.
		{name: "rounds recorded", runs: []profiler.Record{
			floorRun(1, 3, 104, 96, 100), floorRun(1, 1, 100, 110, 90), floorRun(1, 2, 120, 130, 110)},
			n: 3, lo: 100, hi: 120, floor: 1.0 / 6},
		// No rounds recorded: the runs in data order are rounds 1 and
		// 2, medians 200 and 210: |200 − 210|/210 = 1/21.
		{name: "repeated runs", runs: []profiler.Record{floorRun(2, 0, 200, 200, 200), floorRun(2, 0, 210, 190, 220)},
			n: 2, lo: 200, hi: 210, floor: 1.0 / 21},
		// One record outside rounds makes the data order count: runs
		// 1, 2, 3 have medians 100, 120, 100, so the floor is 1/6 again
		// although the records say rounds 3, 0 and 1.
		{name: "rounds partly recorded", runs: []profiler.Record{
			floorRun(1, 3, 100, 110, 90), floorRun(1, 0, 120, 130, 110), floorRun(1, 1, 104, 96, 100)},
			n: 3, lo: 100, hi: 120, floor: 1.0 / 6},
		// Rounds 2 and 4 alone still alternate: round 2's two records
		// (steps 50 and 60, median 55) against round 4's 40 ms:
		// |55 − 40|/40 = 3/8.
		{name: "rounds missing", runs: []profiler.Record{floorRun(4, 2, 50), floorRun(4, 4, 40), floorRun(4, 2, 60)},
			n: 2, lo: 40, hi: 55, floor: 3.0 / 8},
		{name: "one run", runs: []profiler.Record{floorRun(8, 0, 30, 20, 10)}, n: 1, lo: 20, hi: 20, floor: math.NaN()},
		{name: "one round", runs: []profiler.Record{floorRun(8, 5, 30), floorRun(8, 5, 10)}, n: 1, lo: 20, hi: 20, floor: math.NaN()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := roundsOf(tc.runs)
			if got.n != tc.n || got.lo != tc.lo*1e6 || got.hi != tc.hi*1e6 {
				t.Errorf("rounds %d, medians %v–%v ns; want %d, %v–%v ms", got.n, got.lo, got.hi, tc.n, tc.lo, tc.hi)
			}
			if math.IsNaN(tc.floor) != math.IsNaN(got.floor) || math.Abs(got.floor-tc.floor) > floorTol {
				t.Errorf("floor %v, want %v", got.floor, tc.floor)
			}
		})
	}
}

func TestRoundFloor(t *testing.T) {
	predicted := floorRun(1, 2, 1000)
	predicted.Kind = profiler.KindPredicted
	recs := []profiler.Record{
		floorRun(1, 1, 100, 110, 90), floorRun(2, 0, 200, 200, 200), floorRun(1, 2, 120, 130, 110),
		floorRun(8, 0, 30), floorRun(2, 0, 210, 190, 220), floorRun(1, 3, 104, 96, 100), predicted,
	}
	// Floors of TestRoundsOf: 1/6 at M = 1 (the predicted record left
	// out), 1/21 at M = 2; M = 8 ran once.
	got := RoundFloor(recs)
	if want := (1.0/6 + 1.0/21) / 2; got.N != 2 || math.Abs(got.MAPE-want) > floorTol || math.Abs(got.Max-1.0/6) > floorTol {
		t.Errorf("RoundFloor = %+v, want N 2, MAPE %v, max %v", got, want, 1.0/6)
	}
	if got := RoundFloor(recs[3:4]); got.N != 0 || !math.IsNaN(got.MAPE) || !math.IsNaN(got.Max) {
		t.Errorf("RoundFloor of one run = %+v, want N 0 and NaN", got)
	}
}

// TestRowOutside checks the counts of forecasts outside their rounds'
// range and the floor's aggregation in a schedule's row.
func TestRowOutside(t *testing.T) {
	pair := func(rounds int, lo, hi, pred, floor float64) Pair {
		return Pair{Rounds: rounds, RoundMin: lo, RoundMax: hi, Measured: (lo + hi) / 2, Predicted: pred, Floor: floor,
			Config: profiler.RunConfig{RecordOptions: schedule.RecordOptions{Schedule: schedule.GPipe}}}
	}
	ps := []Pair{
		pair(3, 100, 120, 125, 0.1),        // above the range
		pair(3, 100, 120, 120, 0.02),       // on its edge: inside
		pair(2, 100, 120, 99, 0.3),         // below
		pair(1, 100, 100, 150, math.NaN()), // one round: not judged
	}
	if !ps[0].Outside() || ps[1].Outside() || !ps[2].Outside() || ps[3].Outside() || ps[3].Judged() {
		t.Errorf("outside %v %v %v %v, judged %v; want true false true false, false",
			ps[0].Outside(), ps[1].Outside(), ps[2].Outside(), ps[3].Outside(), ps[3].Judged())
	}
	// Measured 110 for each: 125 lies 5/110 above 120, 99 1/110 below
	// 100, and one round's whole error (150 against 100) counts.
	for i, want := range []float64{5.0 / 110, 0, 1.0 / 110, 0.5} {
		if got := ps[i].ErrBeyondSpread(); math.Abs(got-want) > 1e-12 {
			t.Errorf("pair %d: error beyond the spread %v, want %v", i, got, want)
		}
	}
	row := rowOf(schedule.GPipe, ps)
	if row.Judged != 3 || row.Outside != 2 || row.FloorN != 3 || math.Abs(row.FloorMAPE-0.14) > floorTol || row.FloorMax != 0.3 {
		t.Errorf("row %+v: want judged 3, outside 2, floor N 3, MAPE 0.14, max 0.3", row)
	}
	if row := rowOf("all", ps[3:]); row.FloorN != 0 || !math.IsNaN(row.FloorMAPE) || row.Judged != 0 {
		t.Errorf("row of a single-round configuration %+v: want no floor, none judged", row)
	}
}
