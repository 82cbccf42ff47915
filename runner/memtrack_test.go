package runner

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/schedule"
)

// TestMemoryTrackReplaysPeaks checks the memory track's promise on real
// runs: replaying every device's changes from its starting live bytes
// gives the step's recorded peak of every category and of the total,
// exactly; the tracked step is the first measured one, and, with one
// measured step, its peaks are the device's. It logs the changes per
// device of resnet50 at width 0.25, 32 px, K = 2, M = 4.
func TestMemoryTrackReplaysPeaks(t *testing.T) {
	ctx := watch(t, 3*time.Minute)
	mlp := models.Config{Sizes: []int{48, 32, 32, 32, 5}}
	resnet := models.Config{Width: 0.25, Image: 32, Classes: 5}
	schedules := []schedule.Options{
		{Name: schedule.GPipe, Devices: 2, Micro: 4, Checkpoint: schedule.ExceptLast},
		{Name: schedule.Coop, Devices: 2, Micro: 4, Prefetch: 1},
		{Name: schedule.OneF1B, Devices: 2, Micro: 4},
	}
	tests := []struct {
		name  string
		model string
		mc    models.Config
		steps int
	}{
		{"mlp", "mlp", mlp, 2},
		{"resnet50", "resnet50", resnet, 1},
	}
	for _, tt := range tests {
		for _, o := range schedules {
			cfg := config.Config{Model: tt.model, ModelConfig: tt.mc, Batch: 8, Seed: 3, Threads: 1, Schedule: o}
			t.Run(tt.name+"/"+o.Name, func(t *testing.T) {
				res, err := Run(ctx, cfg, RunOptions{Warmup: 1, Steps: tt.steps, BlockTiming: tt.model == "mlp"})
				if err != nil {
					t.Fatal(err)
				}
				rec := res.Record()
				for _, dev := range rec.Devices {
					tr := dev.MemoryTrack
					if tr == nil {
						t.Fatalf("device %d: no memory track", dev.Index)
					}
					checkTrack(t, &rec, dev, tr, tt.steps)
					if tt.model == "resnet50" {
						t.Logf("device %d: %d changes recorded (%d coalesced into them, %d dropped)",
							dev.Index, len(tr.Changes), tr.CoalescedChanges, tr.DroppedChanges)
					}
				}
				// The track survives the record's JSON.
				data, err := json.Marshal(rec)
				if err != nil {
					t.Fatal(err)
				}
				var back profiler.Record
				if err := json.Unmarshal(data, &back); err != nil {
					t.Fatal(err)
				}
				if got, want := back.Devices[0].MemoryTrack.Changes, rec.Devices[0].MemoryTrack.Changes; len(got) != len(want) || got[len(got)-1] != want[len(want)-1] {
					t.Errorf("after JSON: %d changes ending %v, want %d ending %v", len(got), got[len(got)-1], len(want), want[len(want)-1])
				}
			})
		}
	}
}

// checkTrack checks one device's track of rec against the step's peaks.
func checkTrack(t *testing.T, rec *profiler.Record, dev profiler.Device, tr *profiler.MemoryTrack, steps int) {
	t.Helper()
	if tr.Step != rec.Steps[0].Step {
		t.Errorf("device %d: track of step %d, want the first measured step %d", dev.Index, tr.Step, rec.Steps[0].Step)
	}
	if tr.DroppedChanges != 0 || len(tr.Changes) == 0 {
		t.Fatalf("device %d: %d changes, %d dropped; want some and none dropped", dev.Index, len(tr.Changes), tr.DroppedChanges)
	}
	byCat, total := tr.ReplayPeaks()
	if total != tr.PeakBytes {
		t.Errorf("device %d: replayed total peak %d, recorded %d", dev.Index, total, tr.PeakBytes)
	}
	for c, want := range tr.PeakBytesByCategory {
		if byCat[c] != want {
			t.Errorf("device %d: replayed %s peak %d, recorded %d", dev.Index, c, byCat[c], want)
		}
		if steps == 1 && want != dev.PeakBytesByCategory[c] {
			t.Errorf("device %d: step's %s peak %d, device's %d; want equal with one measured step", dev.Index, c, want, dev.PeakBytesByCategory[c])
		}
	}
	if steps == 1 && tr.PeakBytes != dev.PeakBytes {
		t.Errorf("device %d: step's peak %d, device's %d", dev.Index, tr.PeakBytes, dev.PeakBytes)
	}
	var prev int64
	attributed := 0
	for i, ch := range tr.Changes {
		if ch.Nanos < prev {
			t.Fatalf("device %d: change %d at %d ns after one at %d", dev.Index, i, ch.Nanos, prev)
		}
		prev = ch.Nanos
		if ch.Event < 0 {
			continue
		}
		attributed++
		e := rec.Events[ch.Event]
		if e.Device != dev.Index || e.Step != tr.Step || ch.Nanos < e.StartNanos || ch.Nanos > e.EndNanos {
			t.Fatalf("device %d: change %d at %d ns attributed to %+v", dev.Index, i, ch.Nanos, e)
		}
	}
	if attributed < len(tr.Changes)/2 {
		t.Errorf("device %d: %d of %d changes attributed to an event, want most", dev.Index, attributed, len(tr.Changes))
	}
}

// TestMemoryTrackMultiProcess checks that rank 0's record of a run in
// several processes holds every rank's track, moved onto its time axis
// with the rank's events, and replaying to the step's peaks.
func TestMemoryTrackMultiProcess(t *testing.T) {
	ctx := watch(t, time.Minute)
	cfg := config.Config{Model: "mlp", ModelConfig: models.Config{Sizes: []int{48, 32, 32, 32, 5}}, Batch: 8, Seed: 3, Threads: 1,
		Schedule: schedule.Options{Name: schedule.OneF1B, Devices: 2, Micro: 4}}
	got, err := runGroups(ctx, cfg, RunOptions{Warmup: 1, Steps: 1, BlockTiming: true}, comm.NewInProcessGroups(2))
	if err != nil {
		t.Fatal(err)
	}
	rec := got[0].Record()
	for _, dev := range rec.Devices {
		if dev.MemoryTrack == nil {
			t.Fatalf("device %d: no memory track in rank 0's record", dev.Index)
		}
		checkTrack(t, &rec, dev, dev.MemoryTrack, 1)
	}
}
