package profiler

import "github.com/pipecast/pipecast/schedule"

// OpEvent returns the record's event of op run by device d in a step:
// block is the block a per-block event times, or WholeOp; times are the
// caller's (the tensor clock while recording, or from the step's start).
// Collectives belong to no stage; their events carry the device's own.
func OpEvent(step, d int, op schedule.Op, block int, start, end, bytes int64) Event {
	stage := op.Stage
	if stage == schedule.None {
		stage = d
	}
	return Event{
		Step: step, Device: d, Stage: stage, Op: op.Kind.String(),
		Micro: op.Micro, Shard: op.Shard, Peer: op.Peer, Block: block,
		StartNanos: start, EndNanos: end, Bytes: bytes,
	}
}
