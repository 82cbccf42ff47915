package schedule

import (
	"errors"
	"fmt"
	"slices"
	"sort"
)

// Check verifies that p is a program the runner can execute and that it
// keeps its promises:
//
//   - it has one op list and one MaxLive per device, one owner per stage
//     (Options.Owner: the identity, stage s on device s mod K in
//     interleaved, whose K·v stages match its Virtual, or the V of zb-v
//     and dualpipev), and every op's fields are in range:
//     device k computes only on the stages it owns (Predict aside), the
//     loss is on the last stage, sends go between the owners of
//     neighbouring stages and never to the device itself, micro-batches
//     are in 0..M−1, and Update is on the device's first stage;
//   - every Send has exactly one matching Recv and vice versa;
//   - the program finishes under Simulate with unit costs (no deadlock);
//   - on device k the (stage, micro-batch) pairs whose activations are
//     kept (a Forward with Keep or a Recompute adds one, its Backward or
//     BackwardWeight removes it) never exceed MaxLive[k] and are none at
//     the end;
//   - every (stage s, micro-batch j) of device k has one Forward, then for
//     a checkpointed Forward one Recompute, then one Backward, or, in the
//     split schedules (Splits) and only there, one BackwardInput and then
//     one BackwardWeight; a Forward has its input (a Recv of it, the
//     all-to-all, or the device's own earlier Forward of (s−1, j)), a
//     Backward or BackwardInput its output gradient (a Recv of it, the
//     Loss on the last stage, or the device's own earlier backward of
//     (s+1, j)), and a Send follows the op that produced what it sends;
//   - an AllReduce names two or more stages in increasing order, its
//     group is their owners, its Stage is the device's first of them, and
//     it runs after every backward (split: backward-weight) of the
//     device's stages among them, once per set of stages;
//   - in a program of replicas (Replicas ≥ 2), and only there, every
//     device has one DPAllReduce of each stage it owns, after every
//     backward (split: backward-weight) of it;
//   - Update is every device's last op and appears once;
//   - every group (Groups) holds distinct devices in increasing order,
//     every collective names a group that holds its device and every
//     other op names none, and the devices of each group run the group's
//     collectives the same, in the same order;
//   - Loads has one list per device; device k loads the inputs for its
//     forwards exactly when it runs stage 0's forwards, for a prediction
//     exactly when it predicts stage 0 (shard p of K for Predict(0, p)),
//     and the labels exactly when it runs losses, each once and holding
//     every micro-batch it computes on;
//   - in coop with K ≥ 2, device p predicts stages 0..K−2 on shard p, in
//     order, between the all-gather and the all-to-all, and nothing else
//     predicts.
//
// The error lists every problem found.
func Check(p *Program) error {
	if p == nil {
		return errors.New("check: nil program")
	}
	c := &checker{p: p, K: len(p.Devices), M: p.Options.Micro, S: p.Stages, split: Splits(p.Options.Name)}
	c.shape()
	if len(c.errs) == 0 {
		for k := range c.K {
			c.device(k)
		}
		c.matching()
		c.collectives()
		c.loads()
		if p.Options.Name == Coop && c.K > 1 {
			c.predicts()
		}
		if _, err := Simulate(p, func(int, Op) float64 { return 1 }); err != nil {
			c.errs = append(c.errs, err)
		}
	}
	if len(c.errs) == 0 {
		return nil
	}
	return fmt.Errorf("check %s program (K = %d, M = %d): %w", p.Options.Name, c.K, c.M, errors.Join(c.errs...))
}

// checker collects the problems of one program.
type checker struct {
	p       *Program
	K, M, S int  // devices, micro-batches, stages
	split   bool // the schedule splits its backwards
	owned   [][]int
	errs    []error
}

