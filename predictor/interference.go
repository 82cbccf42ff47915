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
// factor over the records, and the median backward factor where the
// records measured one. It is set only when every record ran on one
// device: there the blocks were timed alone, so a forecast of devices
// that overlap must add their interference; a record of several devices
// already times its blocks with whatever interference its own run had,
// which the fitted lines then carry.
func (c *CostModel) fitInterference(recs []*profiler.Record) {
	factors, backward := map[int][]float64{}, map[int][]float64{}
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
				if l.BackwardFactor > 0 {
					backward[l.Devices] = append(backward[l.Devices], l.BackwardFactor)
				}
			}
		}
	}
	if len(factors) == 0 {
		return
	}
	c.interference = []profiler.InterferenceLevel{{Devices: 1, Factor: 1, Min: 1, Max: 1}}
	for n, fs := range factors {
		l := profiler.InterferenceLevel{Devices: n, Factor: profiler.Median(fs), Min: slices.Min(fs), Max: slices.Max(fs)}
		if bs := backward[n]; len(bs) > 0 {
			l.BackwardFactor, l.BackwardMin, l.BackwardMax = profiler.Median(bs), slices.Min(bs), slices.Max(bs)
		}
		c.interference = append(c.interference, l)
	}
	sort.Slice(c.interference, func(i, j int) bool { return c.interference[i].Devices < c.interference[j].Devices })
	for _, l := range c.interference[1:] {
		pass := "forward and backward"
		if l.BackwardFactor > 0 {
			pass = "forward"
		}
		c.reports = append(c.reports, FitReport{
			Name:     fmt.Sprintf("interference, %s, %d devices computing at once (median of %d records, %.3f–%.3f)", pass, l.Devices, len(factors[l.Devices]), l.Min, l.Max),
			Variable: "factor", Unit: "×", Line: Line{Intercept: l.Factor},
		})
		if l.BackwardFactor > 0 {
			c.reports = append(c.reports, FitReport{
				Name:     fmt.Sprintf("interference, backward, %d devices computing at once (median of %d records, %.3f–%.3f)", l.Devices, len(backward[l.Devices]), l.BackwardMin, l.BackwardMax),
				Variable: "factor", Unit: "×", Line: Line{Intercept: l.BackwardFactor},
			})
		}
	}
}

// Interference returns the co-location slowdowns c applies, per number
// of devices computing at once (level 1 first), or nil when it applies
// none.
func (c *CostModel) Interference() []profiler.InterferenceLevel {
	return slices.Clone(c.interference)
}

// slowdown is the factor of an op of the kind when n devices compute at
// once (n ≥ 1, not necessarily whole): the levels' backward factor for
// the kinds that run a backward, their factor for the rest; linear
// between the measured levels, the last level's beyond it.
func (c *CostModel) slowdown(kind schedule.OpKind, n float64) float64 {
	lv := c.interference
	if len(lv) == 0 || n <= 1 {
		return 1
	}
	factor := func(l profiler.InterferenceLevel) float64 { return l.Factor }
	if kind.RunsBackward() {
		factor = profiler.InterferenceLevel.Backward
	}
	for i := 1; i < len(lv); i++ {
		lo, hi := lv[i-1], lv[i]
		if n <= float64(hi.Devices) {
			f := (n - float64(lo.Devices)) / float64(hi.Devices-lo.Devices)
			return factor(lo) + f*(factor(hi)-factor(lo))
		}
	}
	return factor(lv[len(lv)-1])
}

// simulate runs the forecast's program: with interference, each compute
// op slowed by the devices computing while it runs
// (schedule.SimulateInterference); without, plainly.
func (s *simulation) simulate() (*schedule.Timeline, error) {
	if len(s.c.interference) < 2 || s.unscaled {
		return schedule.Simulate(s.prog, s.cost)
	}
	return schedule.SimulateInterference(s.prog, s.cost, s.c.slowdown, interferenceRounds)
}
