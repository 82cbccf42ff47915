package predictor

import (
	"fmt"
	"math"
	"slices"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner"
	"github.com/pipecast/pipecast/schedule"
)

// opKey identifies an op within one device's program: no program has two
// ops of a device that agree on all of these.
type opKey struct {
	kind                      schedule.OpKind
	stage, micro, shard, peer int
	what                      schedule.Payload
	// stages tells apart the all-reduces of a device that start at the
	// same stage: fmt's form of Op.Stages, "" for an op without.
	stages string
}

func keyOf(o schedule.Op) opKey {
	k := opKey{kind: o.Kind, stage: o.Stage, micro: o.Micro, shard: o.Shard, peer: o.Peer, what: o.What}
	if o.Kind == schedule.AllReduce {
		k.stages = fmt.Sprint(o.Stages)
	}
	return k
}

// pricedOp is an op's forecast: its duration, the bytes it moves and, for
// a compute op, its blocks' fitted times in the order they run.
type pricedOp struct {
	nanos  float64
	bytes  int64
	blocks []int
	times  []float64
}

// simulation is one forecast under way.
type simulation struct {
	c     *CostModel
	cfg   config.Config
	model *models.Model
	// seq is the model's sequence length, 0 for a model without one.
	seq  int
	prog *schedule.Program
	meta *metaStep
	// unscaled prices ops without the fitted scales, as fitScales needs.
	unscaled bool
	ops      []map[opKey]*pricedOp // ops[d] prices device d's ops
}

// cost is Simulate's cost function: the price of every op, set by price.
func (s *simulation) cost(d int, o schedule.Op) float64 {
	if p, ok := s.ops[d][keyOf(o)]; ok {
		return p.nanos
	}
	return math.NaN() // Simulate reports it; price covers every op
}

// price forecasts every op of every device, with the bytes each moves
// from the meta step: its whole-op events are the program's ops in order.
func (s *simulation) price() error {
	s.ops = make([]map[opKey]*pricedOp, len(s.prog.Devices))
	for d, ops := range s.prog.Devices {
		var moved []int64
		if d < len(s.meta.devices) {
			for _, e := range s.meta.devices[d].Events {
				if e.Block == profiler.WholeOp {
					moved = append(moved, e.Bytes)
				}
			}
		}
		s.ops[d] = map[opKey]*pricedOp{}
		for i, o := range ops {
			var bytes int64
			if i < len(moved) {
				bytes = moved[i]
			}
			p, err := s.priceOp(o, bytes)
			if err != nil {
				return fmt.Errorf("device %d: %v: %w", d, o, err)
			}
			if o.Kind.Computes() {
				// A slower device (its speed, the straggler's factor)
				// computes that many times as long; its blocks keep
				// their shares of the op.
				p.nanos *= s.cfg.Slowdown(d)
			}
			s.ops[d][keyOf(o)] = p
		}
	}
	return nil
}

// priceOp forecasts one op that moves bytes between devices.
func (s *simulation) priceOp(o schedule.Op, bytes int64) (*pricedOp, error) {
	mb, seq := s.cfg.MicroBatchSize(), s.seq
	p := &pricedOp{bytes: bytes}
	var err error
	switch o.Kind {
	case schedule.Forward:
		err = s.priceBlocks(p, o, PhaseForward, mb)
	case schedule.Recompute:
		err = s.priceBlocks(p, o, PhaseRecompute, mb)
	case schedule.Backward:
		err = s.priceBlocks(p, o, PhaseBackward, mb)
	case schedule.BackwardInput:
		err = s.priceBlocks(p, o, PhaseBackwardInput, mb)
	case schedule.BackwardWeight:
		err = s.priceBlocks(p, o, PhaseBackwardWeight, mb)
	case schedule.Predict:
		err = s.priceBlocks(p, o, PhasePredict, s.cfg.ShardSize())
	case schedule.Loss:
		p.nanos = s.c.Loss(mb, seq)
	case schedule.Send:
		p.nanos = s.c.OpOverhead(o.Kind.String())
	case schedule.Recv:
		p.nanos = s.c.Transfer("p2p", bytes)
	case schedule.AllGather, schedule.AllToAll:
		p.nanos = s.c.Transfer(o.Kind.String(), bytes)
	case schedule.AllReduce:
		p.nanos = s.allReduce(o, bytes)
	case schedule.DPAllReduce:
		if r := s.prog.Replicas(); r > 1 {
			p.nanos = s.c.ReplicaSum(runner.SumBytes(bytes, r), r)
		}
	case schedule.Update:
		// The update steps every stage the device owns, as the fit
		// measured it.
		var params int64
		for _, st := range s.prog.StagesOf(s.prog.Owners[o.Stage]) {
			for _, b := range s.model.Blocks[s.cfg.Bounds[st]:s.cfg.Bounds[st+1]] {
				params += b.Cost.Params
			}
		}
		p.nanos = s.c.Update(params)
	default:
		return nil, fmt.Errorf("no cost for op kind %v", o.Kind)
	}
	if err != nil {
		return nil, err
	}
	p.nanos = max(p.nanos, 0) // a fitted line may dip below zero off its data
	if !s.unscaled {
		p.nanos *= s.c.Scale(o.Kind.String(), s.cfg.Schedule.Devices, int(callSize(mb, seq)))
	}
	return p, nil
}

