package schedule

import (
	"reflect"
	"strings"
	"testing"
)

func TestProgramLoadsAndGroups(t *testing.T) {
	in := wholeLoad(Inputs, Forward)
	lab := wholeLoad(Labels, Loss)
	tests := []struct {
		o      Options
		loads  [][]Load
		groups [][]int
	}{
		{Options{Name: Single, Devices: 1, Micro: 2}, [][]Load{{in, lab}}, nil},
		{Options{Name: GPipe, Devices: 3, Micro: 2}, [][]Load{{in}, nil, {lab}}, nil},
		{Options{Name: OneF1B, Devices: 2, Micro: 2}, [][]Load{{in}, {lab}}, nil},
		{Options{Name: ZBH1, Devices: 2, Micro: 2}, [][]Load{{in}, {lab}}, nil},
		// Stage 3 of 4 lives on device 3 mod 2 = 1.
		{Options{Name: Interleaved, Devices: 2, Micro: 2, Virtual: 2}, [][]Load{{in}, {lab}}, nil},
		{Options{Name: Interleaved, Devices: 1, Micro: 2, Virtual: 2}, [][]Load{{in, lab}}, nil},
		{Options{Name: Coop, Devices: 1, Micro: 2, Prefetch: 1}, [][]Load{{in, lab}}, nil},
		{Options{Name: Coop, Devices: 3, Micro: 2, Prefetch: 1}, [][]Load{
			{in, shardLoad(Inputs, Predict, 0, 3)},
			{shardLoad(Inputs, Predict, 1, 3)},
			{shardLoad(Inputs, Predict, 2, 3), lab},
		}, [][]int{{0, 1, 2}}},
	}
	for _, tt := range tests {
		p, err := Build(tt.o)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(p.Loads, tt.loads) {
			t.Errorf("%s K=%d: loads %v, want %v", tt.o.Name, tt.o.Devices, p.Loads, tt.loads)
		}
		if !reflect.DeepEqual(p.Groups, tt.groups) {
			t.Errorf("%s K=%d: groups %v, want %v", tt.o.Name, tt.o.Devices, p.Groups, tt.groups)
		}
		for k, ops := range p.Devices {
			for _, o := range ops {
				if want := None; o.Kind.Collective() {
					if o.Group != 0 {
						t.Errorf("%s device %d: %v in group %d, want 0", tt.o.Name, k, o, o.Group)
					}
				} else if o.Group != want {
					t.Errorf("%s device %d: %v in group %d, want none", tt.o.Name, k, o, o.Group)
				}
			}
		}
	}
}

func TestLoadRange(t *testing.T) {
	tests := []struct {
		l      Load
		batch  int
		lo, hi int
	}{
		{wholeLoad(Inputs, Forward), 12, 0, 12},
		{shardLoad(Inputs, Predict, 1, 4), 12, 3, 6},
		{shardLoad(Inputs, Predict, 3, 4), 12, 9, 12},
		// Uneven shards still cover the batch: 0..3, 3..6, 6..10.
		{shardLoad(Inputs, Predict, 2, 3), 10, 6, 10},
	}
	for _, tt := range tests {
		if lo, hi := tt.l.Range(tt.batch); lo != tt.lo || hi != tt.hi {
			t.Errorf("%v of %d: [%d, %d), want [%d, %d)", tt.l, tt.batch, lo, hi, tt.lo, tt.hi)
		}
	}
	half := shardLoad(Labels, Loss, 1, 2)
	for j, want := range []bool{false, false, true, true} {
		if got := half.Holds(j, 4); got != want {
			t.Errorf("%v holds micro-batch %d of 4: %v, want %v", half, j, got, want)
		}
	}
	if half.Holds(0, 1) {
		t.Errorf("%v holds the only micro-batch of 1, want not", half)
	}
}

