package reports

import (
	"slices"
	"testing"

	"github.com/pipecast/pipecast/profiler"
)

// TestScheduleOptionsOfDevicesThatDiffer checks that a timeline names
// what made its devices differ: the straggler, the threads and the
// speeds, and nothing of devices alike.
func TestScheduleOptionsOfDevicesThatDiffer(t *testing.T) {
	c := profiler.RunConfig{Threads: 2, DeviceThreads: []int{2, 1}, DeviceSpeeds: []float64{1, 0.5},
		StragglerDevice: 1, StragglerFactor: 1.5}
	want := []string{"straggler device 1 ×1.5", "threads 2,1", "speeds 1.00, 0.50"}
	if got := scheduleOptions(c); !slices.Equal(got, want) {
		t.Errorf("options %q, want %q", got, want)
	}
	if got := scheduleOptions(profiler.RunConfig{Threads: 2}); len(got) != 0 {
		t.Errorf("devices alike: options %q, want none", got)
	}
}

// TestDeviceTableOfDevicesThatDiffer checks that a run's device table
// gives each device's threads and slowdown where the devices differ, and
// leaves the columns out where they are alike.
func TestDeviceTableOfDevicesThatDiffer(t *testing.T) {
	r := profiler.Record{
		Config: profiler.RunConfig{Threads: 2, DeviceThreads: []int{2, 1}, DeviceSpeeds: []float64{1, 0.5},
			StragglerDevice: 0, StragglerFactor: 1.5},
		Env:       profiler.Environment{Devices: []profiler.DeviceInfo{{Name: "cpu:0", Threads: 2}, {Name: "cpu:1", Threads: 1}}},
		Partition: []profiler.Stage{{Device: 0, FirstBlock: 0, EndBlock: 2}, {Device: 1, FirstBlock: 2, EndBlock: 3}},
		Devices:   []profiler.Device{{Index: 0, Stage: 0}, {Index: 1, Stage: 1}},
	}
	r.Config.Devices = 2
	tbl := runsDeviceTable(&r)
	col := slices.IndexFunc(tbl.Columns, func(c Column) bool { return c.Key == "slowdown" })
	if col < 0 {
		t.Fatalf("columns %v: want a slowdown", tbl.Columns)
	}
	var got []string
	for _, row := range tbl.Rows {
		got = append(got, row[col-1].Text+" "+row[col].Text)
	}
	if want := []string{"2 ×1.50", "1 ×2.00"}; !slices.Equal(got, want) {
		t.Errorf("threads and slowdowns %q, want %q", got, want)
	}
	r.Config.DeviceThreads, r.Config.DeviceSpeeds, r.Config.StragglerFactor = nil, nil, 0
	if tbl := runsDeviceTable(&r); slices.ContainsFunc(tbl.Columns, func(c Column) bool { return c.Key == "slowdown" }) {
		t.Error("devices alike: a slowdown column")
	}
}
