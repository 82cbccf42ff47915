package mpi

import (
	"encoding/binary"
	"hash/fnv"
	"testing"

	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/schedule"
)

// openMPITagUB is Open MPI's MPI_TAG_UB; 32767 is the least the MPI
// standard allows.
const openMPITagUB = 1<<31 - 1

func TestMPITagRange(t *testing.T) {
	tests := []struct {
		name string
		tag  comm.Tag
	}{
		{name: "zero", tag: comm.Tag{}},
		{name: "activation", tag: comm.Tag{Step: 3, Kind: "activation", Stage: 1, Micro: 7}},
		{name: "no stage or micro", tag: comm.Tag{Step: 1 << 40, Kind: "weights", Stage: schedule.None, Micro: schedule.None}},
		{name: "calibration bytes in micro", tag: comm.Tag{Step: -1, Kind: "calibration-alltoall", Micro: 4 << 20}},
	}
	for _, tt := range tests {
		for _, ub := range []int{openMPITagUB, 32767} {
			got := mpiTag(tt.tag, ub)
			if got < 0 || got > ub {
				t.Errorf("%s: mpiTag(%v, %d) = %d, want it in [0, %d]", tt.name, tt.tag, ub, got, ub)
			}
		}
	}
}

func TestTagHashKnownValue(t *testing.T) {
	tests := []struct {
		name string
		tag  comm.Tag
		want uint64
	}{
		// FNV-1a of the bytes encoding/binary.AppendVarint writes for
		// the fields, computed independently with Python's
		//	h = 0xcbf29ce484222325
		//	for b in data: h = ((h ^ b) * 0x100000001b3) % 2**64
		// The zero tag is four zero varints.
		{name: "zero", tag: comm.Tag{}, want: 0x4d25767f9dce13f5},
		// step 3 → 06, len 10 → 14, "activation", stage -1 → 01,
		// micro 300 → d8 04.
		{name: "activation", tag: comm.Tag{Step: 3, Kind: "activation", Stage: schedule.None, Micro: 300}, want: 0x175c1eb4cf5c59ee},
	}
	for _, tt := range tests {
		if got := tagHash(tt.tag); got != tt.want {
			t.Errorf("%s: tagHash(%v) = %#x, want %#x", tt.name, tt.tag, got, tt.want)
		}
		b := binary.AppendVarint(nil, int64(tt.tag.Step))
		b = binary.AppendVarint(b, int64(len(tt.tag.Kind)))
		b = append(b, tt.tag.Kind...)
		b = binary.AppendVarint(b, int64(tt.tag.Stage))
		b = binary.AppendVarint(b, int64(tt.tag.Micro))
		f := fnv.New64a()
		f.Write(b)
		if got := tagHash(tt.tag); got != f.Sum64() {
			t.Errorf("%s: tagHash(%v) = %#x, hash/fnv of the varints %#x", tt.name, tt.tag, got, f.Sum64())
		}
	}
}

// TestMPITagDistinct sweeps one field of a tag at a time, as a pipeline
// does between one pair of ranks (the micro-batches of one step, the
// steps of a run, the kinds), and checks that the MPI tags differ: all
// four fields reach the hash. A collision among tags in flight at once
// from one rank to another, received out of the order sent, would swap
// two messages (see mpiTag).
func TestMPITagDistinct(t *testing.T) {
	kinds := []string{"activation", "gradient", "weights", "boundary", "calibration", "calibration-allgather", "calibration-alltoall"}
	base := comm.Tag{Step: 7, Kind: "activation", Stage: 1, Micro: 0}
	tests := []struct {
		name string
		n    int
		vary func(i int) comm.Tag
	}{
		{name: "step", n: 1000, vary: func(i int) comm.Tag { tg := base; tg.Step = i - 1; return tg }},
		{name: "stage", n: 64, vary: func(i int) comm.Tag { tg := base; tg.Stage = i - 1; return tg }},
		{name: "micro", n: 1000, vary: func(i int) comm.Tag { tg := base; tg.Micro = i - 1; return tg }},
		{name: "calibration bytes", n: 24, vary: func(i int) comm.Tag { tg := base; tg.Kind = "calibration"; tg.Micro = 4 << i; return tg }},
		{name: "kind", n: len(kinds), vary: func(i int) comm.Tag { tg := base; tg.Kind = kinds[i]; return tg }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := map[int]comm.Tag{}
			for i := range tt.n {
				tg := tt.vary(i)
				m := mpiTag(tg, openMPITagUB)
				if o, ok := seen[m]; ok {
					t.Fatalf("%v and %v both map to MPI tag %d", o, tg, m)
				}
				seen[m] = tg
			}
		})
	}
}
