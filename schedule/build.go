package schedule

import "fmt"

// Build validates o and returns the program of the schedule it names.
//
// Every program follows the same semantics, which the runner executes and
// Simulate models:
//
//   - Device k owns the stages s with Owners[s] == k and computes only on
//     them (coop's Predict aside). In interleaved with v chunks there are
//     K·v stages and stage s lives on device s mod K, so device k owns k,
//     k+K, k+2K, …; in every other schedule Owners is the identity
//     (single: one stage on device 0).
//   - Send is non-blocking: it posts the tensor and returns. Recv blocks
//     until the matching Send has been executed. A Send and a Recv match on
//     (sending device, receiving device, What, Stage, Micro), where Stage
//     is always the sending stage s: an activation of s goes from Owners[s]
//     to Owners[s+1], which runs Forward(s+1, j) on it; a gradient of s's
//     input goes from Owners[s] to Owners[s−1], which uses it as the
//     gradient of its output. Peer is never the device itself: when both
//     stages are on one device (interleaved with K = 1) there is no
//     transfer, the tensor is handed over in place, and the Forward of
//     (s, j) takes the output of the device's earlier Forward of (s−1, j)
//     (a backward of (s, j) the input gradient of its earlier backward of
//     (s+1, j)).
//   - AllGather, AllToAll and AllReduce are collectives over the group of
//     devices Groups[o.Group]: every device of the group has the group's
//     collectives in the same order, no device outside it takes part, and
//     none proceeds past one until every device of the group has reached
//     it. Build adds no AllReduce: Program.Tie does, for a parameter that
//     stages share, right before the Update of each of their owners.
//   - Before its first op device k reads Loads[k] from the data loader:
//     the owner of stage 0 the inputs its forwards slice micro-batches
//     from, the owner of the last stage the labels its losses slice, and
//     coop's devices the shard their prediction step runs on.
//   - Loss(j) runs on the owner of the last stage S−1 right after that
//     stage's Forward of j and produces the output gradient that its
//     backward of j consumes.
//   - A Forward with Keep = false keeps only its stage input; the device
//     runs Recompute(s, j) before Backward(s, j). A stage's input for a
//     micro-batch is kept from its Forward (or Recv) until its Backward.
//   - In the split schedules (Splits: zb-h1, zb-h2) each (stage, micro-
//     batch) has a Forward, then a BackwardInput, which needs the output
//     gradient and produces the input gradient (the gradient's Send follows
//     it), then a BackwardWeight; there is no Backward and no Recompute. A
//     pair's activations are live from its Forward to its BackwardWeight.
//     The other schedules run one Backward per pair instead.
//   - MaxLive[k] bounds the (stage, micro-batch) pairs live on device k.
//   - A program of replicas (Options.Replicas ≥ 2) is one pipeline of
//     the job (see Program.Replicas): each device sums each of its
//     stages' gradients with its replicas' in a DPAllReduce, after the
//     stage's last backward and the send that follows it.
//   - Update is each device's last op, once; its Stage is the device's
//     first stage, and it updates every stage the device owns.
//
// Options not used by a schedule (Checkpoint outside gpipe, Prefetch
// outside coop, Virtual outside interleaved) are ignored. Build applies no
// defaults (Options.WithDefaults does) and refuses what Options.Check
// refuses.
func Build(o Options) (*Program, error) {
	if err := o.Check(); err != nil {
		return nil, fmt.Errorf("build schedule %q: %w", o.Name, err)
	}
	var p *Program
	switch o.Name {
	case Single:
		p = single(o)
	case GPipe:
		p = gpipe(o)
	case OneF1B:
		p = oneF1B(o)
	case Coop:
		p = coop(o)
	case Interleaved:
		p = interleaved(o)
	case ZBH1:
		p = zbH1(o)
	case ZBH2:
		p = zbH2(o)
	case ZBV:
		p = zbV(o)
	case DualPipeV:
		p = dualPipeV(o)
	default:
		panic("schedule: Check passed unknown schedule " + o.Name)
	}
	// Every schedule's first and last stages read the same data.
	addPipelineLoads(p)
	addReplicaReduces(p)
	return p, nil
}

// newProgram returns an empty program of o: o.Stages() stages on
// o.Devices devices, stage s on device o.Owner(s).
func newProgram(o Options) *Program {
	p := &Program{
		Options: o,
		Stages:  o.Stages(),
		Owners:  make([]int, o.Stages()),
		Devices: make([][]Op, o.Devices),
		MaxLive: make([]int, o.Devices),
		Loads:   make([][]Load, o.Devices),
	}
	for s := range p.Owners {
		p.Owners[s] = o.Owner(s)
	}
	return p
}

