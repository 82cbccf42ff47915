package schedule

import "fmt"

// Data-parallel replicas: a job of R replicas runs R copies of one
// pipeline's program (Program.Replicas), and every device sums its
// stages' gradients with its replicas' before the update.

// dpAllReduceOp is the DPAllReduce of stage.
func dpAllReduceOp(stage int) Op {
	return Op{Kind: DPAllReduce, Stage: stage, Micro: None, Shard: None, Peer: None, Group: None}
}

// addReplicaReduces adds, when p runs in more than one replica, a
// DPAllReduce of every stage a device owns, as early as the stage's
// gradients are complete: after its last backward (split: backward-
// weight) and after the send of that backward's input gradient, which
// the previous stage waits for, so that the sum overlaps the rest of the
// device's work where its other stages still have any.
func addReplicaReduces(p *Program) {
	if p.Replicas() < 2 {
		return
	}
	for k, ops := range p.Devices {
		for _, s := range p.StagesOf(k) {
			at := -1
			for i, o := range ops {
				if o.Stage == s && (o.Kind == Backward || o.Kind == BackwardWeight) {
					at = i
				}
			}
			if at < 0 {
				continue // a stage without backwards; the checker says so
			}
			b := ops[at]
			if n := at + 1; n < len(ops) && ops[n].Kind == Send && ops[n].What == Gradient && ops[n].Stage == s && ops[n].Micro == b.Micro {
				at = n
			}
			ops = append(ops[:at+1], append([]Op{dpAllReduceOp(s)}, ops[at+1:]...)...)
		}
		p.Devices[k] = ops
	}
}

// dpAllReduceShape returns what is wrong with DPAllReduce o on device k,
// or "": the program runs in replicas and o reduces a stage k owns.
func (c *checker) dpAllReduceShape(k int, o Op) string {
	switch {
	case c.p.Replicas() < 2:
		return "dp-allreduce in a program of one replica, which has no replicas to sum with"
	case o.Stage < 0 || o.Stage >= c.S || c.p.Owners[o.Stage] != k:
		return fmt.Sprintf("dp-allreduce of stage %d on device %d, which owns %s", o.Stage, k, c.ownedBy(k))
	}
	return ""
}

// dpAllReduce checks DPAllReduce o: every micro-batch's backward (split:
// backward-weight) of its stage is done, and the stage was not summed
// before.
func (d *deviceCheck) dpAllReduce(o Op, at func(string, ...any)) {
	if d.dpReduced == nil {
		d.dpReduced = map[int]int{}
	}
	if d.dpReduced[o.Stage]++; d.dpReduced[o.Stage] > 1 {
		at("second dp-allreduce of stage %d", o.Stage)
	}
	for j := range d.st[o.Stage] {
		st := &d.st[o.Stage][j]
		if (d.split && st.weight == 0) || (!d.split && st.backward == 0) {
			at("dp-allreduce before the weight gradient of %s is complete", d.pair(o.Stage, j))
			return
		}
	}
}

// finishReplicas checks, at the end of the device's ops, that in a
// program of replicas every stage the device owns was summed once.
func (d *deviceCheck) finishReplicas() {
	if d.p.Replicas() < 2 {
		return
	}
	for _, s := range d.owned[d.k] {
		if n := d.dpReduced[s]; n != 1 {
			d.fail("device %d: %d dp-allreduces of stage %d, want 1 in a program of %d replicas", d.k, n, s, d.p.Replicas())
		}
	}
}
