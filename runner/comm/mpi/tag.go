package mpi

import "github.com/pipecast/pipecast/runner/comm"

// FNV-1a's 64-bit parameters (Fowler, Noll and Vo; RFC draft
// draft-eastlake-fnv, section 2).
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// tagHash returns the 64-bit FNV-1a hash of every field of t: Step, the
// length of Kind, Kind's bytes, Stage and Micro, each int as a zig-zag
// varint (encoding/binary's AppendVarint), which keeps the fields'
// boundaries unambiguous and the hashed bytes few (about 15 for the
// runner's tags, against 40 at 8 bytes an int: the hash is on every
// message's path).
func tagHash(t comm.Tag) uint64 {
	h := uint64(fnvOffset64)
	varint := func(v int) {
		u := uint64(v) << 1
		if v < 0 {
			u = ^u
		}
		for u >= 0x80 {
			h ^= u&0x7f | 0x80
			h *= fnvPrime64
			u >>= 7
		}
		h ^= u
		h *= fnvPrime64
	}
	varint(t.Step)
	varint(len(t.Kind))
	for i := 0; i < len(t.Kind); i++ {
		h ^= uint64(t.Kind[i])
		h *= fnvPrime64
	}
	varint(t.Stage)
	varint(t.Micro)
	return h
}

// mpiTag maps t to an MPI tag in [0, ub]: its FNV-1a hash with the upper
// half folded onto the lower, reduced modulo ub+1. MPI matches messages
// by (source, tag, communicator) only, so two Tags with equal MPI tags
// between the same pair of ranks can be taken for one another if both
// are in flight at once and received out of order; with ub = 2³¹−1
// (Open MPI) the chance that two given Tags collide is 2⁻³¹.
func mpiTag(t comm.Tag, ub int) int {
	h := tagHash(t)
	h ^= h >> 32
	return int(h % (uint64(ub) + 1))
}
