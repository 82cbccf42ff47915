package schedule

import (
	"fmt"
	"strings"
)

// OpKind is what an op does.
type OpKind int

// The ops of a program.
const (
	// Forward runs a stage's forward on micro-batch Micro (in coop, on
	// slice Micro), keeping activations for the backward unless Keep is
	// false (a checkpointed forward keeps only the stage input).
	Forward OpKind = iota
	// Recompute re-runs a checkpointed forward of Stage on Micro,
	// keeping activations, right before its backward.
	Recompute
	// Backward runs a stage's backward on Micro, accumulating parameter
	// gradients and producing the gradient of the stage input.
	Backward
	// Loss computes the loss of Micro on the last stage's output and the
	// gradient of that output.
	Loss
	// Predict runs Stage's forward on shard Shard without keeping
	// activations, keeping only its output: the input of the next stage
	// (coop's prediction step). The device uses replicas of the weights
	// of stages it does not own.
	Predict
	// Send posts a tensor to device Peer without waiting: the stage
	// input's gradient (What = Gradient) or the stage output (What =
	// Activation) of Micro.
	Send
	// Recv waits for the tensor that device Peer sent for Micro and
	// copies it into this device's memory.
	Recv
	// AllGather is coop's synchronisation: every device of the op's
	// group contributes the weights of the stage it owns if that stage is
	// in Stages, and receives replicas of the others in Stages.
	AllGather
	// AllToAll delivers the predicted boundaries: device p sends the input
	// of stage k computed from shard p to device k, for every k ≥ 1.
	AllToAll
	// Update applies the optimizer to every stage the device owns
	// (Program.StagesOf); its Stage is the device's first stage.
	Update
	// BackwardInput is the first half of a split backward, the zero-bubble
	// schedules' B: it produces the gradient of Stage's input for Micro
	// from the output gradient and keeps what the weight gradient needs.
	BackwardInput
	// BackwardWeight is the second half, W: it accumulates Stage's
	// parameter gradients for Micro from what BackwardInput kept, and
	// frees the micro-batch's activations.
	BackwardWeight
	// AllReduce sums the gradients of a parameter that the stages in
	// Stages share (a models.Tie: GPT-2's embedding and LM head), each
	// device of the op's group holding one copy for its stages among
	// them: every device contributes its copy's gradient and ends with
	// the sum (a group of one device has nothing to sum). It runs after the device's last
	// backward of those stages and before its Update; its Stage is the
	// device's first stage in Stages. See Program.Tie.
	AllReduce
	// DPAllReduce sums Stage's parameter gradients over the data-parallel
	// replicas of the device (Options.Replicas): the job runs R copies of
	// the program, device k of copy r being job device r·K + k, and the
	// op spans the R devices that run device k's ops, outside the
	// program's own devices, so it names no group. It runs once per
	// stage the device owns, after the stage's last backward (split: its
	// last backward-weight) and the send of that backward's input
	// gradient, so that the pipeline's transfers go first. Programs of
	// one replica have none. See Program.Replicas.
	DPAllReduce
	numOpKinds
)

// opKinds is the one table of what each kind of op is: every question
// about a kind (its name in records and reports, whether it computes,
// runs its stage's blocks, is priced by the predictor's fits, or moves
// data) is answered here and nowhere else, so that a new kind is one row.
var opKinds = [numOpKinds]struct {
	name string
	// computes: the op runs on the device's compute, not its links.
	computes bool
	// blocks: the op runs its stage's blocks one after another, so
	// per-block timing records one event per block.
	blocks bool
	// fitted: the predictor prices the op from its fits of block, loss
	// and update times and corrects the price by a fitted scale.
	fitted bool
	// collective: every device of the op's group takes part.
	collective bool
	// replicas: the device's replicas in the job's other pipelines take
	// part, and none of the program's other devices.
	replicas bool
}{
	Forward:        {name: "forward", computes: true, blocks: true, fitted: true},
	Recompute:      {name: "recompute", computes: true, blocks: true, fitted: true},
	Backward:       {name: "backward", computes: true, blocks: true, fitted: true},
	Loss:           {name: "loss", computes: true, fitted: true},
	Predict:        {name: "predict", computes: true, blocks: true, fitted: true},
	Send:           {name: "send"},
	Recv:           {name: "recv"},
	AllGather:      {name: "allgather", collective: true},
	AllToAll:       {name: "alltoall", collective: true},
	Update:         {name: "update", computes: true, fitted: true},
	BackwardInput:  {name: "backward-input", computes: true, blocks: true, fitted: true},
	BackwardWeight: {name: "backward-weight", computes: true, blocks: true, fitted: true},
	AllReduce:      {name: "allreduce", collective: true},
	DPAllReduce:    {name: "dp-allreduce", replicas: true},
}

