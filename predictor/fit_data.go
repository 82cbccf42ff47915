package predictor

import (
	"fmt"
	"math"
	"slices"

	"github.com/pipecast/pipecast/profiler"
)

// points is a set of (x, t) measurements; s holds each one's sequence
// length where a language model's blocks were measured (see addSeq), and
// is nil otherwise.
type points struct{ x, s, t []float64 }

func (p *points) add(x, t float64) { p.x = append(p.x, x); p.t = append(p.t, t) }
func (p *points) len() int         { return len(p.t) }

// addSeq adds a measurement at x of sequences of seq tokens.
func (p *points) addSeq(x, seq, t float64) {
	for len(p.s) < len(p.x) {
		p.s = append(p.s, 0)
	}
	p.add(x, t)
	p.s = append(p.s, seq)
}

// seqAt returns the sequence length of the i-th point, 0 for none.
func (p *points) seqAt(i int) float64 {
	if i < len(p.s) {
		return p.s[i]
	}
	return 0
}

// callSize is the size of one call of a block (or a loss) on samples
// samples, as the fits take it: a language model's tokens m·S, where seq
// is its sequence length S, the samples m of any other model (seq 0).
// Every part of a decoder but attention's scores and context costs the
// same per token, however the tokens fall into sequences.
func callSize(samples, seq int) float64 {
	if seq > 0 {
		return float64(samples) * float64(seq)
	}
	return float64(samples)
}

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
	seqs        map[int]bool
	devices     map[int]bool
}

func newFitData() *fitData {
	d := &fitData{transfer: map[string]*points{}, calibration: map[string]*points{}, overhead: map[string][]float64{},
		samples: map[int]bool{}, seqs: map[int]bool{}, devices: map[int]bool{}}
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
	micro, shard, seq := c.MicroBatchSize(), c.ShardSize(), c.Seq
	d.samples[micro] = true
	if seq > 0 {
		d.seqs[seq] = true
	}
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
		m := bt.Samples
		if bt.Samples <= 0 {
			m = micro
		}
		ph := &d.blocks[bt.Block]
		for p, ns := range [...]int64{PhaseForward: bt.ForwardNanos, PhaseBackward: bt.BackwardNanos, PhaseRecompute: bt.RecomputeNanos,
			PhaseBackwardInput: bt.BackwardInputNanos, PhaseBackwardWeight: bt.BackwardWeightNanos} {
			if ns > 0 {
				ph[p].addBlock(m, seq, float64(ns))
			}
		}
		if bt.PredictNanos > 0 {
			ph[PhasePredict].addBlock(shard, seq, float64(bt.PredictNanos))
		}
	}
	d.addSteps(r.Steps)
	d.addCalibration(r.Env.Calibration)
	return d.addEvents(r, micro)
}

// addCalibration adds cal's transfer samples (none for nil).
func (d *fitData) addCalibration(cal *profiler.Calibration) {
	if cal == nil {
		return
	}
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

// addBlock adds a block's time of one call on samples samples of
// sequences of seq tokens (0: not a language model): at x = samples for
// any other model, as always, and at its tokens with its sequence length
// for a language model.
func (p *points) addBlock(samples, seq int, t float64) {
	if seq > 0 {
		p.addSeq(callSize(samples, seq), float64(seq), t)
		return
	}
	p.add(float64(samples), t)
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
	if med := profiler.Median(w); med > 0 {
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
		switch {
		case slices.Contains(blockOps, e.Op):
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
		case e.Op == "send":
			d.overhead["send"] = append(d.overhead["send"], float64(dur))
		case e.Op == "recv":
			if e.Bytes > 0 && dur > 0 {
				d.transfer[TransferP2P].add(float64(e.Bytes), float64(dur))
			}
		case e.Op == "allgather" || e.Op == "alltoall":
			j := slices.IndexFunc(colls, func(c collective) bool { return c.step == e.Step && c.op == e.Op })
			if j < 0 {
				colls = append(colls, collective{step: e.Step, op: e.Op, lastStart: e.StartNanos})
				j = len(colls) - 1
			}
			colls[j].lastStart = max(colls[j].lastStart, e.StartNanos)
			ends = append(ends, collectiveEnd{coll: j, end: e.EndNanos, bytes: e.Bytes})
		case e.Op == "loss":
			// A language model's loss is a softmax over its vocabulary
			// for every token.
			d.loss.add(callSize(micro, r.Config.Seq), float64(dur))
		case e.Op == "update":
			if e.Stage < 0 || e.Stage >= len(r.Partition) {
				return fmt.Errorf("update event of stage %d with %d stages", e.Stage, len(r.Partition))
			}
			// The update steps every stage the device owns (several in
			// interleaved).
			var params int64
			for _, st := range r.Partition {
				if st.Device == e.Device {
					params += st.Params
				}
			}
			d.update.add(float64(params), float64(dur))
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