// The op constructors fill the fields an op kind does not use with None,
// so that programs compare equal field by field.

func forwardOp(stage, micro int, keep bool) Op {
	return Op{Kind: Forward, Stage: stage, Micro: micro, Shard: None, Peer: None, Keep: keep, Group: None}
}

func recomputeOp(stage, micro int) Op {
	return Op{Kind: Recompute, Stage: stage, Micro: micro, Shard: None, Peer: None, Group: None}
}

func backwardOp(stage, micro int) Op {
	return Op{Kind: Backward, Stage: stage, Micro: micro, Shard: None, Peer: None, Group: None}
}

func lossOp(stage, micro int) Op {
	return Op{Kind: Loss, Stage: stage, Micro: micro, Shard: None, Peer: None, Group: None}
}

func predictOp(stage, shard int) Op {
	return Op{Kind: Predict, Stage: stage, Micro: None, Shard: shard, Peer: None, Group: None}
}

// sendOp and recvOp take the sending stage, whichever side they are on.
func sendOp(what Payload, stage, micro, peer int) Op {
	return Op{Kind: Send, Stage: stage, Micro: micro, Shard: None, Peer: peer, What: what, Group: None}
}

func recvOp(what Payload, stage, micro, peer int) Op {
	return Op{Kind: Recv, Stage: stage, Micro: micro, Shard: None, Peer: peer, What: what, Group: None}
}

// allGatherOp and allToAllOp take the index of their group in
// Program.Groups.
func allGatherOp(group int, stages []int) Op {
	return Op{Kind: AllGather, Stage: None, Micro: None, Shard: None, Peer: None, Stages: stages, Group: group}
}

func allToAllOp(group int) Op {
	return Op{Kind: AllToAll, Stage: None, Micro: None, Shard: None, Peer: None, Group: group}
}

func backwardInputOp(stage, micro int) Op {
	return Op{Kind: BackwardInput, Stage: stage, Micro: micro, Shard: None, Peer: None, Group: None}
}

func backwardWeightOp(stage, micro int) Op {
	return Op{Kind: BackwardWeight, Stage: stage, Micro: micro, Shard: None, Peer: None, Group: None}
}

func updateOp(stage int) Op {
	return Op{Kind: Update, Stage: stage, Micro: None, Shard: None, Peer: None, Group: None}
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

// stageForward appends the forward of stage s on micro-batch j, keeping
// activations, to the ops of the device that owns s (owners maps stages to
// devices): receive the input from the owner of s−1 unless this device
// handed it over in place, run the forward, compute the loss on the last
// stage, send the output to the owner of s+1 unless that is this device.
func stageForward(ops []Op, owners []int, s, j int) []Op {
	k := owners[s]
	if s > 0 && owners[s-1] != k {
		ops = append(ops, recvOp(Activation, s-1, j, owners[s-1]))
	}
	ops = append(ops, forwardOp(s, j, true))
	switch {
	case s == len(owners)-1:
		ops = append(ops, lossOp(s, j))
	case owners[s+1] != k:
		ops = append(ops, sendOp(Activation, s, j, owners[s+1]))
	}
	return ops
}

// stageBackward appends the backward of stage s on micro-batch j, of kind
// Backward or BackwardInput (the op that produces the input gradient):
// receive the output gradient from the owner of s+1 unless the loss or an
// in-place hand-over provides it, run the backward, send the input
// gradient to the owner of s−1 unless that is this device.
func stageBackward(ops []Op, owners []int, s, j int, kind OpKind) []Op {
	k := owners[s]
	if s < len(owners)-1 && owners[s+1] != k {
		ops = append(ops, recvOp(Gradient, s+1, j, owners[s+1]))
	}
	ops = append(ops, Op{Kind: kind, Stage: s, Micro: j, Shard: None, Peer: None, Group: None})
	if s > 0 && owners[s-1] != k {
		ops = append(ops, sendOp(Gradient, s, j, owners[s-1]))
	}
	return ops
}

// peakLive returns the most (stage, micro-batch) pairs whose activations
// ops keep at once: a keeping Forward or a Recompute makes a pair live, its
// Backward or BackwardWeight frees it.
func peakLive(ops []Op) int {
	type pair struct{ stage, micro int }
	live := make(map[pair]bool)
	peak := 0
	for _, o := range ops {
		at := pair{o.Stage, o.Micro}
		switch {
		case o.Kind == Forward && o.Keep, o.Kind == Recompute:
			live[at] = true
		case o.Kind == Backward, o.Kind == BackwardWeight:
			delete(live, at)
		}
		peak = max(peak, len(live))
	}
	return peak
}

// firstStages returns the stages 0..n−1.
func firstStages(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
