package schedule

import "fmt"

// microState tracks one (stage, micro-batch) pair on its device as the
// device's ops go by.
type microState struct {
	forward, recompute, loss int  // how many of each so far
	backward, input, weight  int  // Backward, BackwardInput, BackwardWeight
	keep                     bool // the forward kept activations
	arrived, outGrad         bool // the input and the output gradient are here
	live                     bool // activations are kept
}

// gradDone reports whether the op that produces the pair's input gradient
// (Backward or BackwardInput) has run.
func (s *microState) gradDone() bool { return s.backward+s.input > 0 }

// deviceCheck is the state of device k's ops as they go by.
type deviceCheck struct {
	*checker
	k         int
	st        [][]microState // st[stage][micro]; only owned stages are used
	live      int            // pairs whose activations are kept
	scattered bool           // the all-to-all has delivered every input
	reduced   [][]int        // the stages of each all-reduce so far
	dpReduced map[int]int    // dp-allreduces of each stage so far
}

// device checks the order of device k's ops: data dependencies, kept
// activations against MaxLive, and Update.
func (c *checker) device(k int) {
	d := &deviceCheck{checker: c, k: k, st: make([][]microState, c.S)}
	for _, s := range c.owned[k] {
		d.st[s] = make([]microState, c.M)
	}
	ops := c.p.Devices[k]
	for i, o := range ops {
		at := func(format string, args ...any) {
			c.fail("device %d op %d (%v): %s", k, i, o, fmt.Sprintf(format, args...))
		}
		if o.Kind == Update && i != len(ops)-1 {
			at("update is not the last op")
		}
		d.op(o, at)
	}
	d.finish()
	if n := countKind(ops, Update); n != 1 || ops[len(ops)-1].Kind != Update {
		c.fail("device %d: %d updates, want one as the last op", k, n)
	}
}

// pair names (stage s, micro-batch j) on device k: "micro-batch j" where
// the device owns one stage, "stage s micro-batch j" otherwise.
func (d *deviceCheck) pair(s, j int) string {
	if len(d.owned[d.k]) == 1 {
		return fmt.Sprintf("micro-batch %d", j)
	}
	return fmt.Sprintf("stage %d micro-batch %d", s, j)
}

// handedOver reports whether stage s's neighbour n is on this device, so
// that a tensor between them is handed over in place; done says whether
// the neighbour's op that produces it has run.
func (d *deviceCheck) handedOver(n, j int, done func(*microState) bool) bool {
	return n >= 0 && n < d.S && d.p.Owners[n] == d.k && done(&d.st[n][j])
}

// op checks op o and records it; at reports a problem with it.
func (d *deviceCheck) op(o Op, at func(string, ...any)) {
	var s *microState
	switch o.Kind {
	case AllToAll:
		d.scattered = true
		return
	case AllReduce:
		d.allReduce(o, at)
		return
	case DPAllReduce:
		d.dpAllReduce(o, at)
		return
	case Recv:
		if o.What == Activation {
			d.st[o.Stage+1][o.Micro].arrived = true
		} else {
			d.st[o.Stage-1][o.Micro].outGrad = true
		}
		return
	case Send:
		s = &d.st[o.Stage][o.Micro]
		if o.What == Activation && s.forward == 0 {
			at("sends an activation before its forward")
		}
		if o.What == Gradient && !s.gradDone() {
			at("sends a gradient before its backward")
		}
		return
	case Forward, Recompute, Loss, Backward, BackwardInput, BackwardWeight:
		s = &d.st[o.Stage][o.Micro]
	default:
		return
	}
	name := d.pair(o.Stage, o.Micro)
	switch o.Kind {
	case Forward:
		d.forward(o, s, at)
	case Loss:
		if s.forward == 0 || s.gradDone() {
			at("loss not between the forward and the backward of %s", name)
		}
		s.loss++
		s.outGrad = true
	case Recompute:
		if s.forward == 0 || s.keep || s.recompute > 0 || s.gradDone() {
			at("recompute not after a single checkpointed forward of %s", name)
		}
		s.recompute++
	case Backward, BackwardInput:
		d.backward(o, s, at)
	case BackwardWeight:
		if s.input == 0 {
			at("backward-weight before the backward-input of %s", name)
		}
		if s.weight++; s.weight > 1 {
			at("second backward-weight of %s", name)
		}
	}
	d.keepLive(o, s, at)
}

