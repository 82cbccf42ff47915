package predictor

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/pipecast/pipecast/profiler"
)

// fitTransfers fits each transfer kind; kinds without data take p2p's.
//
// The calibration's samples span sizes from kilobytes to megabytes, so
// they fix the slope 1/β; but they time a bare copy into warm buffers,
// while a transfer in a run also allocates its buffer and wakes the
// receiver. So when a kind has both, the slope is the calibration line's
// and the intercept α is the median over the run's transfers of
// (t − bytes/β), at least 0; with only one source, NNLS fits that alone.
func (c *CostModel) fitTransfers(d *fitData) error {
	if pts := d.calibration[TransferDPAllReduce]; pts.len() > 0 {
		xs, _, ts := typicalByX(pts)
		c.replicaSum = &curve{x: xs, t: ts}
	}
	for _, kind := range transferKinds {
		cal, ev := d.calibration[kind], d.transfer[kind]
		if cal.len() == 0 && ev.len() == 0 {
			continue
		}
		if cal.len() == 0 || ev.len() == 0 {
			pts := cal
			if cal.len() == 0 {
				pts = ev
			}
			l, err := c.fitReported("transfer "+kind, "bytes", pts)
			if err != nil {
				return err
			}
			c.transfer[kind] = l
			continue
		}
		l, err := fitLine(cal, false)
		if err != nil {
			return fmt.Errorf("transfer %s calibration: %w", kind, err)
		}
		rest := make([]float64, ev.len())
		for i, t := range ev.t {
			rest[i] = t - l.Slope*ev.x[i]
		}
		l.Intercept = math.Max(0, profiler.Median(rest))
		both := &points{x: append(slices.Clone(cal.x), ev.x...), t: append(slices.Clone(cal.t), ev.t...)}
		l.Points = pointsPositive(both)
		l.RMSE, l.MaxRelErr = residuals(l, both)
		c.transfer[kind] = l
		c.reports = append(c.reports, FitReport{Name: "transfer " + kind, Variable: "bytes", Unit: "ns", Line: l})
	}
	for _, kind := range transferKinds {
		if _, ok := c.transfer[kind]; ok {
			continue
		}
		name := "transfer " + kind + " (no data: p2p's line)"
		if kind == TransferP2P {
			name = "transfer p2p (no data: priced 0)"
		}
		c.transfer[kind] = c.transfer[TransferP2P]
		c.reports = append(c.reports, FitReport{Name: name, Variable: "bytes", Unit: "ns", Line: c.transfer[kind]})
	}
	return nil
}

// curve is a piecewise-linear function through measured points (x
// increasing): a memory-bound copy's time per byte changes where its
// buffers outgrow the caches, which no single line through sizes on both
// sides follows.
type curve struct{ x, t []float64 }

// at returns the curve's value at x: linear between the two points about
// it, and beyond the points along the nearest segment (through the
// origin's direction from a single point), at least 0.
func (c *curve) at(x float64) float64 {
	n := len(c.x)
	switch {
	case n == 0:
		return 0
	case n == 1:
		return c.t[0] * x / c.x[0]
	}
	i := sort.SearchFloat64s(c.x, x)
	i = min(max(i, 1), n-1)
	x0, x1, t0, t1 := c.x[i-1], c.x[i], c.t[i-1], c.t[i]
	return math.Max(0, t0+(t1-t0)*(x-x0)/(x1-x0))
}

// fitOverheads takes the median overhead of each op kind and reports it
// as a constant line whose residuals are the spread about the median.
func (c *CostModel) fitOverheads(d *fitData) {
	for _, op := range overheadOps {
		v := d.overhead[op]
		if len(v) == 0 {
			continue
		}
		med := profiler.Median(v)
		c.overhead[op] = med
		l := Line{Intercept: med, Points: len(v)}
		var ss float64
		for _, x := range v {
			ss += (x - med) * (x - med)
			if med > 0 {
				l.MaxRelErr = math.Max(l.MaxRelErr, math.Abs(x-med)/med)
			}
		}
		l.RMSE = math.Sqrt(ss / float64(len(v)))
		c.reports = append(c.reports, FitReport{Name: "overhead " + op, Variable: "none", Unit: "ns", Line: l})
	}
}
