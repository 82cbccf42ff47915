package profiler

import "github.com/pipecast/pipecast/tensor"

// DeviceActivityOf returns a device's step in the form Build takes: its
// events, and the peaks of mem, the total and each category's by name.
func DeviceActivityOf(mem tensor.MemStats, events []Event) DeviceActivity {
	ds := DeviceActivity{Events: events, PeakBytes: mem.PeakTotalBytes,
		PeakBytesByCategory: make(map[string]int64, tensor.NumCategories)}
	for c := range tensor.NumCategories {
		ds.PeakBytesByCategory[tensor.Category(c).String()] = mem.PeakBytes[c]
	}
	return ds
}
