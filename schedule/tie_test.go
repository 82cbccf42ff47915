package schedule

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// tiedOptions returns every schedule at K = 1..4 (single at K = 1 only)
// with M = 1..4 and each schedule's defaults.
func tiedOptions() []Options {
	var out []Options
	for _, name := range Names() {
		for K := 1; K <= 4; K++ {
			if name == Single && K > 1 {
				continue
			}
			for M := 1; M <= 4; M++ {
				out = append(out, Options{Name: name, Devices: K, Micro: M}.WithDefaults())
			}
		}
	}
	return out
}

// TestTieEverySchedule ties the first and the last stage of every
// schedule's program, as GPT-2's embedding and LM head are tied, and
// checks the result: it passes Check (so it does not deadlock), and
// exactly the owners of the two stages run one AllReduce each, right
// before their Update, over the group of those owners; a program of one
// stage is left as it was.
func TestTieEverySchedule(t *testing.T) {
	for _, o := range tiedOptions() {
		p, err := Build(o)
		if err != nil {
			t.Fatalf("Build(%+v): %v", o, err)
		}
		untied, _ := Build(o)
		last := p.Stages - 1
		if err := p.Tie([]int{0, last}); err != nil {
			t.Fatalf("%s K=%d M=%d: Tie: %v", o.Name, o.Devices, o.Micro, err)
		}
		if err := Check(p); err != nil {
			t.Errorf("Check(tied %s K=%d M=%d): %v", o.Name, o.Devices, o.Micro, err)
			continue
		}
		if last == 0 {
			if !reflect.DeepEqual(p, untied) {
				t.Errorf("%s K=%d M=%d: tying stage 0 to itself changed the program", o.Name, o.Devices, o.Micro)
			}
			continue
		}
		members := []int{p.Owners[0]}
		if p.Owners[last] != p.Owners[0] {
			members = append(members, p.Owners[last])
		}
		slices.Sort(members)
		for k, ops := range p.Devices {
			n := countKind(ops, AllReduce)
			want := 0
			if slices.Contains(members, k) {
				want = 1
			}
			if n != want {
				t.Errorf("%s K=%d M=%d: device %d runs %d all-reduces, want %d", o.Name, o.Devices, o.Micro, k, n, want)
				continue
			}
			if len(ops) != len(untied.Devices[k])+n {
				t.Errorf("%s K=%d M=%d: device %d has %d ops, want %d", o.Name, o.Devices, o.Micro, k, len(ops), len(untied.Devices[k])+n)
			}
			if n == 0 {
				continue
			}
			ar := ops[len(ops)-2]
			if ar.Kind != AllReduce || !slices.Equal(ar.Stages, []int{0, last}) || !slices.Equal(p.GroupOf(ar), members) {
				t.Errorf("%s K=%d M=%d: device %d's second-last op is %v over %v, want allreduce [0 %d] over %v",
					o.Name, o.Devices, o.Micro, k, ar, p.GroupOf(ar), last, members)
			}
		}
	}
}