// OpKinds returns every op kind, in the order of their values.
func OpKinds() []OpKind {
	out := make([]OpKind, numOpKinds)
	for i := range out {
		out[i] = OpKind(i)
	}
	return out
}

func (k OpKind) valid() bool { return k >= 0 && k < numOpKinds }

// String returns the op kind's name as records and reports use it.
func (k OpKind) String() string {
	if !k.valid() {
		return fmt.Sprintf("op(%d)", int(k))
	}
	return opKinds[k].name
}

// Computes reports whether ops of kind k compute on the device (forward,
// recompute, the backwards, predict, loss, update) rather than move data.
func (k OpKind) Computes() bool { return k.valid() && opKinds[k].computes }

// MovesData reports whether ops of kind k move tensors between devices
// (send, recv and the collectives) rather than compute.
func (k OpKind) MovesData() bool { return k.valid() && !opKinds[k].computes }

// RunsBlocks reports whether ops of kind k run their stage's blocks in
// turn (forward, recompute, the backwards, predict), so that per-block
// timing records an event for each block.
func (k OpKind) RunsBlocks() bool { return k.valid() && opKinds[k].blocks }

// Fitted reports whether the predictor prices ops of kind k from its
// fitted block, loss and update times, corrected by a scale it fits per
// kind from the records' measured busy time.
func (k OpKind) Fitted() bool { return k.valid() && opKinds[k].fitted }

// Collective reports whether ops of kind k are collectives: every device
// of the op's group (Op.Group) takes part, in the same order on each.
func (k OpKind) Collective() bool { return k.valid() && opKinds[k].collective }

// SpansReplicas reports whether ops of kind k run together with the
// device's data-parallel replicas (DPAllReduce): each replica runs the
// same program, so such an op waits for no other device of the program.
func (k OpKind) SpansReplicas() bool { return k.valid() && opKinds[k].replicas }

