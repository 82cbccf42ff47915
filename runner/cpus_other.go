//go:build !linux

package runner

// processCPUs lists the CPUs this process may run on; nil where the
// system does not say.
func processCPUs() []int { return nil }
