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
