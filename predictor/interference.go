package predictor

import (
	"fmt"
	"slices"
	"sort"

	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

// interferenceRounds bounds the re-simulations that settle which ops
// overlap once interference has moved them.
const interferenceRounds = 8

// fitInterference sets c's co-location interference from the records'
// measurements: per number of devices computing at once, the median
// factor over the records. It is set only when every record ran on one
// device: there the blocks were timed alone, so a forecast of devices
// that overlap must add their interference; a record of several devices
// already times its blocks with whatever interference its own run had,
// which the fitted lines then carry.
//
// The levels' factor, measured on forwards, prices every compute op. The
// records' backward factors, measured on the stages' backwards run
// against each other, are not applied: on a 2-core Intel Xeon
// (2026-12-02) they were 1.01–1.18 for resnet50 while the K = 2 runs'
// backward blocks took 0.94–0.98 of the K = 1 runs' time, and applying
// them moved the live K = 1 → K = 2 forecasts of resnet50 from MAPE
// 4.0 % to 5.9 % and no validation dataset's closer. In a pipeline a
// backward mostly overlaps another device's forward or idle time, not
// another backward.
func (c *CostModel) fitInterference(recs []*profiler.Record) {
	factors := map[int][]float64{}
	for _, r := range recs {
		if r.Config.Devices != 1 {
			return
		}
		if r.Env.Interference == nil {
			continue
		}
		for _, l := range r.Env.Interference.Levels {
			if l.Devices > 1 && l.Factor > 0 {
				factors[l.Devices] = append(factors[l.Devices], l.Factor)
			}
		}
	}
	if len(factors) == 0 {
		return
	}
	c.interference = []profiler.InterferenceLevel{{Devices: 1, Factor: 1, Min: 1, Max: 1}}
	for n, fs := range factors {
		c.interference = append(c.interference, profiler.InterferenceLevel{
			Devices: n, Factor: profiler.Median(fs), Min: slices.Min(fs), Max: slices.Max(fs),
		})
	}
	sort.Slice(c.interference, func(i, j int) bool { return c.interference[i].Devices < c.interference[j].Devices })
	for _, l := range c.interference[1:] {
		c.reports = append(c.reports, FitReport{
			Name:     fmt.Sprintf("interference, %d devices computing at once (median of %d records, %.3f–%.3f)", l.Devices, len(factors[l.Devices]), l.Min, l.Max),
			Variable: "factor", Unit: "×", Line: Line{Intercept: l.Factor},
		})
	}
}

// Interference returns the co-location slowdowns c applies, per number
// of devices computing at once (level 1 first), or nil when it applies
// none.
func (c *CostModel) Interference() []profiler.InterferenceLevel {
	return slices.Clone(c.interference)
}

// slowdown is the factor of n devices computing at once (n ≥ 1, not
// necessarily whole): linear between the measured levels, the last
// level's beyond it.
func (c *CostModel) slowdown(n float64) float64 {
	lv := c.interference
	if len(lv) == 0 || n <= 1 {
		return 1
	}
	for i := 1; i < len(lv); i++ {
		lo, hi := lv[i-1], lv[i]
		if n <= float64(hi.Devices) {
			f := (n - float64(lo.Devices)) / float64(hi.Devices-lo.Devices)
			return lo.Factor + f*(hi.Factor-lo.Factor)
		}
	}
	return lv[len(lv)-1].Factor
}

// simulate runs the forecast's program: with interference, each compute
// op slowed by the devices computing while it runs
// (schedule.SimulateInterference); without, plainly.
//
// The program is one replica's: in a job of R replicas every device's
// replicas run its ops at the same times, so R times as many devices
// compute at once as the program's timeline shows.
func (s *simulation) simulate() (*schedule.Timeline, error) {
	if len(s.c.interference) < 2 || s.unscaled {
		return schedule.Simulate(s.prog, s.cost)
	}
	r := float64(s.prog.Replicas())
	return schedule.SimulateInterference(s.prog, s.cost, func(n float64) float64 { return s.c.slowdown(r * n) }, interferenceRounds)
}
