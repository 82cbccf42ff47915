package schedule

import (
	"fmt"
	"slices"
)

// The checks of what a program reads from the data loader and of the
// groups its collectives span.

// groups checks that every group holds distinct devices of the program,
// in increasing order.
func (c *checker) groups() {
	for g, members := range c.p.Groups {
		if len(members) == 0 {
			c.fail("group %d is empty", g)
			continue
		}
		for i, d := range members {
			switch {
			case d < 0 || d >= c.K:
				c.fail("group %d holds device %d, out of 0..%d", g, d, c.K-1)
			case i > 0 && d <= members[i-1]:
				c.fail("group %d is %v, want distinct devices in increasing order", g, members)
			}
		}
	}
}

// groupShape returns what is wrong with op o's group on device k, or "":
// a collective names a group that holds k, any other op none.
func (c *checker) groupShape(k int, o Op) string {
	if !o.Kind.Collective() {
		if o.Group != None {
			return fmt.Sprintf("group %d on a %s, which is no collective", o.Group, o.Kind)
		}
		return ""
	}
	if o.Group < 0 || o.Group >= len(c.p.Groups) {
		return fmt.Sprintf("group %d out of 0..%d", o.Group, len(c.p.Groups)-1)
	}
	if !slices.Contains(c.p.Groups[o.Group], k) {
		return fmt.Sprintf("device %d takes part in a collective of group %d, %v, which it is not in", k, o.Group, c.p.Groups[o.Group])
	}
	return ""
}

// collectives checks that the devices of every group run the group's
// collectives the same, in the same order. That no device outside a group
// takes part in its collectives, groupShape has checked.
func (c *checker) collectives() {
	seq := func(k, g int) []Op {
		var s []Op
		for _, o := range c.p.Devices[k] {
			if o.Kind.Collective() && o.Group == g {
				s = append(s, o)
			}
		}
		return s
	}
	for g, members := range c.p.Groups {
		if len(members) == 0 {
			continue
		}
		first := members[0]
		want := seq(first, g)
		for _, k := range members[1:] {
			got := seq(k, g)
			same := len(got) == len(want)
			for i := 0; same && i < len(got); i++ {
				same = got[i].Kind == want[i].Kind && slices.Equal(got[i].Stages, want[i].Stages)
			}
			if !same {
				c.fail("group %d: device %d runs collectives %v but device %d runs %v", g, k, got, first, want)
			}
		}
	}
}

// loadUse is a pairing of data and the kind of op that consumes it.
type loadUse struct {
	what Data
	use  OpKind
}

// loadUses are the loads a program may hold, each at most once a device.
var loadUses = []loadUse{{Inputs, Forward}, {Inputs, Predict}, {Labels, Loss}}

// loads checks that every device loads what its ops consume and nothing
// else: the inputs of stage 0's forwards, of coop's prediction of stage
// 0 on its shard, and the labels of its losses, each once and holding
// every micro-batch (shard) it computes on.
func (c *checker) loads() {
	if len(c.p.Loads) != c.K {
		c.fail("%d load lists for %d devices, want one per device", len(c.p.Loads), c.K)
		return
	}
	for k := range c.K {
		c.deviceLoads(k)
	}
}

// deviceLoads checks device k's loads.
func (c *checker) deviceLoads(k int) {
	// needs[u] lists the micro-batches (Predict: shards) the device's ops
	// of use u read.
	needs := map[loadUse][]int{}
	for _, o := range c.p.Devices[k] {
		switch {
		case o.Kind == Forward && o.Stage == 0:
			needs[loadUse{Inputs, Forward}] = append(needs[loadUse{Inputs, Forward}], o.Micro)
		case o.Kind == Predict && o.Stage == 0:
			needs[loadUse{Inputs, Predict}] = append(needs[loadUse{Inputs, Predict}], o.Shard)
		case o.Kind == Loss:
			needs[loadUse{Labels, Loss}] = append(needs[loadUse{Labels, Loss}], o.Micro)
		}
	}
	have := map[loadUse]Load{}
	for i, l := range c.p.Loads[k] {
		u := loadUse{l.What, l.For}
		switch {
		case !slices.Contains(loadUses, u):
			c.fail("device %d load %d (%v): want inputs for forward or predict, or labels for loss", k, i, l)
		case l.Shards < 1 || l.Shard < 0 || l.Shard >= l.Shards:
			c.fail("device %d load %d (%v): shard %d of %d, want 0 ≤ shard < shards", k, i, l, l.Shard, l.Shards)
		default:
			if _, twice := have[u]; twice {
				c.fail("device %d load %d (%v): a second load of %s for %s", k, i, l, l.What, l.For)
			}
			have[u] = l
		}
	}
	for _, u := range loadUses {
		l, loaded := have[u]
		need, needed := needs[u]
		switch {
		case needed && !loaded:
			c.fail("device %d runs %s ops but loads no %s for them", k, u.use, u.what)
		case loaded && !needed:
			c.fail("device %d loads %v but runs no %s that reads it", k, l, u.use)
		case loaded:
			c.loadHolds(k, l, need)
		}
	}
}

// loadHolds checks that load l of device k holds the micro-batches (for
// Predict the shard) that need lists.
func (c *checker) loadHolds(k int, l Load, need []int) {
	for _, j := range need {
		if l.For == Predict {
			if l.Shard != j || l.Shards != c.K {
				c.fail("device %d loads %v but predicts on shard %d of %d", k, l, j, c.K)
			}
			continue
		}
		if !l.Holds(j, c.M) {
			c.fail("device %d loads %v, which does not hold micro-batch %d of %d", k, l, j, c.M)
			return
		}
	}
}
