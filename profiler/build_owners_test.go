package profiler

import (
	"strings"
	"testing"

	"github.com/pipecast/pipecast/schedule"
)

// interleavedTestRun is two devices holding four stages, interleaved:
// device 0 stages 0 and 2, device 1 stages 1 and 3, one block each. Its
// backwards are split: every stage runs a backward-input and a
// backward-weight of block s, timed per block.
func interleavedTestRun() Run {
	ev := func(op string, stage, block int, start, end int64) Event {
		return Event{Op: op, Stage: stage, Micro: 0, Block: block, StartNanos: start, EndNanos: end}
	}
	dev := func(stages ...int) DeviceActivity {
		var evs []Event
		at := int64(0)
		for _, s := range stages {
			for _, op := range []string{"backward-input", "backward-weight"} {
				dt := int64(10 * (s + 1))
				if op == "backward-weight" {
					dt *= 3
				}
				evs = append(evs, ev(op, s, s, at, at+dt), ev(op, s, WholeOp, at, at+dt))
				at += dt
			}
		}
		return DeviceActivity{Events: evs, PeakBytes: 10}
	}
	return Run{
		Kind:   KindMeasured,
		Config: RunConfig{Model: "m", Batch: 4, Steps: 1, RecordOptions: schedule.RecordOptions{Devices: 2, Micro: 2, Schedule: "interleaved", Virtual: 2}},
		Blocks: []BlockCost{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}},
		Bounds: []int{0, 1, 2, 3, 4},
		Owners: []int{0, 1, 0, 1},
		Steps:  []RunStep{{Step: 1, WallNanos: 1000, Devices: []DeviceActivity{dev(0, 2), dev(1, 3)}}},
	}
}

func TestBuildOwners(t *testing.T) {
	rec := Build(interleavedTestRun())
	if err := rec.Validate(); err != nil {
		t.Fatalf("built record does not validate: %v", err)
	}
	var owners []int
	for _, st := range rec.Partition {
		owners = append(owners, st.Device)
	}
	if len(owners) != 4 || owners[0] != 0 || owners[1] != 1 || owners[2] != 0 || owners[3] != 1 {
		t.Errorf("partition devices %v, want [0 1 0 1]", owners)
	}
	if len(rec.Devices) != 2 || rec.Devices[0].Stage != 0 || rec.Devices[1].Stage != 1 {
		t.Errorf("devices %+v, want device d's first stage d", rec.Devices)
	}
	// Device 0: stage 0's halves take 10 and 30 ns, stage 2's 30 and 90.
	if got := rec.Devices[0].BusyNanosByOp; got["backward-input"] != 40 || got["backward-weight"] != 120 {
		t.Errorf("device 0 busy by op %v, want backward-input 40, backward-weight 120", got)
	}
	for s, b := range rec.Blocks {
		in, w := int64(10*(s+1)), int64(30*(s+1))
		if b.BackwardInputNanos != in || b.BackwardWeightNanos != w || b.BackwardNanos != 0 || b.Stage != s {
			t.Errorf("block %d: %+v, want stage %d, backward-input %d, backward-weight %d and no backward", s, b, s, in, w)
		}
	}
	// Without Owners, stage s is on device s.
	run := interleavedTestRun()
	run.Owners = nil
	for s, st := range Build(run).Partition {
		if st.Device != s {
			t.Errorf("no owners: stage %d on device %d", s, st.Device)
		}
	}
}

func TestValidateVirtualStages(t *testing.T) {
	rec := Build(interleavedTestRun())
	rec.Config.Virtual = -1
	if err := rec.Validate(); err == nil || !strings.Contains(err.Error(), "virtual_stages -1 is negative") {
		t.Errorf("virtual_stages -1: got %v, want an error naming it", err)
	}
	rec.Config.Virtual = 0
	rec.Blocks[1].BackwardWeightNanos = -5
	if err := rec.Validate(); err == nil || !strings.Contains(err.Error(), "blocks[1]") {
		t.Errorf("negative backward-weight time: got %v, want an error naming blocks[1]", err)
	}
}
