package predictor

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/pipecast/pipecast/profiler"
)

// ErrNoMeasured is returned by Fit when no record is a measured run.
var ErrNoMeasured = errors.New("no measured run records to fit")

// ErrReplicas is the error of what the predictor cannot do with data-
// parallel replicas (schedule.Options.Replicas > 1) yet: fit runs of
// them (forecasts of replicas come from runs of one replica and the
// calibration of their gradient sums), and forecast them with a
// straggler.
var ErrReplicas = errors.New("not supported for data-parallel replicas yet")

// ErrMixedHugePages is returned by Fit when the records of one key were
// measured with tensors on huge pages and without (environment
// huge_pages "advised" against "off" or "unavailable"): their step times
// differ by 10–20 % on the CPU backend, and one fit over both would
// forecast neither. Records that do not say (older ones) mix with any.
var ErrMixedHugePages = errors.New("records measured with and without huge pages")

// The transfer kinds a cost model prices.
const (
	TransferP2P       = "p2p"
	TransferAllGather = "allgather"
	TransferAllToAll  = "alltoall"
	// TransferDPAllReduce is the gradient sum of two data-parallel
	// replicas (schedule.DPAllReduce), as the calibration times it
	// (runner.DPAllReduceKind): x is the bytes each replica receives.
	TransferDPAllReduce = "dp-allreduce"
)

var transferKinds = [...]string{TransferP2P, TransferAllGather, TransferAllToAll, TransferDPAllReduce}

// phaseNames are the phases as record events and reports name them.
var phaseNames = [...]string{PhaseForward: "forward", PhaseBackward: "backward", PhaseRecompute: "recompute", PhasePredict: "predict",
	PhaseBackwardInput: "backward-input", PhaseBackwardWeight: "backward-weight"}

