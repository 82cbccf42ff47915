package predictor

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/pipecast/pipecast/profiler"
)

// ErrNoMeasured is returned by Fit when no record is a measured run.
var ErrNoMeasured = errors.New("no measured run records to fit")

// The transfer kinds a cost model prices.
const (
	TransferP2P       = "p2p"
	TransferAllGather = "allgather"
	TransferAllToAll  = "alltoall"
)

var transferKinds = [...]string{TransferP2P, TransferAllGather, TransferAllToAll}

// phaseNames are the phases as record events and reports name them.
var phaseNames = [...]string{PhaseForward: "forward", PhaseBackward: "backward", PhaseRecompute: "recompute", PhasePredict: "predict"}

// String returns the phase's op name ("forward", …).
func (p Phase) String() string {
	if p < 0 || int(p) >= len(phaseNames) {
		return fmt.Sprintf("phase(%d)", int(p))
	}
	return phaseNames[p]
}

// CostModel is the fitted cost primitives of one Key: what the simulator
// charges for every op of a schedule program. Times are nanoseconds.
//
// Block times are lines t = a + b·m in the samples per call m, fitted per
// block and phase by non-negative least squares of the relative
// residuals (timing noise is roughly proportional to the time, and a
// forecast at m = 1 matters as much as one at m = 64) to the typical time
// at each measured m, a robust estimate that ignores runs a competing
// process slowed (see fitLine). Every Line's Points counts the
// measurements and its residuals are those of the typical times. Transfers are
// t = α + bytes/β per kind, updates a line in the stage's parameters,
// the loss a line in the micro-batch's samples; what a whole compute op
// takes beyond its blocks is a median overhead per op kind.
type CostModel struct {
	Key Key

	blocks   []blockFit // indexed by block
	loss     Line
	update   Line
	transfer map[string]Line
	overhead map[string]float64
	reports  []FitReport
	relErr   float64
	samples  []int
	devices  []int
}

// blockFit holds one block's lines per phase; a phase that was never
// measured holds the line it falls back to, and fallback says so.
type blockFit struct {
	name     string
	lines    [len(phaseNames)]Line
	have     [len(phaseNames)]bool
	fallback [len(phaseNames)]bool
}

// Block returns the time in ns of one call of block's phase on samples
// samples. Recompute and predict fall back to the forward line when they
// were never measured (a recompute is a forward; a prediction is a
// forward that keeps no activations, so the forward line is a slight
// overestimate); Reports names every such fallback. Block returns an
// error for a block, or a forward or backward phase, the records never
// measured.
func (c *CostModel) Block(block int, phase Phase, samples int) (float64, error) {
	if block < 0 || block >= len(c.blocks) || !c.blocks[block].have[PhaseForward] {
		return 0, fmt.Errorf("predictor: block %d of %s was never timed (profile with per-block timing)", block, c.Key)
	}
	if phase < 0 || int(phase) >= len(phaseNames) {
		return 0, fmt.Errorf("predictor: block %d: unknown phase %d", block, int(phase))
	}
	b := &c.blocks[block]
	if !b.have[phase] {
		return 0, fmt.Errorf("predictor: block %d (%s) %s was never measured for %s", block, b.name, phase, c.Key)
	}
	return math.Max(0, b.lines[phase].At(float64(samples))), nil
}

// OpOverhead returns the ns a whole op of kind op ("forward",
// "backward", "recompute", "predict") takes beyond the sum of its
// blocks: the median over the recorded ops. For "send" it is the median
// duration of a send (handing the tensor to the transport; the copy is
// the receiver's and priced by Transfer). For every other kind it is 0:
// loss, update and transfers are priced by their own fits.
func (c *CostModel) OpOverhead(op string) float64 { return c.overhead[op] }

// Loss returns the ns of the loss of one micro-batch of samples samples.
func (c *CostModel) Loss(samples int) float64 { return math.Max(0, c.loss.At(float64(samples))) }

// Update returns the ns of the optimizer step of a stage of params
// parameters.
func (c *CostModel) Update(params int64) float64 {
	return math.Max(0, c.update.At(float64(params)))
}

// Transfer returns the ns of a transfer of kind ("p2p", "allgather",
// "alltoall") in which a device receives bytes bytes: for p2p the
// tensor's bytes, for a collective the bytes that device receives (as its
// events count them). A collective's time on a device is from when the
// last device joins to when that device leaves, so waiting for peers is
// not in it. A kind without
// data, or an unknown kind, is priced as p2p.
func (c *CostModel) Transfer(kind string, bytes int64) float64 {
	l, ok := c.transfer[kind]
	if !ok {
		l = c.transfer[TransferP2P]
	}
	return math.Max(0, l.At(float64(bytes)))
}