// forward checks Forward o of pair s: its input must be here.
func (d *deviceCheck) forward(o Op, s *microState, at func(string, ...any)) {
	prev := o.Stage - 1
	switch {
	case o.Stage == 0 || s.arrived || d.scattered:
	case d.p.Owners[prev] == d.k:
		if !d.handedOver(prev, o.Micro, func(p *microState) bool { return p.forward > 0 }) {
			at("forward before its input arrived (no earlier forward of stage %d on this device to hand it over)", prev)
		}
	default:
		at("forward before its input arrived (no recv of it, no all-to-all)")
	}
	if s.forward++; s.forward > 1 {
		at("second forward of %s", d.pair(o.Stage, o.Micro))
	}
	s.keep = o.Keep
}

// backward checks Backward or BackwardInput o of pair s: it needs the
// forward, a recompute of a checkpointed forward, and the output gradient.
func (d *deviceCheck) backward(o Op, s *microState, at func(string, ...any)) {
	name := d.pair(o.Stage, o.Micro)
	next := o.Stage + 1
	switch {
	case s.forward == 0:
		at("%s before the forward of %s", o.Kind, name)
	case !s.keep && s.recompute == 0:
		at("%s of checkpointed %s without a recompute", o.Kind, name)
	case s.outGrad:
	case next < d.S && d.p.Owners[next] == d.k:
		if !d.handedOver(next, o.Micro, (*microState).gradDone) {
			at("%s before its output gradient arrived (no earlier backward of stage %d on this device to hand it over)", o.Kind, next)
		}
	default:
		at("%s before its output gradient arrived", o.Kind)
	}
	if s.gradDone() {
		at("second %s of %s", o.Kind, name)
	}
	if o.Kind == Backward {
		s.backward++
	} else {
		s.input++
	}
}

// keepLive counts the pairs whose activations op o keeps or frees.
func (d *deviceCheck) keepLive(o Op, s *microState, at func(string, ...any)) {
	switch {
	case o.Kind == Forward && o.Keep, o.Kind == Recompute:
		if !s.live {
			s.live = true
			if d.live++; d.live > d.p.MaxLive[d.k] {
				at("%d micro-batches' activations kept, more than MaxLive %d", d.live, d.p.MaxLive[d.k])
			}
		}
	case (o.Kind == Backward || o.Kind == BackwardWeight) && s.live:
		s.live = false
		d.live--
	}
}

// finish checks that every pair of the device ran its ops once each and
// freed its activations.
func (d *deviceCheck) finish() {
	d.finishReplicas()
	for _, st := range d.owned[d.k] {
		for j, s := range d.st[st] {
			name := d.pair(st, j)
			switch {
			case d.split && (s.forward != 1 || s.input != 1 || s.weight != 1):
				d.fail("device %d: %s has %d forwards, %d backward-inputs and %d backward-weights, want 1 each",
					d.k, name, s.forward, s.input, s.weight)
			case !d.split && (s.forward != 1 || s.backward != 1):
				d.fail("device %d: %s has %d forwards and %d backwards, want 1 each", d.k, name, s.forward, s.backward)
			}
			if st == d.S-1 && s.loss != 1 {
				d.fail("device %d: %s has %d losses, want 1", d.k, name, s.loss)
			}
			if s.live {
				d.fail("device %d: %s's activations are still kept at the end", d.k, name)
			}
		}
	}
}
