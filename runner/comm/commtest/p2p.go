package commtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/tensor"
)

// none is schedule.None, a tag's stage or micro-batch that does not
// apply.
const none = -1

// testSendRecvSizes sends rank 0's tensors of several sizes and shapes to
// every other rank, which receives them into its own memory.
func testSendRecvSizes(r *Rank) {
	sizes := []struct {
		name     string
		src, dst tensor.Shape
	}{
		{name: "1 element", src: tensor.Shape{1}, dst: tensor.Shape{1}},
		{name: "8 bytes", src: tensor.Shape{2}, dst: tensor.Shape{2}},
		{name: "odd", src: tensor.Shape{1023}, dst: tensor.Shape{1023}},
		{name: "reshaped", src: tensor.Shape{2, 3, 4}, dst: tensor.Shape{4, 6}},
		{name: "4 MiB", src: tensor.Shape{1 << 20}, dst: tensor.Shape{1 << 20}},
	}
	me, k := r.Rank(), r.Size()
	var want comm.Stats
	var sent []*tensor.Tensor
	for i, s := range sizes {
		tg := comm.Tag{Step: i, Kind: "activation", Stage: 1, Micro: none}
		n := s.src.Numel()
		if me == 0 {
			for p := 1; p < k; p++ {
				src := tensor.FromHost(r.Device, tensor.Activations, s.src, fill(p, i, n))
				r.Check("send", r.Send(r.Ctx, p, tg, src))
				// The transport holds its own reference until the data
				// are out.
				src.Release()
				sent = append(sent, src)
				want.SentBytes += int64(n) * tensor.BytesPerElement
			}
			continue
		}
		dst := r.Device.Alloc(tensor.Comm, s.dst...)
		r.Check("recv "+s.name, r.Recv(r.Ctx, 0, tg, dst))
		if dst.Device() != r.Device {
			r.Errorf("%s: destination moved to %s", s.name, dst.Device().Name())
		}
		r.equal(s.name, tensor.ToHost(dst), fill(me, i, n))
		if got := r.Device.Memory().LiveBytes[tensor.Comm]; got != dst.Bytes() {
			r.Errorf("%s: %d bytes of received tensors live, want %d", s.name, got, dst.Bytes())
		}
		dst.Release()
		want.ReceivedBytes += int64(n) * tensor.BytesPerElement
		want.Messages++
	}
	r.Sync()
	for i, src := range sent {
		if got := src.Refs(); got != 0 {
			r.Errorf("sent tensor %d after the receiver took it: %d refs, want 0", i, got)
		}
	}
	if got := r.Device.Memory().LiveTotalBytes; got != 0 {
		r.Errorf("%d bytes live at the end, want 0", got)
	}
	r.stats(want)
}

// testRecvMatchesByTag sends two messages under each of a dozen tags from
// rank 0 to every other rank, which receives them in a random order of
// tags: messages match by tag, and those of one tag arrive in the order
// sent.
func testRecvMatchesByTag(r *Rank) {
	const n, size = 12, 5
	me := r.Rank()
	if me == 0 {
		for i := range 2 * n {
			for p := 1; p < r.Size(); p++ {
				src := r.alloc(tensor.Boundary, fill(p, i, size))
				r.Check("send", r.Send(r.Ctx, p, tag(i%n), src))
				src.Release()
			}
		}
	} else {
		dst := r.Device.Alloc(tensor.Comm, size)
		rng := rand.New(rand.NewPCG(uint64(me), 2))
		order := rng.Perm(n)
		for round := range 2 {
			for _, i := range order {
				r.Check("recv", r.Recv(r.Ctx, 0, tag(i), dst))
				r.equal(tag(i).String(), tensor.ToHost(dst), fill(me, i+round*n, size))
			}
		}
		dst.Release()
	}
	r.Sync()
	if me == 0 {
		r.stats(comm.Stats{SentBytes: int64(2 * n * size * 4 * (r.Size() - 1))})
	} else {
		r.stats(comm.Stats{ReceivedBytes: 2 * n * size * 4, Messages: 2 * n})
	}
}

