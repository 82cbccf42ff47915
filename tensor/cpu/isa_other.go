//go:build !amd64

package cpu

import "runtime"

// InstructionSets names the vector instruction sets of this CPU that the
// backend's kernels can use: none beyond the architecture's own here.
func InstructionSets() string { return runtime.GOARCH }