// Reports returns every fit with its residuals: each block's phases
// (fallbacks named as such), the loss, the update, each transfer kind and
// each op overhead.
func (c *CostModel) Reports() []FitReport { return slices.Clone(c.reports) }

// RelErr returns a relative 1-σ uncertainty of a step-time forecast,
// sqrt(f² + n²), where f is the median over the block fits of their root
// mean square relative residual, and n the records' run-to-run noise:
// the median over records of their steps' relative standard deviation
// (standard deviation over median, records of two or more steps). Block
// errors are taken whole rather than shrunk by the number of blocks a
// step sums, because they are largely systematic (the same cache and
// threading effects in every block), not independent.
func (c *CostModel) RelErr() float64 { return c.relErr }

// Samples returns the micro-batch sizes (B/M) the records measured, in
// increasing order.
func (c *CostModel) Samples() []int { return slices.Clone(c.samples) }

// Devices returns the device counts K the records measured, in
// increasing order.
func (c *CostModel) Devices() []int { return slices.Clone(c.devices) }

// Fit fits a cost model for every Key of the measured records among recs
// (predicted records are ignored). It returns ErrNoMeasured when there is
// none, and an error for a record whose configuration cannot be read.
func Fit(recs []profiler.Record) (map[Key]*CostModel, error) {
	groups := map[Key][]*profiler.Record{}
	var order []Key
	for i := range recs {
		r := &recs[i]
		if r.Kind != profiler.KindMeasured {
			continue
		}
		c := r.Config
		if c.Batch < 1 || c.Micro < 1 || c.Devices < 1 {
			return nil, fmt.Errorf("fit: record %s: batch %d, %d micro-batches, %d devices", r.ID, c.Batch, c.Micro, c.Devices)
		}
		k := KeyOf(r)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("fit: %w", ErrNoMeasured)
	}
	out := make(map[Key]*CostModel, len(groups))
	for _, k := range order {
		m, err := fitKey(k, groups[k])
		if err != nil {
			return nil, fmt.Errorf("fit %s: %w", k, err)
		}
		out[k] = m
	}
	return out, nil
}

// fitKey fits the cost model of one key's records.
func fitKey(k Key, recs []*profiler.Record) (*CostModel, error) {
	d := newFitData()
	for _, r := range recs {
		if err := d.add(r); err != nil {
			return nil, fmt.Errorf("record %s: %w", r.ID, err)
		}
	}
	c := &CostModel{Key: k, transfer: map[string]Line{}, overhead: map[string]float64{}}
	if err := c.fitBlocks(d); err != nil {
		return nil, err
	}
	var err error
	if c.loss, err = c.fitReported("loss", "samples", &d.loss); err != nil {
		return nil, err
	}
	if c.update, err = c.fitReported("update", "params", &d.update); err != nil {
		return nil, err
	}
	if err := c.fitTransfers(d); err != nil {
		return nil, err
	}
	c.fitOverheads(d)
	c.relErr = math.Hypot(c.blockResidual(d), median(d.stepNoise))
	c.samples = sortedKeys(d.samples)
	c.devices = sortedKeys(d.devices)
	return c, nil
}

// fitBlocks fits every block's measured phases and fills the fallbacks.
func (c *CostModel) fitBlocks(d *fitData) error {
	c.blocks = make([]blockFit, len(d.blocks))
	for b := range d.blocks {
		bf := &c.blocks[b]
		bf.name = d.blockNames[b]
		for p := range phaseNames {
			pts := &d.blocks[b][p]
			if pts.len() == 0 {
				continue
			}
			l, err := fitLine(pts)
			if err != nil {
				return fmt.Errorf("block %d (%s) %s: %w", b, bf.name, Phase(p), err)
			}
			bf.lines[p], bf.have[p] = l, true
		}
		for _, p := range []Phase{PhaseRecompute, PhasePredict} {
			if !bf.have[p] && bf.have[PhaseForward] {
				bf.lines[p], bf.have[p], bf.fallback[p] = bf.lines[PhaseForward], true, true
			}
		}
		for p := range phaseNames {
			if !bf.have[p] {
				continue
			}
			name := fmt.Sprintf("block %s %s", bf.name, Phase(p))
			if bf.fallback[p] {
				name += " (never measured: forward's line)"
			}
			c.reports = append(c.reports, FitReport{Name: name, Variable: "samples", Unit: "ns", Line: bf.lines[p]})
		}
	}
	return nil
}