// testSendRecvAllPairs has every rank send to every other while receiving
// from them in a random order.
func testSendRecvAllPairs(r *Rank) {
	const msgs, size = 20, 33
	me, k := r.Rank(), r.Size()
	rng := rand.New(rand.NewPCG(uint64(me), 7))
	dst := r.Device.Alloc(tensor.Comm, size)
	for i := range msgs {
		for p := range k {
			if p != me {
				src := r.alloc(tensor.Activations, fill(me*k+p, i, size))
				r.Check("send", r.Send(r.Ctx, p, tag(i), src))
				src.Release()
			}
		}
		for _, p := range rng.Perm(k) {
			if p != me {
				r.Check("recv", r.Recv(r.Ctx, p, tag(i), dst))
				r.equal(fmt.Sprintf("message %d from %d", i, p), tensor.ToHost(dst), fill(p*k+me, i, size))
			}
		}
	}
	dst.Release()
	r.Sync()
	b := int64((k - 1) * msgs * size * 4)
	r.stats(comm.Stats{SentBytes: b, ReceivedBytes: b, Messages: int64((k - 1) * msgs)})
	if got := r.Device.Memory().LiveTotalBytes; got != 0 {
		r.Errorf("%d bytes live at the end, want 0", got)
	}
}

// testSendRecvErrors checks the errors of wrong arguments on every rank,
// and a receive whose destination's size differs from the message's
// between ranks 0 and 1.
func testSendRecvErrors(r *Rank) {
	k := r.Size()
	src := r.alloc(tensor.Activations, fill(0, 1, 6))
	dst := r.Device.Alloc(tensor.Comm, 6)
	cancelled, cancel := context.WithCancel(r.Ctx)
	cancel()
	tests := []struct {
		name string
		err  error
		want string
		is   error
	}{
		{name: "recv from a rank out of range", err: r.Recv(r.Ctx, k, tag(0), dst),
			want: fmt.Sprintf("recv from %d, step 0 kind0 stage 0 micro 0: no rank %d among %d", k, k, k)},
		{name: "recv into nil", err: r.Recv(r.Ctx, 0, tag(0), nil),
			want: "recv from 0, step 0 kind0 stage 0 micro 0: nil destination"},
		{name: "send to a rank out of range", err: r.Send(r.Ctx, -1, tag(0), src),
			want: fmt.Sprintf("send to -1, step 0 kind0 stage 0 micro 0: no rank -1 among %d", k)},
		{name: "send nil", err: r.Send(r.Ctx, 0, tag(0), nil),
			want: "send to 0, step 0 kind0 stage 0 micro 0: nil tensor"},
		{name: "send with a cancelled context", err: r.Send(cancelled, 0, tag(0), src),
			want: "send to 0, step 0 kind0 stage 0 micro 0: context canceled", is: context.Canceled},
		{name: "probe of a rank out of range", err: r.Probe(r.Ctx, k+1, tag(0)),
			want: fmt.Sprintf("probe from %d, step 0 kind0 stage 0 micro 0: no rank %d among %d", k+1, k+1, k)},
	}
	for _, tt := range tests {
		r.errorIs(tt.name, tt.err, tt.want, tt.is)
	}

	// The message of the wrong size is taken all the same: the next one
	// under the same tag is the next to arrive.
	switch r.Rank() {
	case 0:
		r.Check("send", r.Send(r.Ctx, 1, tag(1), src))
		second := r.alloc(tensor.Activations, fill(0, 2, 6))
		r.Check("send", r.Send(r.Ctx, 1, tag(1), second))
		second.Release()
	case 1:
		short := dst.Slice(0, 5)
		err := r.Recv(r.Ctx, 0, tag(1), short)
		short.Release()
		r.errorIs("recv into a shorter destination", err,
			"recv from 0, step 0 kind1 stage 1 micro 1: mismatch: 6 elements sent, destination [5] holds 5", comm.ErrMismatch)
		r.Check("recv after the mismatch", r.Recv(r.Ctx, 0, tag(1), dst))
		r.equal("message after the mismatch", tensor.ToHost(dst), fill(0, 2, 6))
	}
	src.Release()
	dst.Release()
	r.Sync()
}