// splitShare is the share of a block's backward line that a split phase
// falls back to when no record measured it: half each, as a convolution's
// or a linear layer's input gradient and weight gradient cost the same
// multiply-accumulates.
const splitShare = 0.5

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
// Block times are lines t = a + b·m in the samples per call m (a
// language model's: t = a + b·m·S + c·m·S² in its tokens m·S and its
// sequence length S, c kept only where held-out points support it; see
// fitLine), fitted per block and phase by non-negative least squares of
// the relative residuals (timing noise is roughly proportional to the
// time, and a forecast at m = 1 matters as much as one at m = 64) to the
// typical time at each measured m, a robust estimate that ignores runs a
// competing process slowed (see fitLine). Every Line's Points counts the
// measurements and its residuals are those of the typical times.
// Transfers are t = α + bytes/β per kind, updates a line in the stage's
// parameters, the loss a line in the micro-batch's samples (a language
// model's: its tokens); what a whole compute op takes beyond its blocks
// is a median overhead per op kind.
// Last, a scale per op kind corrects the sum of typical times to the
// mean time a step's ops take (see fitScales).
type CostModel struct {
	Key Key

	blocks   []blockFit // indexed by block
	loss     Line
	update   Line
	transfer map[string]Line
	// replicaSum is the calibration's replicas' gradient sums, the
	// typical time at each size it measured (x bytes, t ns, increasing
	// x), which ReplicaSum interpolates; nil without such samples.
	replicaSum *curve
	overhead   map[string]float64
	scale      map[string]opScales
	reports    []FitReport
	relErr     float64
	samples    []int
	seqs       []int
	devices    []int
	// interference is the co-location slowdown per number of devices
	// computing at once (see fitInterference); nil: none applied.
	interference []profiler.InterferenceLevel
	// balanceTimes are the block times the records' partitions by time
	// balanced, per micro-batch size and sequence length (see
	// fitBalanceTimes).
	balanceTimes map[callShape][]float64
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
// samples, for a language model sequences of seq tokens (0 for any other
// model), at any sequence length: its cost model spans them. Recompute
// and predict fall back to the forward line when they were never
// measured (a recompute is a forward; a prediction is a forward that
// keeps no activations, so the forward line is a slight overestimate),
// and the halves of a split backward to half the backward line each;
// Reports names every such fallback. Block returns an error for a block,
// or a forward or backward phase, the records never measured.
func (c *CostModel) Block(block int, phase Phase, samples, seq int) (float64, error) {
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
	return math.Max(0, b.lines[phase].AtSeq(callSize(samples, seq), float64(seq))), nil
}

// OpOverhead returns the ns a whole op of kind op ("forward",
// "backward", "recompute", "predict") takes beyond the sum of its
// blocks: the median over the recorded ops. For "send" it is the median
// duration of a send (handing the tensor to the transport; the copy is
// the receiver's and priced by Transfer). For every other kind it is 0:
// loss, update and transfers are priced by their own fits.
func (c *CostModel) OpOverhead(op string) float64 { return c.overhead[op] }

// Loss returns the ns of the loss of one micro-batch of samples samples,
// for a language model sequences of seq tokens (0 for any other model).
func (c *CostModel) Loss(samples, seq int) float64 {
	return math.Max(0, c.loss.At(callSize(samples, seq)))
}

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
// (fallbacks named as such), the loss, the update, each transfer kind,
// each op overhead and each op scale.
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

// Seqs returns the sequence lengths a language model's records measured,
// in increasing order; none for any other model.
func (c *CostModel) Seqs() []int { return slices.Clone(c.seqs) }

// Devices returns the device counts K the records measured, in
// increasing order.
func (c *CostModel) Devices() []int { return slices.Clone(c.devices) }

// Fit fits a cost model for every Key of the measured records among recs
// (predicted records are ignored, and so are runs with an injected
// straggler, whose slowed device says nothing of the blocks' costs; a
// forecast of a straggler run scales the straggler's compute ops by its
// factor). It returns ErrNoMeasured when there is none, and an error for
// a record whose configuration cannot be read.
func Fit(recs []profiler.Record) (map[Key]*CostModel, error) {
	groups := map[Key][]*profiler.Record{}
	var order []Key
	replicas := 0
	for i := range recs {
		r := &recs[i]
		if !Fitted(r) {
			if r.Kind == profiler.KindMeasured && r.Config.Replicas > 1 {
				replicas++
			}
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
	if len(groups) == 0 && replicas > 0 {
		return nil, fmt.Errorf("fit: %w: every one of the %d measured runs has data-parallel replicas, whose fit is %w; forecasts of replicas need runs of one", ErrNoMeasured, replicas, ErrReplicas)
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("fit: %w", ErrNoMeasured)
	}
	out := make(map[Key]*CostModel, len(groups))
	for _, k := range order {
		if err := sameHugePages(groups[k]); err != nil {
			return nil, fmt.Errorf("fit %s: %w", k, err)
		}
		m, err := fitKey(k, groups[k])
		if err != nil {
			return nil, fmt.Errorf("fit %s: %w", k, err)
		}
		out[k] = m
	}
	return out, nil
}

// Fitted reports whether Fit fits r: a measured run, on devices alike
// (a straggler run measures the straggler, a run of devices of different
// threads each device, not the blocks on the reference device: forecasts
// of them scale the fitted costs by each device's slowdown) and of one
// replica (a run of replicas adds their gradient sums, priced from the
// calibration's instead: ErrReplicas).
func Fitted(r *profiler.Record) bool {
	return r.Kind == profiler.KindMeasured && r.Config.DevicesAlike() && r.Config.Replicas <= 1
}

// sameHugePages returns ErrMixedHugePages, naming a record of each
// setting, when recs say different things of huge pages.
func sameHugePages(recs []*profiler.Record) error {
	var first *profiler.Record
	for _, r := range recs {
		switch {
		case r.Env.HugePages == "":
		case first == nil:
			first = r
		case r.Env.HugePages != first.Env.HugePages:
			return fmt.Errorf("%w: run %s has huge_pages %q, run %s %q; give --data the runs of one setting",
				ErrMixedHugePages, first.ID, first.Env.HugePages, r.ID, r.Env.HugePages)
		}
	}
	return nil
}

// fitKey fits the cost model of one key's records.
func fitKey(k Key, recs []*profiler.Record) (*CostModel, error) {
	d := newFitData()
	for _, r := range asRounds(recs) {
		if err := d.add(r); err != nil {
			return nil, fmt.Errorf("record %s: %w", r.ID, err)
		}
	}
	c := &CostModel{Key: k, transfer: map[string]Line{}, overhead: map[string]float64{}}
	if err := c.fitBlocks(d, quadBlocks(k)); err != nil {
		return nil, err
	}
	var err error
	if c.loss, err = c.fitReported("loss", c.sizeVariable(), &d.loss); err != nil {
		return nil, err
	}
	if c.update, err = c.fitReported("update", "params", &d.update); err != nil {
		return nil, err
	}
	if err := c.fitTransfers(d); err != nil {
		return nil, err
	}
	c.fitOverheads(d)
	c.fitInterference(recs)
	c.fitScales(recs)
	c.fitBalanceTimes(recs)
	c.relErr = math.Hypot(c.blockResidual(d), profiler.Median(d.stepNoise))
	c.samples = sortedKeys(d.samples)
	c.seqs = sortedKeys(d.seqs)
	c.devices = sortedKeys(d.devices)
	return c, nil
}

// fitBlocks fits every block's measured phases and fills the fallbacks.
// A language model's block may keep an m·S² term where quad (see
// quadBlocks) allows it, every block where quad is nil.
func (c *CostModel) fitBlocks(d *fitData, quad []bool) error {
	c.blocks = make([]blockFit, len(d.blocks))
	for b := range d.blocks {
		bf := &c.blocks[b]
		bf.name = d.blockNames[b]
		for p := range phaseNames {
			pts := &d.blocks[b][p]
			if pts.len() == 0 {
				continue
			}
			l, err := fitLine(pts, quad == nil || b < len(quad) && quad[b])
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
		for _, p := range []Phase{PhaseBackwardInput, PhaseBackwardWeight} {
			if !bf.have[p] && bf.have[PhaseBackward] {
				bf.lines[p], bf.have[p], bf.fallback[p] = bf.lines[PhaseBackward].scaled(splitShare), true, true
			}
		}
		for p := range phaseNames {
			if !bf.have[p] {
				continue
			}
			name := fmt.Sprintf("block %s %s", bf.name, Phase(p))
			switch {
			case bf.fallback[p] && (Phase(p) == PhaseBackwardInput || Phase(p) == PhaseBackwardWeight):
				name += " (never measured: half of backward's line)"
			case bf.fallback[p]:
				name += " (never measured: forward's line)"
			}
			c.reports = append(c.reports, FitReport{Name: name, Variable: c.sizeVariable(), Unit: "ns", Line: bf.lines[p]})
		}
	}
	return nil
}

// sizeVariable names what block and loss times are fitted in: a language
// model's tokens, any other model's samples.
func (c *CostModel) sizeVariable() string {
	if c.Key.SpansSeq() {
		return "tokens"
	}
	return "samples"
}

// fitReported fits pts (an empty set gives the zero line) and reports it.
func (c *CostModel) fitReported(name, variable string, pts *points) (Line, error) {
	if pts.len() == 0 {
		c.reports = append(c.reports, FitReport{Name: name + " (no data: priced 0)", Variable: variable, Unit: "ns"})
		return Line{}, nil
	}
	l, err := fitLine(pts, false)
	if err != nil {
		return Line{}, fmt.Errorf("%s: %w", name, err)
	}
	c.reports = append(c.reports, FitReport{Name: name, Variable: variable, Unit: "ns", Line: l})
	return l, nil
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
	return profiler.Median(rel)
}
