package schedule

import (
	"fmt"
	"strings"
)

// Build validates o and returns the program of the schedule it names.
//
// Every program follows the same semantics, which the runner executes and
// Simulate models:
//
//   - Device k owns stage k (0-based); single has one stage on device 0.
//   - Send is non-blocking: it posts the tensor and returns. Recv blocks
//     until the matching Send has been executed. A Send and a Recv match on
//     (sending device, receiving device, What, Stage, Micro), where Stage
//     is always the sending stage k: for an activation the receiver k+1
//     runs Forward(k+1, j) on it; for a gradient (of stage k's input) the
//     receiver k−1 uses it as the gradient of its output.
//   - AllGather and AllToAll are collectives: every device has the same
//     collectives in the same order, and none proceeds past one until all
//     have reached it.
//   - Loss(j) runs on the last stage right after that stage's Forward of j
//     and produces the output gradient that its Backward of j consumes.
//   - A Forward with Keep = false keeps only its stage input; the device
//     runs Recompute(k, j) before Backward(k, j). A stage's input for a
//     micro-batch is kept from its Forward (or Recv) until its Backward.
//   - Update is each device's last op, once.
//
// Options not used by a schedule (Checkpoint outside gpipe, Prefetch
// outside coop) are ignored. Build applies no defaults: callers set them.
func Build(o Options) (*Program, error) {
	if o.Devices < 1 {
		return nil, fmt.Errorf("build schedule %q: %d devices, want at least 1", o.Name, o.Devices)
	}
	if o.Micro < 1 {
		return nil, fmt.Errorf("build schedule %q: %d micro-batches, want at least 1", o.Name, o.Micro)
	}
	switch o.Name {
	case Single:
		if o.Devices != 1 {
			return nil, fmt.Errorf("build schedule %q: %d devices, single runs on exactly 1", o.Name, o.Devices)
		}
		return single(o), nil
	case GPipe:
		if o.Checkpoint < ExceptLast || o.Checkpoint > Never {
			return nil, fmt.Errorf("build schedule %q: unknown checkpoint mode %d", o.Name, int(o.Checkpoint))
		}
		return gpipe(o), nil
	case OneF1B:
		return oneF1B(o), nil
	case Coop:
		if o.Prefetch < 1 {
			return nil, fmt.Errorf("build schedule %q: prefetch %d, want at least 1", o.Name, o.Prefetch)
		}
		return coop(o), nil
	}
	return nil, fmt.Errorf("build schedule: unknown schedule %q (want %s)", o.Name, strings.Join(Names(), ", "))
}

// newProgram returns an empty program of o with stages stages and one
// device per stage.
func newProgram(o Options, stages int) *Program {
	return &Program{
		Options: o,
		Stages:  stages,
		Devices: make([][]Op, stages),
		MaxLive: make([]int, stages),
	}
}

// The op constructors fill the fields an op kind does not use with None,
// so that programs compare equal field by field.

func forwardOp(stage, micro int, keep bool) Op {
	return Op{Kind: Forward, Stage: stage, Micro: micro, Shard: None, Peer: None, Keep: keep}
}

func recomputeOp(stage, micro int) Op {
	return Op{Kind: Recompute, Stage: stage, Micro: micro, Shard: None, Peer: None}
}

func backwardOp(stage, micro int) Op {
	return Op{Kind: Backward, Stage: stage, Micro: micro, Shard: None, Peer: None}
}

func lossOp(stage, micro int) Op {
	return Op{Kind: Loss, Stage: stage, Micro: micro, Shard: None, Peer: None}
}

func predictOp(stage, shard int) Op {
	return Op{Kind: Predict, Stage: stage, Micro: None, Shard: shard, Peer: None}
}

// sendOp and recvOp take the sending stage, whichever side they are on.
func sendOp(what Payload, stage, micro, peer int) Op {
	return Op{Kind: Send, Stage: stage, Micro: micro, Shard: None, Peer: peer, What: what}
}

func recvOp(what Payload, stage, micro, peer int) Op {
	return Op{Kind: Recv, Stage: stage, Micro: micro, Shard: None, Peer: peer, What: what}
}

func allGatherOp(stages []int) Op {
	return Op{Kind: AllGather, Stage: None, Micro: None, Shard: None, Peer: None, Stages: stages}
}

func allToAllOp() Op {
	return Op{Kind: AllToAll, Stage: None, Micro: None, Shard: None, Peer: None}
}

func updateOp(stage int) Op {
	return Op{Kind: Update, Stage: stage, Micro: None, Shard: None, Peer: None}
}

// pipeForward appends to ops stage k's forward of micro-batch j in a
// pipeline of K stages whose activations travel by Send and Recv: receive
// the input from k−1, run the forward, compute the loss on the last stage,
// send the output to k+1.
func pipeForward(ops []Op, k, K, j int, keep bool) []Op {
	if k > 0 {
		ops = append(ops, recvOp(Activation, k-1, j, k-1))
	}
	ops = append(ops, forwardOp(k, j, keep))
	if k == K-1 {
		ops = append(ops, lossOp(k, j))
	} else {
		ops = append(ops, sendOp(Activation, k, j, k+1))
	}
	return ops
}

// pipeBackward appends stage k's backward of micro-batch j: receive the
// output gradient from k+1 (the last stage has it from its Loss),
// recompute a checkpointed forward, run the backward, send the input
// gradient to k−1.
func pipeBackward(ops []Op, k, K, j int, recompute bool) []Op {
	if k < K-1 {
		ops = append(ops, recvOp(Gradient, k+1, j, k+1))
	}
	if recompute {
		ops = append(ops, recomputeOp(k, j))
	}
	ops = append(ops, backwardOp(k, j))
	if k > 0 {
		ops = append(ops, sendOp(Gradient, k, j, k-1))
	}
	return ops
}

// firstStages returns the stages 0..n−1.
func firstStages(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