func (c *checker) fail(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

// shape checks the program's dimensions, its owners and every op's
// fields; the other checks index by them.
func (c *checker) shape() {
	p, interleaved := c.p, c.p.Options.Name == Interleaved
	if c.K == 0 || len(p.MaxLive) != c.K || p.Options.Devices != c.K || (!interleaved && p.Stages != p.Options.Stages()) {
		c.fail("%d devices, %d stages, %d MaxLive entries and %d devices in the options, want the same positive number",
			c.K, p.Stages, len(p.MaxLive), p.Options.Devices)
		return
	}
	if v := p.Options.Virtual; interleaved && (v < 1 || p.Stages != c.K*v) {
		c.fail("%d stages with %d virtual stages on %d devices, want K·v = %d", p.Stages, v, c.K, c.K*max(v, 1))
		return
	}
	if c.M < 1 {
		c.fail("%d micro-batches, want at least 1", c.M)
		return
	}
	c.owners()
	c.groups()
	if len(c.errs) > 0 {
		return
	}
	for k, ops := range p.Devices {
		for i, o := range ops {
			if msg := c.opShape(k, o); msg != "" {
				c.fail("device %d op %d (%v): %s", k, i, o, msg)
			}
		}
	}
}

// owners checks that every stage has the owner its schedule gives it and
// records the stages each device owns.
func (c *checker) owners() {
	if len(c.p.Owners) != c.S {
		c.fail("%d owners for %d stages, want one per stage", len(c.p.Owners), c.S)
		return
	}
	c.owned = make([][]int, c.K)
	for s, d := range c.p.Owners {
		want := c.p.Options.Owner(s)
		switch {
		case d < 0 || d >= c.K:
			c.fail("stage %d owned by device %d, out of 0..%d", s, d, c.K-1)
		case d != want:
			c.fail("stage %d owned by device %d, want device %d", s, d, want)
		default:
			c.owned[d] = append(c.owned[d], s)
		}
	}
}

// ownedBy describes the stages device k owns: "stage 2" or "stages [0 4]".
func (c *checker) ownedBy(k int) string {
	if st := c.owned[k]; len(st) == 1 {
		return fmt.Sprintf("stage %d", st[0])
	}
	return fmt.Sprintf("stages %v", c.owned[k])
}

// opShape returns what is wrong with the fields of op o on device k, or "".
func (c *checker) opShape(k int, o Op) string {
	if msg := c.groupShape(k, o); msg != "" {
		return msg
	}
	inMicro := o.Micro >= 0 && o.Micro < c.M
	inStage := o.Stage >= 0 && o.Stage < c.S
	switch o.Kind {
	case Forward, Recompute, Backward, BackwardInput, BackwardWeight, Loss:
		split := o.Kind == BackwardInput || o.Kind == BackwardWeight
		switch {
		case !inStage || c.p.Owners[o.Stage] != k:
			return fmt.Sprintf("stage %d on device %d, which owns %s", o.Stage, k, c.ownedBy(k))
		case !inMicro:
			return fmt.Sprintf("micro-batch %d out of 0..%d", o.Micro, c.M-1)
		case o.Kind == Loss && o.Stage != c.S-1:
			return "loss on a stage other than the last"
		case c.split && o.Kind == Backward:
			return fmt.Sprintf("backward in %s, which splits it into a backward-input and a backward-weight", c.p.Options.Name)
		case !c.split && split:
			return fmt.Sprintf("%s in %s, which does not split its backwards", o.Kind, c.p.Options.Name)
		}
	case Predict:
		if c.p.Options.Name != Coop {
			return "predict outside coop"
		}
		if o.Stage < 0 || o.Stage >= c.K-1 || o.Shard < 0 || o.Shard >= c.K {
			return fmt.Sprintf("predict of stage %d on shard %d, want stage 0..%d and shard 0..%d", o.Stage, o.Shard, c.K-2, c.K-1)
		}
	case Send, Recv:
		return c.transferShape(k, o, inStage, inMicro)
	case AllGather, AllToAll:
	case AllReduce:
		return c.allReduceShape(k, o)
	case DPAllReduce:
		return c.dpAllReduceShape(k, o)
	case Update:
		if first := c.owned[k][0]; o.Stage != first {
			return fmt.Sprintf("update of stage %d on device %d, want its first stage %d", o.Stage, k, first)
		}
	default:
		return "unknown op kind"
	}
	return ""
}

// transferShape returns what is wrong with Send or Recv o on device k, or
// "": it must carry stage s's output to the owner of s+1 or its input
// gradient to the owner of s−1, between two devices.
func (c *checker) transferShape(k int, o Op, inStage, inMicro bool) string {
	from, to := k, o.Peer
	if o.Kind == Recv {
		from, to = o.Peer, k
	}
	next := o.Stage + 1
	if o.What == Gradient {
		next = o.Stage - 1
	}
	switch {
	case o.Peer < 0 || o.Peer >= c.K:
		return fmt.Sprintf("peer %d out of 0..%d", o.Peer, c.K-1)
	case o.Peer == k:
		return "peer is the device itself: a tensor between two stages of one device is handed over in place, without a transfer"
	case !inStage || next < 0 || next >= c.S:
		return fmt.Sprintf("%s of stage %d, which has no stage to go to among 0..%d", o.What, o.Stage, c.S-1)
	case c.p.Owners[o.Stage] != from:
		return fmt.Sprintf("stage %d, want a sending stage of device %d, which owns %s", o.Stage, from, c.ownedBy(from))
	case c.p.Owners[next] != to:
		return fmt.Sprintf("%s from device %d goes to device %d, want %d, the owner of stage %d", o.What, from, to, c.p.Owners[next], next)
	case !inMicro:
		return fmt.Sprintf("micro-batch %d out of 0..%d", o.Micro, c.M-1)
	}
	return ""
}

// countKind returns how many ops of ops are of kind kind.
func countKind(ops []Op, kind OpKind) int {
	n := 0
	for _, o := range ops {
		if o.Kind == kind {
			n++
		}
	}
	return n
}

// matching checks that every Send has exactly one Recv and vice versa.
func (c *checker) matching() {
	count := make(map[transferKey][2]int) // sends, recvs
	for k, ops := range c.p.Devices {
		for _, o := range ops {
			switch o.Kind {
			case Send:
				n := count[sendKey(k, o)]
				n[0]++
				count[sendKey(k, o)] = n
			case Recv:
				n := count[recvKey(k, o)]
				n[1]++
				count[recvKey(k, o)] = n
			}
		}
	}
	var bad []string
	for key, n := range count {
		if n[0] != 1 || n[1] != 1 {
			bad = append(bad, fmt.Sprintf("%v: %d sends and %d recvs, want 1 each", key, n[0], n[1]))
		}
	}
	sort.Strings(bad) // map order is random; errors are not
	for _, b := range bad {
		c.fail("unmatched transfer %s", b)
	}
}

// predicts checks coop's prediction step.
func (c *checker) predicts() {
	for k, ops := range c.p.Devices {
		gather := slices.IndexFunc(ops, func(o Op) bool { return o.Kind == AllGather })
		scatter := slices.IndexFunc(ops, func(o Op) bool { return o.Kind == AllToAll })
		if gather < 0 || scatter < gather {
			c.fail("device %d: no all-gather followed by an all-to-all", k)
			continue
		}
		if st := ops[gather].Stages; !slices.Equal(st, firstStages(c.K-1)) {
			c.fail("device %d: all-gathers stages %v, want 0..%d", k, st, c.K-2)
		}
		for _, i := range []int{gather, scatter} {
			if g := c.p.GroupOf(ops[i]); !slices.Equal(g, allDevices(c.K)) {
				c.fail("device %d op %d (%v): spans group %v, want every device", k, i, ops[i], g)
			}
		}
		next := 0 // the stage the next predict must be
		for i, o := range ops {
			if o.Kind != Predict {
				continue
			}
			switch {
			case o.Shard != k:
				c.fail("device %d op %d (%v): predicts shard %d, want its own shard %d", k, i, o, o.Shard, k)
			case o.Stage != next:
				c.fail("device %d op %d (%v): predicts stage %d, want stage %d next", k, i, o, o.Stage, next)
			case i < gather || i > scatter:
				c.fail("device %d op %d (%v): predict outside the all-gather … all-to-all window", k, i, o)
			}
			next = o.Stage + 1
		}
		if next != c.K-1 {
			c.fail("device %d: predicts stages 0..%d, want 0..%d", k, next-1, c.K-2)
		}
	}
}