// ParseOpKind returns the op kind with the given name.
func ParseOpKind(s string) (OpKind, error) {
	for _, k := range OpKinds() {
		if k.String() == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown op %q", s)
}

// Payload says what a Send or Recv carries.
type Payload int

const (
	// Activation is a stage's output, the next stage's input.
	Activation Payload = iota
	// Gradient is the gradient of a stage's input, sent to the stage
	// before it.
	Gradient
)

// String returns "activation" or "gradient".
func (p Payload) String() string {
	if p == Gradient {
		return "gradient"
	}
	return "activation"
}

// None marks a field an op does not use (Micro, Shard, Peer, Group).
const None = -1

// Op is one step of a device's program.
type Op struct {
	Kind OpKind
	// Stage is the stage the op works on (0-based); for Send and Recv
	// the sending stage.
	Stage int
	// Micro is the micro-batch (coop: the slice), or None.
	Micro int
	// Shard is the shard of a Predict, or None.
	Shard int
	// Peer is the other device of a Send or Recv, or None.
	Peer int
	// What is the payload of a Send or Recv.
	What Payload
	// Keep is whether a Forward keeps its activations for the backward.
	Keep bool
	// Stages lists the stages an AllGather synchronises, or the stages
	// whose shared parameter's gradients an AllReduce sums, in increasing
	// order.
	Stages []int
	// Group is the index in Program.Groups of the devices a collective
	// spans, None for every other op.
	Group int
}

// String formats the op compactly, as timelines show it: "F2.1" is the
// forward of stage 2 on micro-batch 1.
func (o Op) String() string {
	switch o.Kind {
	case Forward:
		if !o.Keep {
			return fmt.Sprintf("f%d.%d", o.Stage, o.Micro)
		}
		return fmt.Sprintf("F%d.%d", o.Stage, o.Micro)
	case Recompute:
		return fmt.Sprintf("R%d.%d", o.Stage, o.Micro)
	case Backward:
		return fmt.Sprintf("B%d.%d", o.Stage, o.Micro)
	case BackwardInput:
		return fmt.Sprintf("I%d.%d", o.Stage, o.Micro)
	case BackwardWeight:
		return fmt.Sprintf("W%d.%d", o.Stage, o.Micro)
	case Loss:
		return fmt.Sprintf("L%d", o.Micro)
	case Predict:
		return fmt.Sprintf("P%d.s%d", o.Stage, o.Shard)
	case Send, Recv:
		return fmt.Sprintf("%s %s %d.%d peer %d", o.Kind, o.What, o.Stage, o.Micro, o.Peer)
	case AllGather:
		return fmt.Sprintf("allgather %v", o.Stages)
	case AllReduce:
		return fmt.Sprintf("allreduce %v", o.Stages)
	case DPAllReduce:
		return fmt.Sprintf("dp-allreduce %d", o.Stage)
	default:
		return o.Kind.String()
	}
}

// Checkpoint is gpipe's re-materialisation mode, torchgpipe's: micro-
// batches below a stop index keep only their stage input during the
// forward and recompute the rest right before their backward.
type Checkpoint int

const (
	// ExceptLast checkpoints every micro-batch but the last (stop M−1),
	// torchgpipe's default.
	ExceptLast Checkpoint = iota
	// Always checkpoints every micro-batch (stop M).
	Always
	// Never keeps every micro-batch's activations (stop 0).
	Never
)

var checkpointNames = []string{"except-last", "always", "never"}

// String returns the mode's command-line name.
func (c Checkpoint) String() string {
	if c < 0 || int(c) >= len(checkpointNames) {
		return fmt.Sprintf("checkpoint(%d)", int(c))
	}
	return checkpointNames[c]
}

// ParseCheckpoint returns the mode with the given name.
func ParseCheckpoint(s string) (Checkpoint, error) {
	for i, n := range checkpointNames {
		if n == s {
			return Checkpoint(i), nil
		}
	}
	return 0, fmt.Errorf("unknown checkpoint mode %q (want %s)", s, strings.Join(checkpointNames, ", "))
}

// The schedules' names.
const (
	Single = "single"
	GPipe  = "gpipe"
	Coop   = "coop"
	OneF1B = "1f1b"
	// Interleaved is Megatron-LM's interleaved 1F1B: v model chunks per
	// device (Options.Virtual).
	Interleaved = "interleaved"
	// ZBH1 and ZBH2 are the zero-bubble schedules of Qi et al.: backward
	// split into BackwardInput and BackwardWeight, ZB-H1 within 1F1B's
	// memory, ZB-H2 with more memory for a fuller pipeline.
	ZBH1 = "zb-h1"
	ZBH2 = "zb-h2"
	// ZBV is the zero-bubble schedule on a V (Qi et al.): two stages a
	// device, k and 2K−1−k, backwards split, 1F1B's activation memory.
	ZBV = "zb-v"
	// DualPipeV is DeepSeek-V3's DualPipe cut in half, as
	// torch.distributed.pipelining ships it: the V placement, forwards
	// of one stage paired with backwards of the other.
	DualPipeV = "dualpipev"
)

// Program is what every device does in one training step, in order.
type Program struct {
	Options Options
	// Stages is the number of stages: K, 1 for single, K·v for
	// interleaved, 2K for zb-v and dualpipev.
	Stages int
	// Owners[s] is the device that owns stage s: Options.Owner(s), s
	// itself except in interleaved, where device k owns stages k, k+K,
	// k+2K, …, and in the V-shaped schedules, where it owns k and 2K−1−k.
	Owners []int
	// Devices[k] is device k's ops.
	Devices [][]Op
	// MaxLive[k] is the most (stage, micro-batch) pairs (coop: slices)
	// whose activations device k keeps at once, as the schedule promises
	// it; the checker verifies the program keeps its promise. A pair is
	// live from its keeping Forward (or Recompute) to its Backward, or,
	// split, to its BackwardWeight.
	MaxLive []int
	// Loads[k] is what device k reads from the data loader at the start
	// of a step, in the order it reads them: the owner of the first stage
	// the inputs of the whole mini-batch, the owner of the last stage
	// their labels, and in coop with K ≥ 2 device p also the inputs of
	// shard p, for its prediction step.
	Loads [][]Load
	// Groups are the sets of devices the collectives span, each in
	// increasing device order; a collective op names its group by index
	// (Op.Group). Coop with K ≥ 2 has one group, every device; the other
	// schedules have no collectives and no groups until Tie adds the
	// owners of tied stages.
	Groups [][]int
}

// Replicas returns R, the data-parallel copies of the program a job runs
// (Options.Replicas, at least 1): job device r·K + k runs Devices[k] in
// copy r, on samples [r·B, (r+1)·B) of a step's R·B, with every peer and
// group member shifted by r·K, and its DPAllReduce ops span job devices
// k, K + k, …, (R−1)·K + k.
func (p *Program) Replicas() int { return max(p.Options.Replicas, 1) }

// StagesOf returns the stages device k owns, in increasing order.
func (p *Program) StagesOf(k int) []int {
	var out []int
	for s, d := range p.Owners {
		if d == k {
			out = append(out, s)
		}
	}
	return out
}