// priceBlocks prices a compute op of stage o.Stage: its blocks at the
// given samples (in reverse for a backward, as the runner runs them) plus
// the op's overhead. Recompute and predict fall back to the forward fit
// where they were never measured.
func (s *simulation) priceBlocks(p *pricedOp, o schedule.Op, phase Phase, samples int) error {
	lo, hi := s.cfg.Bounds[o.Stage], s.cfg.Bounds[o.Stage+1]
	for b := lo; b < hi; b++ {
		p.blocks = append(p.blocks, b)
	}
	if phase == PhaseBackward || phase == PhaseBackwardInput || phase == PhaseBackwardWeight {
		slices.Reverse(p.blocks)
	}
	for _, b := range p.blocks {
		t, err := s.c.Block(b, phase, samples, s.seq)
		if err != nil && (phase == PhaseRecompute || phase == PhasePredict) {
			t, err = s.c.Block(b, PhaseForward, samples, s.seq)
		}
		if err != nil {
			return err
		}
		t = max(t, 0)
		p.times = append(p.times, t)
		p.nanos += t
	}
	p.nanos += max(s.c.OpOverhead(o.Kind.String()), 0)
	return nil
}

// ReplicaSum returns the ns of a DPAllReduce of a stage of gradBytes of
// gradients over replicas replicas: its buckets of at most
// runner.DPBucketBytes, each at the calibration's time of two replicas'
// sum at its size (interpolated between the sizes it measured; without
// such samples the dp-allreduce line, which is p2p's), times the sum's
// passes over a bucket at R replicas over those at two
// (runner.SumPasses). One replica sums nothing.
func (c *CostModel) ReplicaSum(gradBytes int64, replicas int) float64 {
	if replicas < 2 || gradBytes <= 0 {
		return 0
	}
	var t float64
	for g := gradBytes; g > 0; g -= runner.DPBucketBytes {
		b := min(g, runner.DPBucketBytes)
		if c.replicaSum != nil {
			t += c.replicaSum.at(float64(b))
		} else {
			t += c.Transfer(TransferDPAllReduce, b)
		}
	}
	return t * runner.SumPasses(replicas) / runner.SumPasses(2)
}

// TransferModel returns a cost model of cal's transfers alone, fitted as
// Fit fits a record's calibration without its events: what prices
// transfers and the replicas' gradient sums (ReplicaSum) from a
// calibration, to check them against measured ones.
func TransferModel(cal *profiler.Calibration) (*CostModel, error) {
	c := &CostModel{transfer: map[string]Line{}}
	d := newFitData()
	d.addCalibration(cal)
	if err := c.fitTransfers(d); err != nil {
		return nil, err
	}
	return c, nil
}

// allReduce prices AllReduce o, whose device received bytes: the other
// members' parts, one a member, each the sum of a tied parameter's
// gradients. Every member sends its part to each other and receives
// theirs (worker.allReduce), all sends posted before the receives: with
// two members one transfer each way at once, so the time of one
// point-to-point transfer of a part; with n, n−1 of them in turn. A group
// of one device moves nothing; summing its copies is priced at nothing,
// like the hand-over between two stages of one device.
func (s *simulation) allReduce(o schedule.Op, bytes int64) float64 {
	others := len(s.prog.GroupOf(o)) - 1
	if others < 1 {
		return 0
	}
	return float64(others) * s.c.Transfer(TransferP2P, bytes/int64(others))
}
