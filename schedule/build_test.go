package schedule

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestBuildErrors(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"unknown name", Options{Name: "pipedream", Devices: 2, Micro: 2}, `schedule "pipedream": unknown`},
		{"no devices", Options{Name: GPipe, Devices: 0, Micro: 2}, "devices 0: need at least 1"},
		{"negative devices", Options{Name: OneF1B, Devices: -1, Micro: 2}, "devices -1"},
		{"no micro-batches", Options{Name: GPipe, Devices: 2, Micro: 0}, "microbatches 0: need at least 1"},
		{"single on two devices", Options{Name: Single, Devices: 2, Micro: 1}, "single at K=2: it runs on one device"},
		{"coop without prefetch", Options{Name: Coop, Devices: 2, Micro: 2}, "prefetch 0: need at least 1"},
		{"coop negative prefetch", Options{Name: Coop, Devices: 2, Micro: 2, Prefetch: -3}, "prefetch -3"},
		{"gpipe bad checkpoint", Options{Name: GPipe, Devices: 2, Micro: 2, Checkpoint: 7}, "checkpoint 7: unknown mode"},
		{"interleaved without virtual stages", Options{Name: Interleaved, Devices: 2, Micro: 2}, "virtual-stages 0: need at least 1"},
		{"interleaved negative virtual stages", Options{Name: Interleaved, Devices: 2, Micro: 2, Virtual: -2}, "virtual-stages -2"},
		{"zb-h1 no micro-batches", Options{Name: ZBH1, Devices: 2, Micro: 0}, "microbatches 0: need at least 1"},
		{"zb-h2 no devices", Options{Name: ZBH2, Devices: 0, Micro: 2}, "devices 0: need at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Build(tt.o)
			if err == nil {
				t.Fatalf("Build(%+v) = %d devices, want an error", tt.o, len(p.Devices))
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Build(%+v) error %q, want it to contain %q", tt.o, err, tt.want)
			}
		})
	}
}

// allOptions returns every schedule option the checks sweep: K and M in
// 1..8, every checkpoint mode, prefetch 1, 2, M and M+1, virtual stages
// 1..4, and both zero-bubble schedules. Build accepts all of them.
func allOptions() []Options {
	var all []Options
	for M := 1; M <= 8; M++ {
		all = append(all, Options{Name: Single, Devices: 1, Micro: M})
		for K := 1; K <= 8; K++ {
			for _, c := range []Checkpoint{ExceptLast, Always, Never} {
				all = append(all, Options{Name: GPipe, Devices: K, Micro: M, Checkpoint: c})
			}
			all = append(all, Options{Name: OneF1B, Devices: K, Micro: M})
			for _, d := range []int{1, 2, M, M + 1} {
				all = append(all, Options{Name: Coop, Devices: K, Micro: M, Prefetch: d})
			}
			for v := 1; v <= 4; v++ {
				all = append(all, Options{Name: Interleaved, Devices: K, Micro: M, Virtual: v})
			}
			all = append(all, Options{Name: ZBH1, Devices: K, Micro: M}, Options{Name: ZBH2, Devices: K, Micro: M})
		}
	}
	return all
}

func TestCheckEverySchedule(t *testing.T) {
	for _, o := range allOptions() {
		p, err := Build(o)
		if err != nil {
			t.Fatalf("Build(%+v): %v", o, err)
		}
		if err := Check(p); err != nil {
			t.Errorf("Check(Build(%+v)): %v", o, err)
		}
	}
}

// TestMaxLiveIsTight checks that every program reaches the MaxLive it
// promises on every device, so that memory forecasts built on MaxLive
// are not loose.
func TestMaxLiveIsTight(t *testing.T) {
	for _, o := range allOptions() {
		p, err := Build(o)
		if err != nil {
			t.Fatalf("Build(%+v): %v", o, err)
		}
		for k, ops := range p.Devices {
			// Count live pairs by their own rule, apart from peakLive.
			live, peak := 0, 0
			for _, op := range ops {
				switch {
				case op.Kind == Forward && op.Keep, op.Kind == Recompute:
					live++
				case op.Kind == Backward, op.Kind == BackwardWeight:
					live = max(live-1, 0)
				}
				peak = max(peak, live)
			}
			if peak != p.MaxLive[k] {
				t.Errorf("%+v device %d: peak %d live micro-batches, MaxLive %d", o, k, peak, p.MaxLive[k])
			}
		}
	}
}

// Shorthands for the programs written out by hand below.
func fw(k, j int) Op         { return forwardOp(k, j, true) }
func fwCkpt(k, j int) Op     { return forwardOp(k, j, false) }
func bw(k, j int) Op         { return backwardOp(k, j) }
func rc(k, j int) Op         { return recomputeOp(k, j) }
func loss(k, j int) Op       { return lossOp(k, j) }
func sendA(k, j int) Op      { return sendOp(Activation, k, j, k+1) }
func recvA(from, j int) Op   { return recvOp(Activation, from, j, from) }
func sendG(k, j int) Op      { return sendOp(Gradient, k, j, k-1) }
func recvG(from, j int) Op   { return recvOp(Gradient, from, j, from) }
func pred(s, shard int) Op   { return predictOp(s, shard) }
func update(k int) Op        { return updateOp(k) }
func gather(st ...int) Op    { return allGatherOp(0, st) }
func scatter() Op            { return allToAllOp(0) }
func fmtOps(ops []Op) string { return fmt.Sprint(ops) }