// fitReported fits pts (an empty set gives the zero line) and reports it.
func (c *CostModel) fitReported(name, variable string, pts *points) (Line, error) {
	if pts.len() == 0 {
		c.reports = append(c.reports, FitReport{Name: name + " (no data: priced 0)", Variable: variable, Unit: "ns"})
		return Line{}, nil
	}
	l, err := fitLine(pts)
	if err != nil {
		return Line{}, fmt.Errorf("%s: %w", name, err)
	}
	c.reports = append(c.reports, FitReport{Name: name, Variable: variable, Unit: "ns", Line: l})
	return l, nil
}

// fitTransfers fits each transfer kind; kinds without data take p2p's.
//
// The calibration's samples span sizes from kilobytes to megabytes, so
// they fix the slope 1/β; but they time a bare copy into warm buffers,
// while a transfer in a run also allocates its buffer and wakes the
// receiver. So when a kind has both, the slope is the calibration line's
// and the intercept α is the median over the run's transfers of
// (t − bytes/β), at least 0; with only one source, NNLS fits that alone.
func (c *CostModel) fitTransfers(d *fitData) error {
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
		l, err := fitLine(cal)
		if err != nil {
			return fmt.Errorf("transfer %s calibration: %w", kind, err)
		}
		rest := make([]float64, ev.len())
		for i, t := range ev.t {
			rest[i] = t - l.Slope*ev.x[i]
		}
		l.Intercept = math.Max(0, median(rest))
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

// fitOverheads takes the median overhead of each op kind and reports it
// as a constant line whose residuals are the spread about the median.
func (c *CostModel) fitOverheads(d *fitData) {
	for _, op := range overheadOps {
		v := d.overhead[op]
		if len(v) == 0 {
			continue
		}
		med := median(v)
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

// blockResidual returns the median over the measured (not fallback)
// block fits of their root mean square relative residual.
func (c *CostModel) blockResidual(d *fitData) float64 {
	var rel []float64
	for b := range c.blocks {
		for p := range phaseNames {
			if !c.blocks[b].have[p] || c.blocks[b].fallback[p] {
				continue
			}
			rel = append(rel, relRMS(c.blocks[b].lines[p], &d.blocks[b][p]))
		}
	}
	return median(rel)
}

// fitLine fits t = a + b·x with a, b ≥ 0 to pts. It first reduces the
// points to one typical time at each distinct x (see typical), which
// shrugs off runs slowed by a competing process and weighs every x alike
// however often it was run; then it minimises the relative residuals Σ((a + b·x − t)/t)² over
// those typical times by NNLS. Times t ≤ 0 carry no relative information and
// are skipped. With a single distinct x the line is not determined; it is
// taken through the origin, t = b·x, because time proportional to the
// work is the better guess away from the one size measured.
//
// The line's Points counts the measurements; its RMSE and MaxRelErr are
// the residuals of the typical times it was fitted to.
func fitLine(pts *points) (Line, error) {
	xs, ts := typicalByX(pts)
	if len(ts) == 0 {
		return Line{}, fmt.Errorf("no positive times among %d points", pts.len())
	}
	l := Line{Points: pointsPositive(pts)}
	if len(ts) == 1 || xs[0] == xs[len(xs)-1] {
		if xs[0] > 0 {
			l.Slope = ts[0] / xs[0]
		} else {
			l.Intercept = ts[0]
		}
	} else {
		a := make([]float64, 0, 2*len(ts))
		rhs := make([]float64, len(ts))
		for i, t := range ts {
			a = append(a, 1/t, xs[i]/t)
			rhs[i] = 1
		}
		x, _, err := nnls(a, len(ts), 2, rhs)
		if err != nil {
			return Line{}, err
		}
		l.Intercept, l.Slope = x[0], x[1]
	}
	l.RMSE, l.MaxRelErr = residuals(l, pts)
	return l, nil
}

// residuals returns the root mean square and the largest relative
// residual of l on the typical times at each x of pts.
func residuals(l Line, pts *points) (rmse, maxRel float64) {
	xs, ts := typicalByX(pts)
	if len(ts) == 0 {
		return 0, 0
	}
	var ss float64
	for i, t := range ts {
		e := l.At(xs[i]) - t
		ss += e * e
		maxRel = math.Max(maxRel, math.Abs(e)/t)
	}
	return math.Sqrt(ss / float64(len(ts))), maxRel
}

// typicalByX returns the distinct x of pts with a positive time, in
// increasing order, and the typical positive time at each.
func typicalByX(pts *points) (xs, ts []float64) {
	idx := make([]int, 0, pts.len())
	for i, t := range pts.t {
		if t > 0 {
			idx = append(idx, i)
		}
	}
	sort.Slice(idx, func(i, j int) bool { return pts.x[idx[i]] < pts.x[idx[j]] })
	var run []float64
	for i, k := range idx {
		run = append(run, pts.t[k])
		if i+1 == len(idx) || pts.x[idx[i+1]] != pts.x[k] {
			xs = append(xs, pts.x[k])
			ts = append(ts, typical(run))
			run = run[:0]
		}
	}
	return xs, ts
}

// pointsPositive counts the points with a positive time.
func pointsPositive(pts *points) int {
	n := 0
	for _, t := range pts.t {
		if t > 0 {
			n++
		}
	}
	return n
}

// relRMS returns the root mean square relative residual of l on the
// typical times at each x of pts, the points it was fitted to.
func relRMS(l Line, pts *points) float64 {
	xs, ts := typicalByX(pts)
	if len(ts) == 0 {
		return 0
	}
	var ss float64
	for i, t := range ts {
		e := (l.At(xs[i]) - t) / t
		ss += e * e
	}
	return math.Sqrt(ss / float64(len(ts)))
}

// typical returns the median of the densest half of v: of the shortest
// interval that holds ⌈n/2⌉ of the n values (at least 2 when there are
// two; the most central of equally short ones), the shorth of D. F. Andrews et al., "Robust Estimates of
// Location" (1972). Contention on a shared machine only slows a run, and
// whole runs at once, so the slowed runs scatter above a tight cluster
// of unslowed ones; the shorth finds that cluster even when half of the
// runs at one size were slowed, where the median would land between the
// two. With symmetric noise it agrees with the median. v is reordered.
func typical(v []float64) float64 {
	n := len(v)
	if n <= 2 {
		return median(v)
	}
	sort.Float64s(v)
	h := (n + 1) / 2
	// Among windows of equal width the most central wins, so that evenly
	// spread values give the median.
	best, mid := 0, float64(n-h)/2
	for i := 1; i+h <= n; i++ {
		w, bw := v[i+h-1]-v[i], v[best+h-1]-v[best]
		if w < bw || w == bw && math.Abs(float64(i)-mid) < math.Abs(float64(best)-mid) {
			best = i
		}
	}
	return median(v[best : best+h])
}

// median returns the median of v (0 for none); v is reordered.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	h := len(v) / 2
	if len(v)%2 == 1 {
		return v[h]
	}
	return (v[h-1] + v[h]) / 2
}

// sortedKeys returns the keys of set in increasing order.
func sortedKeys(set map[int]bool) []int {
	out := make([]int, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// overheadOps are the op kinds OpOverhead measures: the compute ops made
// of blocks, and send.
var overheadOps = [...]string{"forward", "backward", "recompute", "predict", "send"}

// points is a set of (x, t) measurements.
type points struct{ x, t []float64 }

func (p *points) add(x, t float64) { p.x = append(p.x, x); p.t = append(p.t, t) }
func (p *points) len() int         { return len(p.t) }

// fitData is everything the fits need, gathered in one pass over each
// record's block timings, calibration and events.
type fitData struct {
	blocks     [][len(phaseNames)]points
	blockNames []string
	loss       points
	update     points
	transfer   map[string]*points // from the runs' events
	// calibration holds the environment's calibration samples by kind.
	calibration map[string]*points
	overhead    map[string][]float64
	stepNoise   []float64
	samples     map[int]bool
	devices     map[int]bool
}

func newFitData() *fitData {
	d := &fitData{transfer: map[string]*points{}, calibration: map[string]*points{}, overhead: map[string][]float64{}, samples: map[int]bool{}, devices: map[int]bool{}}
	for _, k := range transferKinds {
		d.transfer[k] = &points{}
		d.calibration[k] = &points{}
	}
	return d
}

// opGroup identifies the whole op a per-block event belongs to.
type opGroup struct {
	step, device, stage, micro, shard int
	op                                string
}

// collective is one collective of a step: it can proceed only once
// every device has joined, and each device leaves once its own pieces are
// in, so a device's cost is from the last join to its own end, which
// leaves out waiting for peers.
type collective struct {
	step      int
	op        string
	lastStart int64
}

// collectiveEnd is one device's part in a collective: when it left and
// the bytes it received.
type collectiveEnd struct {
	coll       int
	end, bytes int64
}

// add gathers one record.
func (d *fitData) add(r *profiler.Record) error {
	c := r.Config
	micro, shard := c.Batch/c.Micro, c.Batch/c.Devices
	d.samples[micro] = true
	d.devices[c.Devices] = true
	for _, bt := range r.Blocks {
		if bt.Block < 0 {
			return fmt.Errorf("block timing of block %d", bt.Block)
		}
		for len(d.blocks) <= bt.Block {
			d.blocks = append(d.blocks, [len(phaseNames)]points{})
			d.blockNames = append(d.blockNames, fmt.Sprint(len(d.blockNames)))
		}
		d.blockNames[bt.Block] = bt.Name
		m := float64(bt.Samples)
		if bt.Samples <= 0 {
			m = float64(micro)
		}
		ph := &d.blocks[bt.Block]
		for p, ns := range [...]int64{bt.ForwardNanos, bt.BackwardNanos, bt.RecomputeNanos} {
			if ns > 0 {
				ph[p].add(m, float64(ns))
			}
		}
		if bt.PredictNanos > 0 {
			ph[PhasePredict].add(float64(shard), float64(bt.PredictNanos))
		}
	}
	d.addSteps(r.Steps)
	if cal := r.Env.Calibration; cal != nil {
		for _, s := range cal.Samples {
			pts, ok := d.calibration[s.Kind]
			if !ok || s.Nanos <= 0 {
				continue
			}
			// A collective's sample gives the bytes of each piece; every
			// device receives one piece from each other device.
			bytes := s.Bytes
			if s.Kind != TransferP2P {
				bytes *= int64(max(1, s.Devices-1))
			}
			pts.add(float64(bytes), float64(s.Nanos))
		}
	}
	return d.addEvents(r, micro)
}

// addSteps records the run-to-run noise of a record's steps.
func (d *fitData) addSteps(steps []profiler.Step) {
	if len(steps) < 2 {
		return
	}
	w := make([]float64, len(steps))
	var mean float64
	for i, s := range steps {
		w[i] = float64(s.WallNanos)
		mean += w[i]
	}
	mean /= float64(len(w))
	var ss float64
	for _, x := range w {
		ss += (x - mean) * (x - mean)
	}
	if med := median(w); med > 0 {
		d.stepNoise = append(d.stepNoise, math.Sqrt(ss/float64(len(w)-1))/med)
	}
}

// addEvents gathers transfers, losses, updates and op overheads from the
// events in one pass. A whole op's per-block events come right before
// it (the recorder ends them first).
func (d *fitData) addEvents(r *profiler.Record, micro int) error {
	var pending opGroup
	var pendingSum int64
	pendingN := 0
	var colls []collective
	var ends []collectiveEnd
	for i := range r.Events {
		e := &r.Events[i]
		dur := e.EndNanos - e.StartNanos
		switch e.Op {
		case "forward", "backward", "recompute", "predict":
			g := opGroup{e.Step, e.Device, e.Stage, e.Micro, e.Shard, e.Op}
			if e.Block >= 0 {
				if pendingN == 0 || g != pending {
					pending, pendingSum, pendingN = g, 0, 0
				}
				pendingSum += dur
				pendingN++
				continue
			}
			if pendingN > 0 && g == pending {
				d.overhead[e.Op] = append(d.overhead[e.Op], float64(dur-pendingSum))
			}
			pendingN = 0
		case "send":
			d.overhead["send"] = append(d.overhead["send"], float64(dur))
		case "recv":
			if e.Bytes > 0 && dur > 0 {
				d.transfer[TransferP2P].add(float64(e.Bytes), float64(dur))
			}
		case "allgather", "alltoall":
			j := slices.IndexFunc(colls, func(c collective) bool { return c.step == e.Step && c.op == e.Op })
			if j < 0 {
				colls = append(colls, collective{step: e.Step, op: e.Op, lastStart: e.StartNanos})
				j = len(colls) - 1
			}
			colls[j].lastStart = max(colls[j].lastStart, e.StartNanos)
			ends = append(ends, collectiveEnd{coll: j, end: e.EndNanos, bytes: e.Bytes})
		case "loss":
			d.loss.add(float64(micro), float64(dur))
		case "update":
			if e.Stage < 0 || e.Stage >= len(r.Partition) {
				return fmt.Errorf("update event of stage %d with %d stages", e.Stage, len(r.Partition))
			}
			d.update.add(float64(r.Partition[e.Stage].Params), float64(dur))
		}
	}
	for _, e := range ends {
		c := colls[e.coll]
		if ns := e.end - c.lastStart; e.bytes > 0 && ns > 0 {
			d.transfer[c.op].add(float64(e.bytes), float64(ns))
		}
	}
	return nil
}
