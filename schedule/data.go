package schedule

import "fmt"

// Data is what a Load reads of a mini-batch's samples.
type Data int

const (
	// Inputs are the samples themselves, the first stage's input.
	Inputs Data = iota
	// Labels are the samples' labels, which the loss compares the last
	// stage's output with (a dataset may give several a sample).
	Labels
)

// String returns "inputs" or "labels".
func (d Data) String() string {
	switch d {
	case Inputs:
		return "inputs"
	case Labels:
		return "labels"
	}
	return fmt.Sprintf("data(%d)", int(d))
}

// Load is a part of the mini-batch that a device reads from the data
// loader at the start of every step, before its first op.
//
// A program does not know the batch size B, so a Load names its samples
// as a fraction of the batch: shard Shard of Shards equal shards, samples
// [Shard·B/Shards, (Shard+1)·B/Shards) (see Range). The whole batch is
// shard 0 of 1. A micro-batch j of M is the fraction [j/M, (j+1)/M), so
// the checker can tell, without B, whether a load holds every micro-batch
// its device computes on.
type Load struct {
	// What is the data read: the inputs or the labels.
	What Data
	// For is the kind of op that consumes the load: Forward (the first
	// stage's forwards slice their micro-batches out of the inputs),
	// Predict (coop's prediction step runs the first stage on the inputs
	// of its shard) or Loss (the loss slices its micro-batch's labels).
	For OpKind
	// Shard is which of Shards equal parts of the mini-batch is read.
	Shard, Shards int
}

// Range returns the samples [lo, hi) of a mini-batch of batch samples
// that l reads. When Shards does not divide batch the shards differ by at
// most one sample and still cover the batch exactly.
func (l Load) Range(batch int) (lo, hi int) {
	return l.Shard * batch / l.Shards, (l.Shard + 1) * batch / l.Shards
}

// Whole reports whether l reads the whole mini-batch.
func (l Load) Whole() bool { return l.Shard == 0 && l.Shards == 1 }

// Holds reports whether l reads every sample of micro-batch j of micro,
// the fraction [j/micro, (j+1)/micro) of the mini-batch.
func (l Load) Holds(j, micro int) bool {
	return l.Shard*micro <= j*l.Shards && (j+1)*l.Shards <= (l.Shard+1)*micro
}

// String formats the load as "inputs 1/4 for predict" or "labels for
// loss" (the whole batch).
func (l Load) String() string {
	if l.Whole() {
		return fmt.Sprintf("%s for %s", l.What, l.For)
	}
	return fmt.Sprintf("%s %d/%d for %s", l.What, l.Shard, l.Shards, l.For)
}

// wholeLoad returns the load of the whole mini-batch's what for ops of
// kind use.
func wholeLoad(what Data, use OpKind) Load { return Load{What: what, For: use, Shard: 0, Shards: 1} }

// shardLoad returns the load of shard of shards of the mini-batch's what
// for ops of kind use.
func shardLoad(what Data, use OpKind, shard, shards int) Load {
	return Load{What: what, For: use, Shard: shard, Shards: shards}
}

// addPipelineLoads completes p.Loads, which holds what the builder added
// (coop's prediction shards), with what every pipeline reads: the owner
// of the first stage loads the whole mini-batch's inputs, for its
// forwards, ahead of the builder's loads, and the owner of the last stage
// the whole mini-batch's labels, for its losses, after them.
func addPipelineLoads(p *Program) {
	if len(p.Loads) != len(p.Devices) {
		p.Loads = make([][]Load, len(p.Devices))
	}
	first, last := p.Owners[0], p.Owners[p.Stages-1]
	p.Loads[first] = append([]Load{wholeLoad(Inputs, Forward)}, p.Loads[first]...)
	p.Loads[last] = append(p.Loads[last], wholeLoad(Labels, Loss))
}

// LoadOf returns device k's load of what for ops of kind use, and whether
// it has one; a checked program has at most one.
func (p *Program) LoadOf(k int, what Data, use OpKind) (Load, bool) {
	if k < 0 || k >= len(p.Loads) {
		return Load{}, false
	}
	for _, l := range p.Loads[k] {
		if l.What == what && l.For == use {
			return l, true
		}
	}
	return Load{}, false
}

// allDevices returns the group of every device 0..K−1.
func allDevices(K int) []int { return firstStages(K) }

// GroupOf returns the devices of the group collective op o spans, or nil
// if o names none.
func (p *Program) GroupOf(o Op) []int {
	if o.Group < 0 || o.Group >= len(p.Groups) {
		return nil
	}
	return p.Groups[o.Group]
}