func TestExactPrograms(t *testing.T) {
	tests := []struct {
		name    string
		o       Options
		devices map[int][]Op // the devices written out
		maxLive []int
	}{
		{
			name: "single M=2",
			o:    Options{Name: Single, Devices: 1, Micro: 2},
			devices: map[int][]Op{
				0: {fw(0, 0), loss(0, 0), bw(0, 0), fw(0, 1), loss(0, 1), bw(0, 1), update(0)},
			},
			maxLive: []int{1},
		},
		{
			name: "gpipe K=2 M=2 never",
			o:    Options{Name: GPipe, Devices: 2, Micro: 2, Checkpoint: Never},
			devices: map[int][]Op{
				0: {fw(0, 0), sendA(0, 0), fw(0, 1), sendA(0, 1),
					recvG(1, 1), bw(0, 1), recvG(1, 0), bw(0, 0), update(0)},
				1: {recvA(0, 0), fw(1, 0), loss(1, 0), recvA(0, 1), fw(1, 1), loss(1, 1),
					bw(1, 1), sendG(1, 1), bw(1, 0), sendG(1, 0), update(1)},
			},
			maxLive: []int{2, 2},
		},
		{
			name: "gpipe K=2 M=3 except-last",
			o:    Options{Name: GPipe, Devices: 2, Micro: 3, Checkpoint: ExceptLast},
			devices: map[int][]Op{
				0: {fwCkpt(0, 0), sendA(0, 0), fwCkpt(0, 1), sendA(0, 1), fw(0, 2), sendA(0, 2),
					recvG(1, 2), bw(0, 2), recvG(1, 1), rc(0, 1), bw(0, 1), recvG(1, 0), rc(0, 0), bw(0, 0), update(0)},
			},
			maxLive: []int{1, 1},
		},
		{
			name: "1f1b K=3 M=4",
			o:    Options{Name: OneF1B, Devices: 3, Micro: 4},
			devices: map[int][]Op{
				0: {fw(0, 0), sendA(0, 0), fw(0, 1), sendA(0, 1),
					fw(0, 2), sendA(0, 2), recvG(1, 0), bw(0, 0),
					fw(0, 3), sendA(0, 3), recvG(1, 1), bw(0, 1),
					recvG(1, 2), bw(0, 2), recvG(1, 3), bw(0, 3), update(0)},
				2: {recvA(1, 0), fw(2, 0), loss(2, 0), bw(2, 0), sendG(2, 0),
					recvA(1, 1), fw(2, 1), loss(2, 1), bw(2, 1), sendG(2, 1),
					recvA(1, 2), fw(2, 2), loss(2, 2), bw(2, 2), sendG(2, 2),
					recvA(1, 3), fw(2, 3), loss(2, 3), bw(2, 3), sendG(2, 3), update(2)},
			},
			maxLive: []int{3, 2, 1},
		},
		{
			name: "coop K=2 M=2 d=1",
			o:    Options{Name: Coop, Devices: 2, Micro: 2, Prefetch: 1},
			devices: map[int][]Op{
				0: {gather(0), pred(0, 0), scatter(), fw(0, 0), fw(0, 1),
					recvG(1, 0), bw(0, 0), recvG(1, 1), bw(0, 1), update(0)},
				1: {gather(0), pred(0, 1), scatter(), fw(1, 0), loss(1, 0), bw(1, 0), sendG(1, 0),
					fw(1, 1), loss(1, 1), bw(1, 1), sendG(1, 1), update(1)},
			},
			maxLive: []int{2, 1},
		},
		{
			name: "coop K=3 M=4 d=1 middle device",
			o:    Options{Name: Coop, Devices: 3, Micro: 4, Prefetch: 1},
			devices: map[int][]Op{
				1: {gather(0, 1), pred(0, 1), pred(1, 1), scatter(), fw(1, 0), fw(1, 1),
					recvG(2, 0), bw(1, 0), sendG(1, 0), fw(1, 2),
					recvG(2, 1), bw(1, 1), sendG(1, 1), fw(1, 3),
					recvG(2, 2), bw(1, 2), sendG(1, 2),
					recvG(2, 3), bw(1, 3), sendG(1, 3), update(1)},
			},
			maxLive: []int{2, 2, 1},
		},
		{
			name: "coop K=1 M=2 is the training alone",
			o:    Options{Name: Coop, Devices: 1, Micro: 2, Prefetch: 1},
			devices: map[int][]Op{
				0: {fw(0, 0), loss(0, 0), bw(0, 0), fw(0, 1), loss(0, 1), bw(0, 1), update(0)},
			},
			maxLive: []int{1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Build(tt.o)
			if err != nil {
				t.Fatal(err)
			}
			if p.Options != tt.o || p.Stages != len(tt.maxLive) || len(p.Devices) != len(tt.maxLive) {
				t.Fatalf("options %+v, %d stages, %d devices; want %+v, %d, %d",
					p.Options, p.Stages, len(p.Devices), tt.o, len(tt.maxLive), len(tt.maxLive))
			}
			for k, want := range tt.devices {
				if got := p.Devices[k]; !reflect.DeepEqual(got, want) {
					t.Errorf("device %d:\ngot  %v\nwant %v", k, fmtOps(got), fmtOps(want))
				}
			}
			if !reflect.DeepEqual(p.MaxLive, tt.maxLive) {
				t.Errorf("MaxLive %v, want %v", p.MaxLive, tt.maxLive)
			}
		})
	}
}
