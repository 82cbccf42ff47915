package profiler

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

func TestMemoryChangeJSON(t *testing.T) {
	c := MemoryChange{Nanos: 1500, Category: 3, Bytes: -4096, Event: -1}
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(data), "[1500,3,-4096,-1]"; got != want {
		t.Errorf("Marshal: got %s, want %s", got, want)
	}
	var back MemoryChange
	if err := json.Unmarshal(data, &back); err != nil || back != c {
		t.Errorf("Unmarshal(%s): got %+v, %v; want %+v", data, back, err, c)
	}
	for _, bad := range []string{`[1,2,3]`, `{"nanos":1}`, `[1,2,3,"x"]`} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("Unmarshal(%s): no error", bad)
		}
	}
}

// TestBuildMemoryTrack checks that Build keeps the first tracked step's
// track with that step's peaks, times from the step's start (earlier
// changes at 0), and each change attributed to the innermost event
// holding it.
func TestBuildMemoryTrack(t *testing.T) {
	tl := tensor.MemTimeline{Changes: []tensor.MemChange{
		{Nanos: 90, Bytes: 64, Category: tensor.Boundary},       // before the step's start: at 0
		{Nanos: 115, Bytes: 100, Category: tensor.Activations},  // inside block 0 of the forward
		{Nanos: 135, Bytes: -64, Category: tensor.Boundary},     // inside the forward, after its block
		{Nanos: 160, Bytes: -100, Category: tensor.Activations}, // between ops
	}}
	tl.StartLiveBytes[tensor.Weights] = 1000
	events := []Event{
		{Op: "forward", Block: 0, StartNanos: 10, EndNanos: 20},
		{Op: "forward", Block: WholeOp, StartNanos: 5, EndNanos: 40},
		{Op: "send", Block: WholeOp, StartNanos: 70, EndNanos: 80},
	}
	other := DeviceActivity{Events: []Event{{Op: "forward", Block: WholeOp, StartNanos: 0, EndNanos: 1}}}
	peaks := map[string]int64{"weights": 1000, "activations": 100, "boundary": 64}
	run := Run{
		Kind:   KindMeasured,
		Config: RunConfig{RecordOptions: schedule.RecordOptions{Devices: 2}},
		Steps: []RunStep{
			{Step: 4, WallNanos: 100, Devices: []DeviceActivity{other, other}},
			{Step: 5, WallNanos: 100, Devices: []DeviceActivity{
				other,
				{Events: events, PeakBytes: 1164, PeakBytesByCategory: peaks, MemoryTrack: MemoryTrackOf(tl, 100)},
			}},
		},
	}
	rec := Build(run)
	if rec.Devices[0].MemoryTrack != nil {
		t.Errorf("device 0: a track, want none")
	}
	tr := rec.Devices[1].MemoryTrack
	if tr == nil {
		t.Fatal("device 1: no track")
	}
	if tr.Step != 5 || tr.PeakBytes != 1164 || !reflect.DeepEqual(tr.PeakBytesByCategory, peaks) {
		t.Errorf("step %d, peak %d %v; want 5, 1164 %v", tr.Step, tr.PeakBytes, tr.PeakBytesByCategory, peaks)
	}
	// Step 4 holds 2 events, step 5's device 0 one: device 1's start at 3.
	want := []MemoryChange{
		{Nanos: 0, Category: int(tensor.Boundary), Bytes: 64, Event: -1},
		{Nanos: 15, Category: int(tensor.Activations), Bytes: 100, Event: 3},
		{Nanos: 35, Category: int(tensor.Boundary), Bytes: -64, Event: 4},
		{Nanos: 60, Category: int(tensor.Activations), Bytes: -100, Event: -1},
	}
	if !reflect.DeepEqual(tr.Changes, want) {
		t.Errorf("changes:\ngot  %+v\nwant %+v", tr.Changes, want)
	}
	for i, c := range tr.Changes {
		if c.Event >= 0 && rec.Events[c.Event].StartNanos > c.Nanos {
			t.Errorf("change %d attributed to %+v, which starts later", i, rec.Events[c.Event])
		}
	}
	byCat, total := tr.ReplayPeaks()
	if total != tr.PeakBytes || byCat["activations"] != 100 || byCat["boundary"] != 64 || byCat["weights"] != 1000 {
		t.Errorf("replayed peaks %v (total %d), want %v (total %d)", byCat, total, peaks, tr.PeakBytes)
	}
	if p := tr.PeakPoint(); p.TotalBytes != 1164 || p.Change != 1 {
		t.Errorf("peak point: %d bytes after change %d, want 1164 after change 1", p.TotalBytes, p.Change)
	}
}
