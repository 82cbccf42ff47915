package runner

import (
	"context"
	"fmt"

	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// The cooperative schedule's ops: the prediction step, the weights'
// all-gather and the boundaries' all-to-all.

// predict runs stage op.Stage's forward on this device's shard without
// keeping activations (coop's prediction step), with the stage's own
// weights or the replica the all-gather filled.
func (w *worker) predict(op schedule.Op) error {
	s := w.step
	layer := w.stages[op.Stage]
	if layer == nil {
		layer = w.replicas[op.Stage]
	}
	if layer == nil {
		return fmt.Errorf("no weights for stage %d", op.Stage)
	}
	x := s.shard
	if op.Stage > 0 {
		x = s.predicted[op.Stage]
	}
	shardSize := w.t.cfg.ShardSize()
	p := w.pass(false, w.base+op.Shard*shardSize)
	p.FreezeStats = true // replicas never touch running statistics
	y, _ := w.forward(op, layer, op.Stage, p, x)
	w.dev.Retag(y, tensor.Boundary)
	// x stays: every predicted boundary goes out in the all-to-all, which
	// releases them all.
	s.predicted[op.Stage+1] = y
	return nil
}

// allGather shares the weights of the stages in op.Stages: this device
// contributes its own stage's flat weights if listed and receives the
// others into its replicas.
func (w *worker) allGather(ctx context.Context, op schedule.Op) (int64, error) {
	k, err := w.groupSize(op)
	if err != nil {
		return 0, err
	}
	var local *tensor.Tensor
	dsts := make([]*tensor.Tensor, k)
	var received int64
	for _, st := range op.Stages {
		// A device contributes the stage it owns and receives each other
		// stage from its owner; the pieces are indexed by rank.
		if w.stages[st] != nil {
			local = w.flat // a coop device owns one stage
			continue
		}
		from := w.t.program.Owners[st]
		dsts[from] = w.replicaFlats[st]
		received += dsts[from].Bytes()
	}
	tag := comm.Tag{Step: w.step.step, Kind: "weights", Stage: schedule.None, Micro: schedule.None}
	return received, w.ep.AllGather(ctx, tag, local, dsts)
}

// allToAll sends each predicted boundary to the device that owns its
// stage and gathers this stage's input for the whole mini-batch.
func (w *worker) allToAll(ctx context.Context, op schedule.Op) (int64, error) {
	s := w.step
	k, err := w.groupSize(op)
	if err != nil {
		return 0, err
	}
	shard := w.t.cfg.Batch / k
	parts := make([]*tensor.Tensor, k)
	for st := 1; st < k; st++ {
		parts[st] = s.predicted[st]
	}
	dsts := make([]*tensor.Tensor, k)
	var received int64
	if w.k > 0 {
		s.boundary = w.dev.Alloc(tensor.Boundary, w.t.shapeIn(w.k, w.t.cfg.Batch)...)
		for p := range dsts {
			dsts[p] = s.boundary.Slice(p*shard, (p+1)*shard)
			if p != w.k {
				received += dsts[p].Bytes()
			}
		}
	}
	tag := comm.Tag{Step: s.step, Kind: "boundary", Stage: schedule.None, Micro: schedule.None}
	err = w.ep.AllToAll(ctx, tag, parts, dsts)
	for _, d := range dsts {
		d.Release()
	}
	for st, t := range s.predicted {
		t.Release()
		delete(s.predicted, st)
	}
	return received, err
}

// groupSize returns the number of devices of collective op's group,
// checking that the group is every device of the run: the transports'
// collectives (comm.Endpoint's AllGather and AllToAll) span every rank
// and index their pieces by rank, so a collective over a subset of the
// devices, such as data-parallel replicas' all-reduce, needs collectives
// over a sub-group first.
func (w *worker) groupSize(op schedule.Op) (int, error) {
	group := w.t.program.GroupOf(op)
	if size := w.ep.Size(); len(group) != size {
		return 0, fmt.Errorf("%v over group %d, devices %v: the transport's collectives span all %d devices, not a subset",
			op, op.Group, group, size)
	}
	return len(group), nil
}
