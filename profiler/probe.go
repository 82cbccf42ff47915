package profiler

import (
	"fmt"
	"slices"
)

// Probe is how disturbed the machine was while a run ran: the time of a
// fixed piece of work (a core's arithmetic and a stream through the
// shared last-level cache) that the runner timed before each measured
// step, while no device computed. Other tenants of a shared machine slow
// it as they slow the run. Its absolute time means nothing across
// machines; among the runs of one machine, the quietest probes the
// fastest (see Disturbances).
type Probe struct {
	// Nanos holds each measured step's probe time, in step order.
	Nanos []int64 `json:"nanos"`
}

// Median returns the median probe time in nanoseconds, 0 for a probe
// without times.
func (p *Probe) Median() int64 { return Median(p.Nanos) }

// Spread returns the probe times' relative spread, (max − min) / median:
// how much the machine's disturbance changed during the run; 0 without
// times.
func (p *Probe) Spread() float64 {
	m := p.Median()
	if m <= 0 {
		return 0
	}
	return float64(slices.Max(p.Nanos)-slices.Min(p.Nanos)) / float64(m)
}

// validate checks the probe against the record's measured steps: one
// positive time per step.
func (p *Probe) validate(steps int) error {
	if len(p.Nanos) != steps {
		return fmt.Errorf("probe: %d nanos for %d measured steps", len(p.Nanos), steps)
	}
	for i, n := range p.Nanos {
		if n <= 0 {
			return fmt.Errorf("probe: nanos[%d] %d: want > 0", i, n)
		}
	}
	return nil
}
