package schedule

import (
	"fmt"
	"slices"
)

// Tie adds to p the sum of the gradients of a parameter that stages
// share (a tied parameter, such as GPT-2's embedding and LM head): each
// stage holds a copy of it, and before the update every copy must hold
// the sum of all copies' gradients, so that training equals the whole
// model's (Megatron-LM's embedding group).
//
// When stages name one stage (after removing repeats) Tie adds nothing:
// the stage's layers share the parameter itself. Otherwise it adds the
// group of the devices that own the stages to p.Groups (or reuses an
// equal group) and, on each of those devices, an AllReduce of the stages
// right before its Update, with the device's first stage among them as
// its Stage. Two stages of one device (interleaved places stages k and
// k+K on device k, the V stages 0 and 2K−1 on device 0) get an AllReduce
// over a group of that device alone, which moves nothing: the runner cuts
// a device's stages from one model, so there they share one parameter,
// whose gradient both stages' backwards accumulate.
//
// Tie is called once per tied parameter after Build; ties over the same
// stages share one AllReduce (the op sums every parameter those stages
// share), so a second call with the same stages adds nothing. Tie fails
// on a stage outside 0..Stages−1 or a device without an Update, and then
// leaves p as it was.
func (p *Program) Tie(stages []int) error {
	tied := slices.Clone(stages)
	slices.Sort(tied)
	tied = slices.Compact(tied)
	for _, s := range tied {
		if s < 0 || s >= p.Stages || s >= len(p.Owners) {
			return fmt.Errorf("tie stages %v: stage %d out of 0..%d", stages, s, p.Stages-1)
		}
	}
	if len(tied) < 2 {
		return nil
	}
	var group []int
	for _, s := range tied {
		group = append(group, p.Owners[s])
	}
	slices.Sort(group)
	group = slices.Compact(group)
	for _, d := range group {
		if d < 0 || d >= len(p.Devices) || countKind(p.Devices[d], Update) == 0 {
			return fmt.Errorf("tie stages %v: device %d has no update to sum the gradients before", stages, d)
		}
		if slices.ContainsFunc(p.Devices[d], func(o Op) bool { return o.Kind == AllReduce && slices.Equal(o.Stages, tied) }) {
			return nil // tied already
		}
	}
	g := slices.IndexFunc(p.Groups, func(m []int) bool { return slices.Equal(m, group) })
	if g < 0 {
		g = len(p.Groups)
		p.Groups = append(p.Groups, group)
	}
	for _, d := range group {
		first := tied[slices.IndexFunc(tied, func(s int) bool { return p.Owners[s] == d })]
		ops := p.Devices[d]
		u := slices.IndexFunc(ops, func(o Op) bool { return o.Kind == Update })
		p.Devices[d] = slices.Insert(ops, u, allReduceOp(g, first, slices.Clone(tied)))
	}
	return nil
}

// allReduceOp is the AllReduce of group over the stages tied, on the
// device whose first stage among them is stage.
func allReduceOp(group, stage int, tied []int) Op {
	return Op{Kind: AllReduce, Stage: stage, Micro: None, Shard: None, Peer: None, Stages: tied, Group: group}
}

// allReduceShape returns what is wrong with AllReduce o on device k, or
// "": it names two or more stages in increasing order, its group is the
// devices that own them, and its Stage is device k's first of them.
func (c *checker) allReduceShape(k int, o Op) string {
	if len(o.Stages) < 2 {
		return fmt.Sprintf("all-reduce of stages %v, want at least two", o.Stages)
	}
	var owners []int
	for i, s := range o.Stages {
		switch {
		case s < 0 || s >= c.S:
			return fmt.Sprintf("all-reduce of stage %d, out of 0..%d", s, c.S-1)
		case i > 0 && s <= o.Stages[i-1]:
			return fmt.Sprintf("all-reduce of stages %v, want distinct stages in increasing order", o.Stages)
		}
		owners = append(owners, c.p.Owners[s])
	}
	slices.Sort(owners)
	owners = slices.Compact(owners)
	if g := c.p.Groups[o.Group]; !slices.Equal(g, owners) {
		return fmt.Sprintf("all-reduce over group %d, %v, want the owners %v of stages %v", o.Group, g, owners, o.Stages)
	}
	first := o.Stages[slices.IndexFunc(o.Stages, func(s int) bool { return c.p.Owners[s] == k })]
	if o.Stage != first {
		return fmt.Sprintf("all-reduce on stage %d, want device %d's first stage %d of %v", o.Stage, k, first, o.Stages)
	}
	return ""
}

// allReduce checks AllReduce o: the gradients it sums must be complete,
// every micro-batch's backward (split: backward-weight) of the device's
// stages among o.Stages done, and no earlier all-reduce may have summed
// the same stages.
func (d *deviceCheck) allReduce(o Op, at func(string, ...any)) {
	if slices.ContainsFunc(d.reduced, func(st []int) bool { return slices.Equal(st, o.Stages) }) {
		at("second all-reduce of stages %v", o.Stages)
	}
	d.reduced = append(d.reduced, o.Stages)
	for _, s := range o.Stages {
		if d.p.Owners[s] != d.k {
			continue
		}
		for j := range d.st[s] {
			st := &d.st[s][j]
			if (d.split && st.weight == 0) || (!d.split && st.backward == 0) {
				at("all-reduce before the weight gradient of %s is complete", d.pair(s, j))
				return
			}
		}
	}
}
