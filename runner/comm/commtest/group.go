package commtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/pipecast/pipecast/runner/comm"
)

// testBarrier has the ranks enter a barrier at different times: none
// leaves before the last has entered.
func testBarrier(r *Rank) {
	me, k := r.Rank(), r.Size()
	for round := range 3 {
		time.Sleep(time.Duration((me+round)%k) * 15 * time.Millisecond)
		entered := time.Now().UnixNano()
		r.Check("barrier", r.Barrier(r.Ctx))
		left := time.Now().UnixNano()
		b := binary.LittleEndian.AppendUint64(nil, uint64(entered))
		b = binary.LittleEndian.AppendUint64(b, uint64(left))
		all, err := r.Gather(r.Ctx, 0, b)
		r.Check("gather the times", err)
		if me != 0 {
			continue
		}
		var lastIn, firstOut int64
		for p, b := range all {
			in, out := int64(binary.LittleEndian.Uint64(b)), int64(binary.LittleEndian.Uint64(b[8:]))
			if p == 0 || in > lastIn {
				lastIn = in
			}
			if p == 0 || out < firstOut {
				firstOut = out
			}
		}
		if firstOut < lastIn {
			r.Errorf("round %d: a rank left the barrier %v before the last entered", round, time.Duration(lastIn-firstOut))
		}
	}
}

// testGather gathers data of every rank's own length, empty for rank 1,
// on the first rank and on the last.
func testGather(r *Rank) {
	me, k := r.Rank(), r.Size()
	data := func(p int) []byte {
		if p == 1 {
			return nil
		}
		return bytes.Repeat([]byte{byte('a' + p)}, 1+1000*p)
	}
	for _, root := range []int{0, k - 1} {
		mine := data(me)
		all, err := r.Gather(r.Ctx, root, mine)
		r.Check(fmt.Sprintf("gather to %d", root), err)
		if me != root {
			if all != nil {
				r.Errorf("gather to %d: got %d pieces on a rank that is not the root, want nil", root, len(all))
			}
			continue
		}
		if len(all) != k {
			r.Fatalf("gather to %d: got %d pieces, want %d", root, len(all), k)
		}
		for p, b := range all {
			if !bytes.Equal(b, data(p)) {
				r.Errorf("gather to %d: rank %d's data: got %d bytes %.10q, want %d bytes", root, p, len(b), b, len(data(p)))
			}
		}
	}
}

// testBroadcast broadcasts from rank 1 (100 KiB, then nothing) and from
// rank 0.
func testBroadcast(r *Rank) {
	tests := []struct {
		name string
		root int
		data []byte
	}{
		{name: "100 KiB", root: 1, data: bytes.Repeat([]byte("pipecast"), 100<<10/8)},
		{name: "empty", root: 1, data: nil},
		{name: "from rank 0", root: 0, data: []byte("step 3")},
	}
	for _, tt := range tests {
		var in []byte
		if r.Rank() == tt.root {
			in = tt.data
		} else {
			in = []byte("ignored")
		}
		got, err := r.Broadcast(r.Ctx, tt.root, in)
		r.Check(tt.name, err)
		if !bytes.Equal(got, tt.data) {
			r.Errorf("%s: got %d bytes, want %d", tt.name, len(got), len(tt.data))
		}
	}
}

// testControlMessages moves control messages around a ring, received out
// of the order sent by tag, of 0 bytes to 1 MiB, and waits for one that
// never comes until cancelled.
func testControlMessages(r *Rank) {
	me, k := r.Rank(), r.Size()
	next, prev := (me+1)%k, (me+k-1)%k
	sizes := []int{0, 1, 8, 1000, 1 << 20}
	msg := func(from, i int) []byte {
		return bytes.Repeat([]byte{byte(from*16 + i)}, sizes[i])
	}
	for i := range sizes {
		r.Check("send bytes", r.SendBytes(r.Ctx, next, 100+i, msg(me, i)))
	}
	for i := len(sizes) - 1; i >= 0; i-- {
		got, err := r.RecvBytes(r.Ctx, prev, 100+i)
		r.Check("recv bytes", err)
		if !bytes.Equal(got, msg(prev, i)) {
			r.Errorf("control message %d from %d: got %d bytes, want %d", i, prev, len(got), sizes[i])
		}
	}
	// Control messages are not tensor transfers.
	r.stats(comm.Stats{})

	ctx, cancel := context.WithTimeout(r.Ctx, 20*time.Millisecond)
	_, err := r.RecvBytes(ctx, prev, 7)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		r.Errorf("recv bytes nobody sent: got %v, want a deadline error", err)
	}
	if err := r.SendBytes(r.Ctx, next, -1, nil); err == nil {
		r.Errorf("send bytes under tag -1: no error")
	}
	r.Sync()
}