// TestCheckBrokenData breaks a program's loads and groups on purpose and
// checks that the checker refuses it.
func TestCheckBrokenData(t *testing.T) {
	gpipe := Options{Name: GPipe, Devices: 2, Micro: 2, Checkpoint: Never}
	coop3 := Options{Name: Coop, Devices: 3, Micro: 2, Prefetch: 1}
	tests := []struct {
		name   string
		o      Options
		mutate func(p *Program)
		want   []string
	}{
		{
			name:   "group without a device that takes part",
			o:      coop3,
			mutate: func(p *Program) { p.Groups[0] = []int{0, 1} },
			want: []string{"device 2 op 0 (allgather [0 1]): device 2 takes part in a collective of group 0, [0 1], which it is not in",
				"device 2 op 3 (alltoall): device 2 takes part in a collective of group 0"},
		},
		{
			name: "a group's devices disagree on the order",
			o:    coop3,
			mutate: func(p *Program) {
				// Devices 0 and 1 move their all-to-all into a group of
				// their own; device 2 still runs it in group 0.
				p.Groups = append(p.Groups, []int{0, 1})
				for k := range 2 {
					i := len(p.Devices[k]) - 1
					for p.Devices[k][i].Kind != AllToAll {
						i--
					}
					p.Devices[k][i].Group = 1
				}
			},
			want: []string{"device 0 op 3 (alltoall): spans group [0 1], want every device",
				"group 0: device 2 runs collectives [allgather [0 1] alltoall] but device 0 runs [allgather [0 1]]"},
		},
		{
			name:   "collective without a group",
			o:      coop3,
			mutate: func(p *Program) { p.Devices[1][0].Group = None },
			want:   []string{"device 1 op 0 (allgather [0 1]): group -1 out of 0..0"},
		},
		{
			name:   "group on an op that is no collective",
			o:      gpipe,
			mutate: func(p *Program) { p.Devices[0][0].Group = 0 },
			want:   []string{"device 0 op 0 (F0.0): group 0 on a forward, which is no collective"},
		},
		{
			name:   "group out of order",
			o:      coop3,
			mutate: func(p *Program) { p.Groups[0] = []int{0, 2, 1} },
			want:   []string{"group 0 is [0 2 1], want distinct devices in increasing order"},
		},
		{
			name:   "labels on the wrong device",
			o:      gpipe,
			mutate: func(p *Program) { p.Loads[0], p.Loads[1] = append(p.Loads[0], p.Loads[1]...), nil },
			want: []string{"device 1 runs loss ops but loads no labels for them",
				"device 0 loads labels for loss but runs no loss that reads it"},
		},
		{
			name:   "inputs missing",
			o:      gpipe,
			mutate: func(p *Program) { p.Loads[0] = nil },
			want:   []string{"device 0 runs forward ops but loads no inputs for them"},
		},
		{
			name:   "inputs of half the batch",
			o:      gpipe,
			mutate: func(p *Program) { p.Loads[0][0] = shardLoad(Inputs, Forward, 0, 2) },
			want:   []string{"device 0 loads inputs 0/2 for forward, which does not hold micro-batch 1 of 2"},
		},
		{
			name:   "prediction shard of another device",
			o:      coop3,
			mutate: func(p *Program) { p.Loads[1][0].Shard = 2 },
			want:   []string{"device 1 loads inputs 2/3 for predict but predicts on shard 1 of 3"},
		},
		{
			name:   "labels for a forward",
			o:      gpipe,
			mutate: func(p *Program) { p.Loads[1][0].For = Forward },
			want:   []string{"device 1 load 0 (labels for forward): want inputs for forward or predict, or labels for loss"},
		},
		{
			name:   "a load list missing",
			o:      gpipe,
			mutate: func(p *Program) { p.Loads = p.Loads[:1] },
			want:   []string{"1 load lists for 2 devices, want one per device"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Build(tt.o)
			if err != nil {
				t.Fatal(err)
			}
			if err := Check(p); err != nil {
				t.Fatalf("unbroken program fails: %v", err)
			}
			tt.mutate(p)
			err = Check(p)
			if err == nil {
				t.Fatal("Check passes, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestSimulateGroups checks that a collective waits only for the devices
// of its group: devices 0 and 1 all-gather together while device 2 runs
// its collective alone, without waiting for them.
func TestSimulateGroups(t *testing.T) {
	coll := func(kind OpKind, g int) Op {
		return Op{Kind: kind, Stage: None, Micro: None, Shard: None, Peer: None, Group: g}
	}
	p := &Program{
		Stages: 3, Owners: []int{0, 1, 2}, MaxLive: []int{0, 0, 0},
		Groups: [][]int{{0, 1}, {2}},
		Devices: [][]Op{
			{coll(AllGather, 0)},
			{forwardOp(1, 0, false), coll(AllGather, 0)},
			{coll(AllToAll, 1)},
		},
	}
	cost := func(_ int, o Op) float64 {
		if o.Kind == Forward {
			return 5
		}
		return 1
	}
	tl, err := Simulate(p, cost)
	if err != nil {
		t.Fatal(err)
	}
	if tl.Start[0][0] != 5 || tl.Start[1][1] != 5 {
		t.Errorf("group 0's all-gather starts at %v and %v, want 5 on both", tl.Start[0][0], tl.Start[1][1])
	}
	if tl.Start[2][0] != 0 || tl.End[2][0] != 1 {
		t.Errorf("group 1's all-to-all [%v, %v], want [0, 1]", tl.Start[2][0], tl.End[2][0])
	}
	p.Groups[1] = []int{1} // device 2 is not in the group it names
	if _, err := Simulate(p, cost); err == nil || !strings.Contains(err.Error(), "device 2 op 0 (alltoall): group 1 is [1]") {
		t.Errorf("error %v, want device 2's group refused", err)
	}
}
