package schedule

import (
	"slices"
	"strings"
	"testing"
)

// TestReplicaReduces builds every schedule in two replicas and checks
// that the checker accepts it, that every device sums each of its stages
// once, right after the stage's gradients are complete (and the input
// gradient's send), and that the rest of the program is the one-replica
// program's.
func TestReplicaReduces(t *testing.T) {
	for _, name := range Names() {
		for _, k := range []int{1, 2, 4} {
			for _, m := range []int{1, 2, 4, 8} {
				o := Options{Name: name, Devices: k, Micro: m}.WithDefaults()
				if o.Check() != nil {
					continue
				}
				one, err := Build(o)
				if err != nil {
					t.Fatal(err)
				}
				o.Replicas = 2
				p, err := Build(o)
				if err != nil {
					t.Fatal(err)
				}
				if err := Check(p); err != nil {
					t.Errorf("%s K=%d M=%d R=2: %v", name, k, m, err)
					continue
				}
				for d, ops := range p.Devices {
					var reduced []int
					var rest []Op
					for i, op := range ops {
						if op.Kind != DPAllReduce {
							rest = append(rest, op)
							continue
						}
						reduced = append(reduced, op.Stage)
						// Nothing later computes on the stage's gradients.
						for _, later := range ops[i+1:] {
							if later.Stage == op.Stage && (later.Kind == Backward || later.Kind == BackwardWeight) {
								t.Errorf("%s K=%d M=%d device %d: %v after %v", name, k, m, d, later, op)
							}
						}
						prev := ops[i-1]
						if prev.Kind == Send && prev.What == Gradient {
							prev = ops[i-2]
						}
						if prev.Stage != op.Stage || (prev.Kind != Backward && prev.Kind != BackwardWeight) {
							t.Errorf("%s K=%d M=%d device %d: %v follows %v, want the stage's last backward", name, k, m, d, op, prev)
						}
					}
					slices.Sort(reduced)
					if want := p.StagesOf(d); !slices.Equal(reduced, want) {
						t.Errorf("%s K=%d M=%d device %d: sums stages %v, want %v", name, k, m, d, reduced, want)
					}
					if !slices.EqualFunc(rest, one.Devices[d], func(a, b Op) bool { return a.String() == b.String() }) {
						t.Errorf("%s K=%d M=%d device %d: the other ops differ from one replica's", name, k, m, d)
					}
				}
			}
		}
	}
}

// TestReplicaReducesChecked breaks the sums of a program of replicas in
// every way the checker promises to catch.
func TestReplicaReducesChecked(t *testing.T) {
	build := func(r int) *Program {
		p, err := Build(Options{Name: OneF1B, Devices: 2, Micro: 4, Replicas: r})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	index := func(ops []Op, kind OpKind) int {
		return slices.IndexFunc(ops, func(o Op) bool { return o.Kind == kind })
	}
	for _, c := range []struct {
		name, want string
		breakIt    func(*Program)
	}{
		{"none in one replica", "one replica", func(p *Program) {
			*p = *build(1)
			p.Devices[0] = slices.Insert(p.Devices[0], len(p.Devices[0])-1, dpAllReduceOp(0))
		}},
		{"missing", "0 dp-allreduces of stage 1", func(p *Program) {
			p.Devices[1] = slices.Delete(p.Devices[1], index(p.Devices[1], DPAllReduce), index(p.Devices[1], DPAllReduce)+1)
		}},
		{"twice", "second dp-allreduce", func(p *Program) {
			p.Devices[0] = slices.Insert(p.Devices[0], len(p.Devices[0])-1, dpAllReduceOp(0))
		}},
		{"too early", "before the weight gradient", func(p *Program) {
			ops := p.Devices[0]
			ops = slices.Delete(ops, index(ops, DPAllReduce), index(ops, DPAllReduce)+1)
			p.Devices[0] = slices.Insert(ops, index(ops, Backward), dpAllReduceOp(0))
		}},
		{"another's stage", "which owns stage 0", func(p *Program) {
			p.Devices[0][index(p.Devices[0], DPAllReduce)].Stage = 1
		}},
	} {
		p := build(2)
		c.breakIt(p)
		err := Check(p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.name, err, c.want)
		}
	}
}
