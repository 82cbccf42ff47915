package runner

import (
	"context"
	"fmt"
	"slices"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// Tied parameters: each device that holds a stage using a parameter the
// model ties (models.Tie: GPT-2's embedding and LM head) holds one copy
// of it, shared by its stages (placement cuts them from one model), and
// the program's AllReduce sums the devices' copies' gradients before the
// update; over a group of one device there is one copy, and nothing to
// sum.

// tied is one tied parameter as a device holds it: its index among the
// model's ties and the distinct copies of it in the device's stages.
type tied struct {
	index  int
	copies []*models.Param
}

// tiedCopies returns the model's tied parameters whose uses fall on
// exactly op.Stages (schedule.Program.Tie adds one AllReduce for every
// such set of stages), each with this device's copies, in increasing
// stage order. A stage holds one copy however many of its blocks use
// the parameter: they are one *Param in the stage's layers.
func (w *worker) tiedCopies(op schedule.Op) ([]tied, error) {
	var out []tied
	for i, tie := range w.t.ties {
		stages, err := tie.Stages(w.t.bounds)
		if err != nil {
			return nil, err
		}
		if !slices.Equal(stages, op.Stages) {
			continue
		}
		tp := tied{index: i}
		for u, b := range tie.Blocks {
			s, _ := models.StageOf(w.t.bounds, b) // tie.Stages found it
			if w.stages[s] == nil {
				continue // another device's stage
			}
			params := models.Params(w.stages[s])
			at := slices.IndexFunc(params, func(p models.NamedParam) bool { return p.Name == tie.Names[u] })
			if at < 0 {
				return nil, fmt.Errorf("stage %d has no parameter %s, which the model ties", s, tie.Names[u])
			}
			if p := params[at].Param; !slices.Contains(tp.copies, p) {
				tp.copies = append(tp.copies, p)
			}
		}
		if len(tp.copies) == 0 {
			return nil, fmt.Errorf("device %d holds no copy of tied parameter %v", w.k, tie.Names)
		}
		out = append(out, tp)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("stages %v share no parameter the model ties", op.Stages)
	}
	return out, nil
}

// allReduce sums the gradients of the parameters that stages op.Stages
// share over the devices of op's group, and returns the bytes received.
// The transports' collectives span every rank (see groupSize), so the
// sum is made of point-to-point transfers, which work over any subset:
// every device sends each other member the sum of its own copies'
// gradients, receives theirs, and sets each of its copies' gradients to
// the sum over the members in increasing device order, so that every
// member computes the same float32 values. A copy without a gradient yet
// contributes zeros (and is given one).
func (w *worker) allReduce(ctx context.Context, op schedule.Op) (int64, error) {
	params, err := w.tiedCopies(op)
	if err != nil {
		return 0, err
	}
	group := w.t.program.GroupOf(op)
	var received int64
	for _, tp := range params {
		n, err := w.reduceTied(ctx, op, group, tp)
		received += n
		if err != nil {
			return received, err
		}
	}
	return received, nil
}

// reduceTied sums one tied parameter's gradients over group.
func (w *worker) reduceTied(ctx context.Context, op schedule.Op, group []int, tp tied) (int64, error) {
	grads := make([]*tensor.Tensor, len(tp.copies))
	for i, p := range tp.copies {
		grads[i] = p.GradFor(w.dev)
	}
	shape := grads[0].Shape()
	// own is what this device sends: a snapshot apart from the gradients,
	// since the in-process transport copies it only when the receiver
	// asks, and no one writes into it until every send has been read.
	own := w.dev.Alloc(tensor.Comm, shape...)
	defer own.Release()
	w.dev.Copy(own, grads[0])
	for _, g := range grads[1:] {
		w.dev.Add(own, own, g)
	}
	for _, d := range group {
		if d == w.k {
			continue
		}
		if err := w.ep.Send(ctx, d, w.tiedTag(op, w.k, tp), own); err != nil {
			return 0, err
		}
	}
	parts := make([]*tensor.Tensor, len(group))
	defer func() {
		for i, p := range parts {
			if group[i] != w.k {
				p.Release()
			}
		}
	}()
	var received int64
	for i, d := range group {
		if d == w.k {
			parts[i] = own
			continue
		}
		parts[i] = w.dev.Alloc(tensor.Comm, shape...)
		if err := w.ep.Recv(ctx, d, w.tiedTag(op, d, tp), parts[i]); err != nil {
			return received, err
		}
		received += parts[i].Bytes()
	}
	sum := grads[0]
	w.dev.Copy(sum, parts[0])
	for _, p := range parts[1:] {
		w.dev.Add(sum, sum, p)
	}
	for _, g := range grads[1:] {
		w.dev.Copy(g, sum)
	}
	return received, nil
}

// tiedTag is the tag of device from's part of tied parameter tp in op:
// Stage is that device's first stage among op.Stages (its op's Stage),
// which tells the two directions between a pair apart, and Micro the
// parameter's index among the model's ties, which tells two parameters
// tied over the same stages apart.
func (w *worker) tiedTag(op schedule.Op, from int, tp tied) comm.Tag {
	stage := op.Stages[slices.IndexFunc(op.Stages, func(s int) bool { return w.t.program.Owners[s] == from })]
	return comm.Tag{Step: w.step.step, Kind: "tied-gradient", Stage: stage, Micro: tp.index}
}
