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
//   - it has one op list and one MaxLive per stage, and every op's fields
//     are in range: device k computes only on stage k (Predict aside),
//     sends carry stage k to a neighbour, micro-batches are in 0..M−1;
//   - every Send has exactly one matching Recv and vice versa;
//   - the program finishes under Simulate with unit costs (no deadlock);
//   - on device k the micro-batches whose activations are kept (a Forward
//     with Keep or a Recompute adds one, its Backward removes it) never
//     exceed MaxLive[k] and are none at the end;
//   - every (stage k, micro-batch j) has one Forward, then for a
//     checkpointed Forward one Recompute, then one Backward; a Forward has
//     its input (a Recv of it, or the all-to-all), a Backward its output
//     gradient (a Recv of it, or the Loss on the last stage), and a Send
//     follows the op that produced what it sends;
//   - Update is every device's last op and appears once;
//   - the collectives are the same, in the same order, on every device;
//   - in coop with K ≥ 2, device p predicts stages 0..K−2 on shard p, in
//     order, between the all-gather and the all-to-all, and nothing else
//     predicts.
//
// The error lists every problem found.
func Check(p *Program) error {
	if p == nil {
		return errors.New("check: nil program")
	}
	c := &checker{p: p, K: len(p.Devices), M: p.Options.Micro}
	c.shape()
	if len(c.errs) == 0 {
		for k := range c.K {
			c.device(k)
		}
		c.matching()
		c.collectives()
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
	p    *Program
	K, M int
	errs []error
}

func (c *checker) fail(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

// shape checks the program's dimensions and every op's fields; the other
// checks index by them.
func (c *checker) shape() {
	if c.K == 0 || c.p.Stages != c.K || len(c.p.MaxLive) != c.K || c.p.Options.Devices != c.K {
		c.fail("%d devices, %d stages, %d MaxLive entries and %d devices in the options, want the same positive number",
			c.K, c.p.Stages, len(c.p.MaxLive), c.p.Options.Devices)
		return
	}
	if c.M < 1 {
		c.fail("%d micro-batches, want at least 1", c.M)
		return
	}
	for k, ops := range c.p.Devices {
		for i, o := range ops {
			if msg := c.opShape(k, o); msg != "" {
				c.fail("device %d op %d (%v): %s", k, i, o, msg)
			}
		}
	}
}

// opShape returns what is wrong with the fields of op o on device k, or "".
func (c *checker) opShape(k int, o Op) string {
	inMicro := o.Micro >= 0 && o.Micro < c.M
	switch o.Kind {
	case Forward, Recompute, Backward, Loss:
		switch {
		case o.Stage != k:
			return fmt.Sprintf("stage %d on device %d, which owns stage %d", o.Stage, k, k)
		case !inMicro:
			return fmt.Sprintf("micro-batch %d out of 0..%d", o.Micro, c.M-1)
		case o.Kind == Loss && k != c.K-1:
			return "loss on a stage other than the last"
		}
	case Predict:
		if c.p.Options.Name != Coop {
			return "predict outside coop"
		}
		if o.Stage < 0 || o.Stage >= c.K-1 || o.Shard < 0 || o.Shard >= c.K {
			return fmt.Sprintf("predict of stage %d on shard %d, want stage 0..%d and shard 0..%d", o.Stage, o.Shard, c.K-2, c.K-1)
		}
	case Send, Recv:
		from, to := k, o.Peer
		if o.Kind == Recv {
			from, to = o.Peer, k
		}
		want := from + 1
		if o.What == Gradient {
			want = from - 1
		}
		switch {
		case o.Peer < 0 || o.Peer >= c.K:
			return fmt.Sprintf("peer %d out of 0..%d", o.Peer, c.K-1)
		case o.Stage != from:
			return fmt.Sprintf("stage %d, want the sending stage %d", o.Stage, from)
		case to != want:
			return fmt.Sprintf("%s from device %d goes to device %d, want %d", o.What, from, to, want)
		case !inMicro:
			return fmt.Sprintf("micro-batch %d out of 0..%d", o.Micro, c.M-1)
		}
	case AllGather, AllToAll:
	case Update:
		if o.Stage != k {
			return fmt.Sprintf("update of stage %d on device %d", o.Stage, k)
		}
	default:
		return "unknown op kind"
	}
	return ""
}

// microState tracks one micro-batch on one device as its ops go by.
type microState struct {
	forward, recompute, backward, loss int  // how many of each so far
	keep                               bool // the forward kept activations
	input, outGrad                     bool // the input and output gradient are here
	live                               bool // activations are kept
}

// device checks the order of device k's ops: data dependencies, kept
// activations against MaxLive, and Update.
func (c *checker) device(k int) {
	ops := c.p.Devices[k]
	st := make([]microState, c.M)
	live, scattered := 0, false
	for i, o := range ops {
		at := func(format string, args ...any) {
			c.fail("device %d op %d (%v): %s", k, i, o, fmt.Sprintf(format, args...))
		}
		if o.Kind == Update && i != len(ops)-1 {
			at("update is not the last op")
		}
		var s *microState
		if o.Micro >= 0 && o.Micro < c.M {
			s = &st[o.Micro]
		}
		switch o.Kind {
		case AllToAll:
			scattered = true
		case Recv:
			if o.What == Activation {
				s.input = true
			} else {
				s.outGrad = true
			}
		case Send:
			if o.What == Activation && s.forward == 0 {
				at("sends an activation before its forward")
			}
			if o.What == Gradient && s.backward == 0 {
				at("sends a gradient before its backward")
			}
		case Forward:
			if k > 0 && !s.input && !scattered {
				at("forward before its input arrived (no recv of it, no all-to-all)")
			}
			if s.forward++; s.forward > 1 {
				at("second forward of micro-batch %d", o.Micro)
			}
			s.keep = o.Keep
		case Loss:
			if s.forward == 0 || s.backward > 0 {
				at("loss not between the forward and the backward of micro-batch %d", o.Micro)
			}
			s.loss++
			s.outGrad = true
		case Recompute:
			if s.forward == 0 || s.keep || s.recompute > 0 || s.backward > 0 {
				at("recompute not after a single checkpointed forward of micro-batch %d", o.Micro)
			}
			s.recompute++
		case Backward:
			switch {
			case s.forward == 0:
				at("backward before the forward of micro-batch %d", o.Micro)
			case !s.keep && s.recompute == 0:
				at("backward of checkpointed micro-batch %d without a recompute", o.Micro)
			case !s.outGrad:
				at("backward before its output gradient arrived")
			}
			if s.backward++; s.backward > 1 {
				at("second backward of micro-batch %d", o.Micro)
			}
		}
		// Kept activations, as the runner's memory will hold them.
		switch {
		case o.Kind == Forward && o.Keep, o.Kind == Recompute:
			if !s.live {
				s.live = true
				if live++; live > c.p.MaxLive[k] {
					at("%d micro-batches' activations kept, more than MaxLive %d", live, c.p.MaxLive[k])
				}
			}
		case o.Kind == Backward && s.live:
			s.live = false
			live--
		}
	}
	for j, s := range st {
		if s.forward != 1 || s.backward != 1 {
			c.fail("device %d: micro-batch %d has %d forwards and %d backwards, want 1 each", k, j, s.forward, s.backward)
		}
		if k == c.K-1 && s.loss != 1 {
			c.fail("device %d: micro-batch %d has %d losses, want 1", k, j, s.loss)
		}
		if s.live {
			c.fail("device %d: micro-batch %d's activations are still kept at the end", k, j)
		}
	}
	if n := countKind(ops, Update); n != 1 || ops[len(ops)-1].Kind != Update {
		c.fail("device %d: %d updates, want one as the last op", k, n)
	}
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

// collectives checks that every device runs the same collectives in the
// same order.
func (c *checker) collectives() {
	seq := func(k int) []Op {
		var s []Op
		for _, o := range c.p.Devices[k] {
			if isCollective(o.Kind) {
				s = append(s, o)
			}
		}
		return s
	}
	want := seq(0)
	for k := 1; k < c.K; k++ {
		got := seq(k)
		same := len(got) == len(want)
		for i := 0; same && i < len(got); i++ {
			same = got[i].Kind == want[i].Kind && slices.Equal(got[i].Stages, want[i].Stages)
		}
		if !same {
			c.fail("device %d runs collectives %v but device 0 runs %v", k, got, want)
		}
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
