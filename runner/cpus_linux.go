package runner

import "golang.org/x/sys/unix"

// processCPUs lists the CPUs this process may run on (its affinity mask,
// which mpirun narrows when it binds ranks to cores), or nil where the
// system does not say.
func processCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var out []int
	for c := range 1024 {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out
}