// TestTieReusesGroupsAndRepeats checks that a tie over every device of
// coop reuses coop's group, that a second tie of the same stages adds
// nothing, and that two ties over different stages both run, in the order
// they were added.
func TestTieReusesGroupsAndRepeats(t *testing.T) {
	p, err := Build(Options{Name: Coop, Devices: 2, Micro: 2, Prefetch: 1})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := p.Tie([]int{1, 0, 1}); err != nil {
			t.Fatal(err)
		}
	}
	if len(p.Groups) != 1 || countKind(p.Devices[0], AllReduce) != 1 {
		t.Errorf("groups %v, %d all-reduces on device 0; want coop's one group and one all-reduce", p.Groups, countKind(p.Devices[0], AllReduce))
	}
	if err := Check(p); err != nil {
		t.Error(err)
	}

	p, err = Build(Options{Name: GPipe, Devices: 4, Micro: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range [][]int{{0, 3}, {1, 3}, {0, 2, 3}} {
		if err := p.Tie(st); err != nil {
			t.Fatal(err)
		}
	}
	if err := Check(p); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range p.Devices[3] {
		if o.Kind == AllReduce {
			got = append(got, o.String())
		}
	}
	want := []string{"allreduce [0 3]", "allreduce [1 3]", "allreduce [0 2 3]"}
	if !slices.Equal(got, want) {
		t.Errorf("device 3 runs %v, want %v", got, want)
	}
	if want := [][]int{{0, 3}, {1, 3}, {0, 2, 3}}; !reflect.DeepEqual(p.Groups, want) {
		t.Errorf("groups %v, want %v", p.Groups, want)
	}
}

// TestTieInterleavedOneDevice checks that two stages of one device still
// get an all-reduce, over a group of that device alone (which sums the
// one parameter they share in the runner, moving nothing).
func TestTieInterleavedOneDevice(t *testing.T) {
	p, err := Build(Options{Name: Interleaved, Devices: 1, Micro: 2, Virtual: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Tie([]int{0, 2}); err != nil {
		t.Fatal(err)
	}
	if err := Check(p); err != nil {
		t.Fatal(err)
	}
	if n := countKind(p.Devices[0], AllReduce); n != 1 || !reflect.DeepEqual(p.Groups, [][]int{{0}}) {
		t.Errorf("%d all-reduces over groups %v, want 1 over [[0]]", n, p.Groups)
	}
	chart, err := Chart(p)
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(chart), "\n")
	if f := strings.Fields(rows[len(rows)-1]); !slices.Equal(f[len(f)-2:], []string{"AR", "U"}) {
		t.Errorf("chart has no all-reduce before the update:\n%s", chart)
	}
}

func TestTieErrors(t *testing.T) {
	p, err := Build(Options{Name: OneF1B, Devices: 2, Micro: 2})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := Build(Options{Name: OneF1B, Devices: 2, Micro: 2})
	if err := p.Tie([]int{0, 2}); err == nil || !strings.Contains(err.Error(), "stage 2 out of 0..1") {
		t.Errorf("Tie([0 2]) on 2 stages: error %v, want stage 2 out of range", err)
	}
	p.Devices[1] = p.Devices[1][:len(p.Devices[1])-1]
	before.Devices[1] = before.Devices[1][:len(before.Devices[1])-1]
	if err := p.Tie([]int{0, 1}); err == nil || !strings.Contains(err.Error(), "device 1 has no update") {
		t.Errorf("Tie without an update: error %v, want one naming device 1", err)
	}
	if !reflect.DeepEqual(p, before) {
		t.Error("a failed Tie changed the program")
	}
}

// TestCheckBrokenTie breaks tied programs on purpose, as TestCheckBroken
// does untied ones.
func TestCheckBrokenTie(t *testing.T) {
	gpipe2 := Options{Name: GPipe, Devices: 2, Micro: 2, Checkpoint: Never}
	ar := func(p *Program, k int) int {
		return slices.IndexFunc(p.Devices[k], func(o Op) bool { return o.Kind == AllReduce })
	}
	tests := []struct {
		name   string
		o      Options
		mutate func(t *testing.T, p *Program)
		want   []string
	}{
		{
			name: "all-reduce missing on one device",
			o:    gpipe2,
			mutate: func(t *testing.T, p *Program) {
				p.Devices[1] = slices.Delete(p.Devices[1], ar(p, 1), ar(p, 1)+1)
			},
			want: []string{"group 0: device 1 runs collectives [] but device 0 runs [allreduce [0 1]]",
				"deadlock: device 0 waits in op 8 (allreduce [0 1]), which 1 of 2 devices reached"},
		},
		{
			name: "all-reduce before the last backward",
			o:    gpipe2,
			mutate: func(t *testing.T, p *Program) {
				i := ar(p, 0)
				o := p.Devices[0][i]
				ops := slices.Delete(p.Devices[0], i, i+1)
				p.Devices[0] = slices.Insert(ops, indexOf(t, ops, bw(0, 0)), o)
			},
			want: []string{"(allreduce [0 1]): all-reduce before the weight gradient of micro-batch 0 is complete"},
		},
		{
			name: "all-reduce before a backward-weight",
			o:    Options{Name: ZBH1, Devices: 2, Micro: 2},
			mutate: func(t *testing.T, p *Program) {
				i := ar(p, 1)
				o := p.Devices[1][i]
				ops := slices.Delete(p.Devices[1], i, i+1)
				p.Devices[1] = slices.Insert(ops, indexOf(t, ops, bwW(1, 1)), o)
			},
			want: []string{"all-reduce before the weight gradient of micro-batch 1 is complete"},
		},
		{
			name: "all-reduce of one stage",
			o:    gpipe2,
			mutate: func(t *testing.T, p *Program) {
				for k := range p.Devices {
					p.Devices[k][ar(p, k)].Stages = []int{0}
				}
			},
			want: []string{"all-reduce of stages [0], want at least two"},
		},
		{
			name: "all-reduce of stages out of order",
			o:    gpipe2,
			mutate: func(t *testing.T, p *Program) {
				for k := range p.Devices {
					p.Devices[k][ar(p, k)].Stages = []int{1, 0}
				}
			},
			want: []string{"all-reduce of stages [1 0], want distinct stages in increasing order"},
		},
		{
			name: "all-reduce over a group that is not the owners",
			o:    Options{Name: OneF1B, Devices: 3, Micro: 2},
			mutate: func(t *testing.T, p *Program) {
				p.Groups[0] = []int{0, 1, 2}
				p.Devices[1] = slices.Insert(p.Devices[1], len(p.Devices[1])-1, allReduceOp(0, 1, []int{0, 2}))
			},
			want: []string{"all-reduce over group 0, [0 1 2], want the owners [0 2] of stages [0 2]"},
		},
		{
			name: "all-reduce on another stage",
			o:    gpipe2,
			mutate: func(t *testing.T, p *Program) {
				p.Devices[1][ar(p, 1)].Stage = 0
			},
			want: []string{"all-reduce on stage 0, want device 1's first stage 1 of [0 1]"},
		},
		{
			name: "second all-reduce of the same stages",
			o:    gpipe2,
			mutate: func(t *testing.T, p *Program) {
				for k := range p.Devices {
					o := p.Devices[k][ar(p, k)]
					p.Devices[k] = slices.Insert(p.Devices[k], ar(p, k), o)
				}
			},
			want: []string{"second all-reduce of stages [0 1]"},
		},
		{
			name: "all-reduce after the update",
			o:    gpipe2,
			mutate: func(t *testing.T, p *Program) {
				swap(t, p.Devices[0], update(0), p.Devices[0][ar(p, 0)])
			},
			want: []string{"update is not the last op"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Build(tt.o)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Tie([]int{0, p.Stages - 1}); err != nil {
				t.Fatal(err)
			}
			if err := Check(p); err != nil {
				t.Fatalf("unbroken program fails: %v", err)
			}
			tt.mutate(t, p)
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