// testRecvCancel ends a receive that waits for a message nobody sent, by
// cancellation and by deadline, then sends the message: the cancelled
// receive took nothing.
func testRecvCancel(r *Rank) {
	gradient := comm.Tag{Step: 3, Kind: "gradient", Stage: 2, Micro: 1}
	const after = 20 * time.Millisecond
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		is   error
	}{
		{
			name: "cancel",
			ctx: func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(r.Ctx)
				time.AfterFunc(after, cancel)
				return ctx, cancel
			},
			is: context.Canceled,
		},
		{
			name: "deadline",
			ctx:  func() (context.Context, context.CancelFunc) { return context.WithTimeout(r.Ctx, after) },
			is:   context.DeadlineExceeded,
		},
	}
	for i, tt := range tests {
		if r.Rank() == 1 {
			dst := r.Device.Alloc(tensor.Comm, 3)
			ctx, cancel := tt.ctx()
			start := time.Now()
			err := r.Recv(ctx, 0, gradient, dst)
			// The wait ends within a few poller sleeps of the context;
			// the bound leaves room for a loaded machine.
			if late := time.Since(start) - after; late > 100*time.Millisecond {
				r.Errorf("%s: recv returned %v after the context ended", tt.name, late)
			}
			cancel()
			r.errorHasPrefix(tt.name, err, "recv from 0, step 3 gradient stage 2 micro 1: ", tt.is)
			dst.Release()
		}
		r.Check("barrier", r.Barrier(r.Ctx))
		tg := gradient
		tg.Step += i
		switch r.Rank() {
		case 0:
			src := r.alloc(tensor.Activations, fill(0, i, 3))
			r.Check("send", r.Send(r.Ctx, 1, tg, src))
			src.Release()
		case 1:
			dst := r.Device.Alloc(tensor.Comm, 3)
			r.Check("recv after the cancelled one", r.Recv(r.Ctx, 0, tg, dst))
			r.equal(tt.name, tensor.ToHost(dst), fill(0, i, 3))
			dst.Release()
		}
	}
	r.Sync()
}

// testProbe probes before and after rank 0 sends: probing waits for the
// message and leaves it to Recv.
func testProbe(r *Rank) {
	tg := comm.Tag{Step: 1, Kind: "activation", Stage: 0, Micro: 0}
	if r.Rank() == 1 {
		ctx, cancel := context.WithTimeout(r.Ctx, 30*time.Millisecond)
		err := r.Probe(ctx, 0, tg)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			r.Errorf("probe before any send: got %v, want a deadline error", err)
		}
	}
	r.Check("barrier", r.Barrier(r.Ctx))
	switch r.Rank() {
	case 0:
		src := r.alloc(tensor.Activations, fill(0, 1, 3))
		r.Check("send", r.Send(r.Ctx, 1, tg, src))
		src.Release()
	case 1:
		for i := range 2 {
			r.Check(fmt.Sprintf("probe %d", i), r.Probe(r.Ctx, 0, tg))
		}
		dst := r.Device.Alloc(tensor.Comm, 3)
		r.Check("recv after probes", r.Recv(r.Ctx, 0, tg, dst))
		r.equal("probed message", tensor.ToHost(dst), fill(0, 1, 3))
		dst.Release()
		r.stats(comm.Stats{ReceivedBytes: 12, Messages: 1})
	}
	r.Sync()
}
