package schedule

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// indexOf returns the index of op in ops; it fails the test if op is not
// there.
func indexOf(t *testing.T, ops []Op, op Op) int {
	t.Helper()
	i := slices.IndexFunc(ops, func(o Op) bool { return reflect.DeepEqual(o, op) })
	if i < 0 {
		t.Fatalf("%v not in %v", op, ops)
	}
	return i
}

// without returns ops without the op equal to op.
func without(t *testing.T, ops []Op, op Op) []Op {
	t.Helper()
	return slices.Delete(slices.Clone(ops), indexOf(t, ops, op), indexOf(t, ops, op)+1)
}

// swap exchanges the ops equal to a and b.
func swap(t *testing.T, ops []Op, a, b Op) {
	t.Helper()
	i, j := indexOf(t, ops, a), indexOf(t, ops, b)
	ops[i], ops[j] = ops[j], ops[i]
}

func TestCheckBroken(t *testing.T) {
	gpipeNever := Options{Name: GPipe, Devices: 2, Micro: 2, Checkpoint: Never}
	gpipeCkpt := Options{Name: GPipe, Devices: 2, Micro: 2, Checkpoint: Always}
	coop3 := Options{Name: Coop, Devices: 3, Micro: 2, Prefetch: 1}
	zbh1 := Options{Name: ZBH1, Devices: 2, Micro: 2}
	inter2 := Options{Name: Interleaved, Devices: 2, Micro: 2, Virtual: 2}
	inter1 := Options{Name: Interleaved, Devices: 1, Micro: 1, Virtual: 2}
	tests := []struct {
		name   string
		o      Options
		mutate func(t *testing.T, p *Program)
		want   []string // every one must appear in the error
	}{
		{
			name: "dropped recv",
			o:    gpipeNever,
			mutate: func(t *testing.T, p *Program) {
				p.Devices[1] = without(t, p.Devices[1], recvA(0, 1))
			},
			want: []string{"unmatched transfer activation 0.1 from device 0 to device 1: 1 sends and 0 recvs",
				"device 1 op 3 (F1.1): forward before its input arrived"},
		},
		{
			name: "dropped send",
			o:    gpipeNever,
			mutate: func(t *testing.T, p *Program) {
				p.Devices[1] = without(t, p.Devices[1], sendG(1, 0))
			},
			want: []string{"unmatched transfer gradient 1.0 from device 1 to device 0: 0 sends and 1 recvs",
				"deadlock: device 0 waits in op 6 (recv gradient 1.0 peer 1) for the send of gradient 1.0 from device 1 to device 0"},
		},
		{
			name: "swapped order deadlocks",
			o:    gpipeNever,
			mutate: func(t *testing.T, p *Program) {
				// Device 0 waits for the gradient of micro-batch 1 before it
				// sends micro-batch 1's input, which device 1 needs first.
				swap(t, p.Devices[0], sendA(0, 1), recvG(1, 1))
			},
			want: []string{"deadlock",
				"device 0 waits in op 3 (recv gradient 1.1 peer 1)",
				"device 1 waits in op 3 (recv activation 0.1 peer 0)"},
		},
		{
			name: "a forward too many for MaxLive",
			o:    Options{Name: OneF1B, Devices: 2, Micro: 3},
			mutate: func(t *testing.T, p *Program) {
				// Run device 0's third forward before its first backward.
				ops := p.Devices[0]
				ops = without(t, ops, fw(0, 2))
				ops = without(t, ops, sendA(0, 2))
				i := indexOf(t, ops, recvG(1, 0))
				p.Devices[0] = slices.Insert(ops, i, fw(0, 2), sendA(0, 2))
			},
			want: []string{"device 0 op 4 (F0.2): 3 micro-batches' activations kept, more than MaxLive 2"},
		},
		{
			name: "MaxLive promise too small",
			o:    gpipeNever,
			mutate: func(t *testing.T, p *Program) {
				p.MaxLive[1] = 1
			},
			want: []string{"device 1 op 4 (F1.1): 2 micro-batches' activations kept, more than MaxLive 1"},
		},
		{
			name: "missing update",
			o:    gpipeNever,
			mutate: func(t *testing.T, p *Program) {
				p.Devices[1] = p.Devices[1][:len(p.Devices[1])-1]
			},
			want: []string{"device 1: 0 updates, want one as the last op"},
		},
		{
			name: "update not last",
			o:    gpipeNever,
			mutate: func(t *testing.T, p *Program) {
				swap(t, p.Devices[0], update(0), bw(0, 0))
			},
			want: []string{"device 0 op 7 (update): update is not the last op", "device 0: 1 updates, want one as the last op"},
		},
		{
			name: "second backward",
			o:    gpipeNever,
			mutate: func(t *testing.T, p *Program) {
				ops := p.Devices[1]
				p.Devices[1] = slices.Insert(ops, len(ops)-1, bw(1, 0))
			},
			want: []string{"second backward of micro-batch 0", "micro-batch 0 has 1 forwards and 2 backwards"},
		},
		{
			name: "dropped backward",
			o:    gpipeNever,
			mutate: func(t *testing.T, p *Program) {
				p.Devices[0] = without(t, p.Devices[0], bw(0, 0))
			},
			want: []string{"device 0: micro-batch 0 has 1 forwards and 0 backwards, want 1 each",
				"device 0: micro-batch 0's activations are still kept at the end"},
		},
		{
			name: "backward before forward",
			o:    gpipeNever,
			mutate: func(t *testing.T, p *Program) {
				ops := without(t, p.Devices[1], bw(1, 1))
				p.Devices[1] = slices.Insert(ops, 0, bw(1, 1))
			},
			want: []string{"device 1 op 0 (B1.1): backward before the forward of micro-batch 1"},
		},
		{
			name: "checkpointed backward without recompute",
			o:    gpipeCkpt,
			mutate: func(t *testing.T, p *Program) {
				p.Devices[0] = without(t, p.Devices[0], rc(0, 0))
			},
			want: []string{"device 0 op 8 (B0.0): backward of checkpointed micro-batch 0 without a recompute"},
		},
		{
			name: "recompute of a kept forward",
			o:    gpipeNever,
			mutate: func(t *testing.T, p *Program) {
				i := indexOf(t, p.Devices[0], bw(0, 0))
				p.Devices[0] = slices.Insert(p.Devices[0], i, rc(0, 0))
			},
			want: []string{"recompute not after a single checkpointed forward of micro-batch 0"},
		},
		{
			name: "missing loss",
			o:    gpipeNever,
			mutate: func(t *testing.T, p *Program) {
				p.Devices[1] = without(t, p.Devices[1], loss(1, 1))
			},
			want: []string{"B1.1): backward before its output gradient arrived", "micro-batch 1 has 0 losses, want 1"},
		},
		{
			name: "gradient sent before its backward",
			o:    gpipeNever,
			mutate: func(t *testing.T, p *Program) {
				swap(t, p.Devices[1], sendG(1, 0), bw(1, 0))
			},
			want: []string{"(send gradient 1.0 peer 0): sends a gradient before its backward"},
		},
		{
			name: "compute on another device's stage",
			o:    gpipeNever,
			mutate: func(t *testing.T, p *Program) {
				p.Devices[0][0].Stage = 1
			},
			want: []string{"device 0 op 0 (F1.0): stage 1 on device 0, which owns stage 0"},
		},
		{
			name: "collectives out of order",
			o:    coop3,
			mutate: func(t *testing.T, p *Program) {
				swap(t, p.Devices[2], gather(0, 1), scatter())
			},
			want: []string{"device 2 runs collectives [alltoall allgather [0 1]] but device 0 runs [allgather [0 1] alltoall]",
				"collective 0: device 0 runs allgather but device 2 runs alltoall"},
		},
		{
			name: "coop predict missing",
			o:    coop3,
			mutate: func(t *testing.T, p *Program) {
				p.Devices[1] = without(t, p.Devices[1], pred(1, 1))
			},
			want: []string{"device 1: predicts stages 0..0, want 0..1"},
		},
		{
			name: "coop predict of another shard",
			o:    coop3,
			mutate: func(t *testing.T, p *Program) {
				p.Devices[1][1].Shard = 0
			},
			want: []string{"device 1 op 1 (P0.s0): predicts shard 0, want its own shard 1"},
		},
		{
			name: "coop predict after the all-to-all",
			o:    coop3,
			mutate: func(t *testing.T, p *Program) {
				swap(t, p.Devices[0], pred(1, 0), scatter())
			},
			want: []string{"device 0 op 3 (P1.s0): predict outside the all-gather … all-to-all window"},
		},
		{
			name: "backward-weight before its backward-input",
			o:    zbh1,
			mutate: func(t *testing.T, p *Program) {
				swap(t, p.Devices[1], bwI(1, 0), bwW(1, 0))
			},
			want: []string{"(W1.0): backward-weight before the backward-input of micro-batch 0"},
		},
		{
			name: "dropped backward-weight",
			o:    zbh1,
			mutate: func(t *testing.T, p *Program) {
				p.Devices[0] = without(t, p.Devices[0], bwW(0, 1))
			},
			want: []string{"device 0: micro-batch 1 has 1 forwards, 1 backward-inputs and 0 backward-weights, want 1 each",
				"device 0: micro-batch 1's activations are still kept at the end"},
		},
		{
			name: "backward in a split schedule",
			o:    zbh1,
			mutate: func(t *testing.T, p *Program) {
				p.Devices[0][indexOf(t, p.Devices[0], bwI(0, 0))] = bw(0, 0)
			},
			want: []string{"(B0.0): backward in zb-h1, which splits it into a backward-input and a backward-weight"},
		},
		{
			name: "split backward in a schedule that does not split",
			o:    Options{Name: OneF1B, Devices: 2, Micro: 2},
			mutate: func(t *testing.T, p *Program) {
				p.Devices[0][indexOf(t, p.Devices[0], bw(0, 0))] = bwI(0, 0)
			},
			want: []string{"(I0.0): backward-input in 1f1b, which does not split its backwards"},
		},
		{
			name: "more pairs live than zb-h1 promises",
			o:    Options{Name: ZBH1, Devices: 3, Micro: 4},
			mutate: func(t *testing.T, p *Program) {
				p.MaxLive[2] = 2
			},
			want: []string{"device 2 op 11 (F2.2): 3 micro-batches' activations kept, more than MaxLive 2"},
		},
		{
			name: "compute on a stage the device does not own",
			o:    inter2,
			mutate: func(t *testing.T, p *Program) {
				p.Devices[0][indexOf(t, p.Devices[0], fw(2, 0))].Stage = 1
			},
			want: []string{"(F1.0): stage 1 on device 0, which owns stages [0 2]"},
		},
		{
			name: "send to the own device",
			o:    inter2,
			mutate: func(t *testing.T, p *Program) {
				p.Devices[0][indexOf(t, p.Devices[0], sendA(0, 0))].Peer = 0
			},
			want: []string{"(send activation 0.0 peer 0): peer is the device itself"},
		},
		{
			name: "send to a device that does not own the next stage",
			o:    Options{Name: Interleaved, Devices: 3, Micro: 3, Virtual: 2},
			mutate: func(t *testing.T, p *Program) {
				p.Devices[2][indexOf(t, p.Devices[2], sendOp(Activation, 2, 0, 0))].Peer = 1
			},
			want: []string{"(send activation 2.0 peer 1): activation from device 2 goes to device 1, want 0, the owner of stage 3"},
		},
		{
			name: "update on a stage other than the first",
			o:    inter2,
			mutate: func(t *testing.T, p *Program) {
				p.Devices[1][len(p.Devices[1])-1].Stage = 3
			},
			want: []string{"(update): update of stage 3 on device 1, want its first stage 1"},
		},
		{
			name: "owners not interleaved",
			o:    inter2,
			mutate: func(t *testing.T, p *Program) {
				p.Owners[2] = 1
			},
			want: []string{"stage 2 owned by device 1, want device 0"},
		},
		{
			name: "stages not K·v",
			o:    inter2,
			mutate: func(t *testing.T, p *Program) {
				p.Options.Virtual = 3
			},
			want: []string{"4 stages with 3 virtual stages on 2 devices, want K·v = 6"},
		},
		{
			name: "forward without its hand-over",
			o:    inter1,
			mutate: func(t *testing.T, p *Program) {
				swap(t, p.Devices[0], fw(0, 0), fw(1, 0))
			},
			want: []string{"device 0 op 0 (F1.0): forward before its input arrived (no earlier forward of stage 0 on this device to hand it over)"},
		},
		{
			name: "backward without its hand-over",
			o:    inter1,
			mutate: func(t *testing.T, p *Program) {
				swap(t, p.Devices[0], bw(1, 0), bw(0, 0))
			},
			want: []string{"(B0.0): backward before its output gradient arrived (no earlier backward of stage 1 on this device to hand it over)"},
		},
		{
			name: "MaxLive missing",
			o:    gpipeNever,
			mutate: func(t *testing.T, p *Program) {
				p.MaxLive = p.MaxLive[:1]
			},
			want: []string{"2 devices, 2 stages, 1 MaxLive entries and 2 devices in the options"},
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

func TestCheckNil(t *testing.T) {
	if err := Check(nil); err == nil {
		t.Error("Check(nil) passes, want an error")
	}
}
