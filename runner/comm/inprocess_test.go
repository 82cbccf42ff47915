package comm_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/tensor"
)

func TestSendRecvCopiesIntoReceiver(t *testing.T) {
	devs := newDevices(t, 2)
	tr := comm.NewInProcessTransport(2)
	defer tr.Close()
	eps := tr.Endpoints()
	ctx := testContext(t)

	want := fill(0, 1, 24)
	src := tensor.FromHost(devs[0], tensor.Activations, tensor.Shape{2, 3, 4}, want)
	if err := eps[0].Send(ctx, 1, tag(0), src); err != nil {
		t.Fatal(err)
	}
	src.Release()
	// The transport holds the sender's tensor until the receiver has
	// copied it.
	if got := devs[0].Memory().LiveBytes[tensor.Activations]; got != 96 {
		t.Errorf("sender's activations while in flight: got %d bytes, want 96", got)
	}
	if got := src.Refs(); got != 1 {
		t.Errorf("sender's tensor while in flight: got %d refs, want 1", got)
	}

	dst := devs[1].Alloc(tensor.Comm, 4, 6)
	if err := eps[1].Recv(ctx, 0, tag(0), dst); err != nil {
		t.Fatal(err)
	}
	if dst.Device() != devs[1] {
		t.Errorf("destination moved to %s", dst.Device().Name())
	}
	equal(t, "received", tensor.ToHost(dst), want)
	if got := src.Refs(); got != 0 {
		t.Errorf("sender's tensor after the copy: got %d refs, want 0", got)
	}
	if got := devs[0].Memory().LiveTotalBytes; got != 0 {
		t.Errorf("sender's live bytes after the copy: got %d, want 0", got)
	}
	m := devs[1].Memory()
	if m.LiveBytes[tensor.Comm] != 96 || m.LiveTotalBytes != 96 {
		t.Errorf("receiver: got %d comm bytes of %d live, want 96 of 96", m.LiveBytes[tensor.Comm], m.LiveTotalBytes)
	}
	if got, want := eps[0].Stats(), (comm.Stats{SentBytes: 96}); got != want {
		t.Errorf("sender stats: got %+v, want %+v", got, want)
	}
	if got, want := eps[1].Stats(), (comm.Stats{ReceivedBytes: 96, Messages: 1}); got != want {
		t.Errorf("receiver stats: got %+v, want %+v", got, want)
	}
	dst.Release()
	noLeak(t, devs, []int64{0, 0})
}

func TestSendRecvErrors(t *testing.T) {
	tests := []struct {
		name string
		// run sends and receives on a two-rank transport; it returns
		// the error under test.
		run  func(ctx context.Context, eps []comm.Endpoint, src, dst *tensor.Tensor) error
		want string
		is   error
	}{
		{
			name: "element counts differ",
			run: func(ctx context.Context, eps []comm.Endpoint, src, dst *tensor.Tensor) error {
				short := dst.Slice(0, 5)
				defer short.Release()
				if err := eps[0].Send(ctx, 1, tag(1), src); err != nil {
					return err
				}
				return eps[1].Recv(ctx, 0, tag(1), short)
			},
			want: "recv from 0, step 0 kind1 stage 1 micro 1: mismatch: 6 elements sent, destination [5] holds 5",
			is:   comm.ErrMismatch,
		},
		{
			name: "recv from a rank out of range",
			run: func(ctx context.Context, eps []comm.Endpoint, _, dst *tensor.Tensor) error {
				return eps[1].Recv(ctx, 2, tag(0), dst)
			},
			want: "recv from 2, step 0 kind0 stage 0 micro 0: no rank 2 among 2",
		},
		{
			name: "recv into nil",
			run: func(ctx context.Context, eps []comm.Endpoint, _, _ *tensor.Tensor) error {
				return eps[1].Recv(ctx, 0, tag(0), nil)
			},
			want: "recv from 0, step 0 kind0 stage 0 micro 0: nil destination",
		},
		{
			name: "send to a rank out of range",
			run: func(ctx context.Context, eps []comm.Endpoint, src, _ *tensor.Tensor) error {
				return eps[0].Send(ctx, -1, tag(0), src)
			},
			want: "send to -1, step 0 kind0 stage 0 micro 0: no rank -1 among 2",
		},
		{
			name: "send nil",
			run: func(ctx context.Context, eps []comm.Endpoint, _, _ *tensor.Tensor) error {
				return eps[0].Send(ctx, 1, tag(0), nil)
			},
			want: "send to 1, step 0 kind0 stage 0 micro 0: nil tensor",
		},
		{
			name: "send with a cancelled context",
			run: func(ctx context.Context, eps []comm.Endpoint, src, _ *tensor.Tensor) error {
				ctx, cancel := context.WithCancel(ctx)
				cancel()
				return eps[0].Send(ctx, 1, tag(0), src)
			},
			want: "send to 1, step 0 kind0 stage 0 micro 0: context canceled",
			is:   context.Canceled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			devs := newDevices(t, 2)
			tr := comm.NewInProcessTransport(2)
			eps := tr.Endpoints()
			src := alloc(devs[0], tensor.Activations, fill(0, 1, 6))
			dst := devs[1].Alloc(tensor.Comm, 6)
			err := tt.run(testContext(t), eps, src, dst)
			if err == nil || err.Error() != tt.want {
				t.Errorf("got error %v, want %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
			src.Release()
			dst.Release()
			// Nothing is left in flight: a mismatched message is released.
			if err := tr.Close(); err != nil {
				t.Error(err)
			}
			noLeak(t, devs, []int64{0, 0})
			balanced(t, eps, 0, 0)
		})
	}
}

func TestRecvMatchesByTag(t *testing.T) {
	const n, size = 12, 5
	devs := newDevices(t, 2)
	tr := comm.NewInProcessTransport(2)
	defer tr.Close()
	eps := tr.Endpoints()
	ctx := testContext(t)

	// Two messages under every tag: they must arrive in the order sent.
	for i := range 2 * n {
		src := alloc(devs[0], tensor.Boundary, fill(i%n, i/n, size))
		if err := eps[0].Send(ctx, 1, tag(i%n), src); err != nil {
			t.Fatal(err)
		}
		src.Release()
	}
	dst := devs[1].Alloc(tensor.Comm, size)
	defer dst.Release()
	rng := rand.New(rand.NewPCG(1, 2))
	order := rng.Perm(n)
	for round := range 2 {
		for _, i := range order {
			if err := eps[1].Recv(ctx, 0, tag(i), dst); err != nil {
				t.Fatal(err)
			}
			equal(t, tag(i).String(), tensor.ToHost(dst), fill(i, round, size))
		}
	}
	balanced(t, eps, 2*n*size*4, 2*n)
	if got := devs[0].Memory().LiveTotalBytes; got != 0 {
		t.Errorf("sender's live bytes: got %d, want 0", got)
	}
}

func TestSendRecvAllPairs(t *testing.T) {
	const k, msgs, size = 4, 40, 33
	devs := newDevices(t, k)
	eps := comm.NewInProcess(k)
	for r, e := range eps {
		if e.Rank() != r || e.Size() != k {
			t.Fatalf("endpoint %d: got rank %d of %d, want %d of %d", r, e.Rank(), e.Size(), r, k)
		}
	}
	ctx := testContext(t)
	before := liveBytes(devs)

	errs := runRanks(t, k, func(r int) error {
		rng := rand.New(rand.NewPCG(uint64(r), 7))
		dst := devs[r].Alloc(tensor.Comm, size)
		defer dst.Release()
		for i := range msgs {
			for p := range k {
				if p == r {
					continue
				}
				src := alloc(devs[r], tensor.Activations, fill(r*k+p, i, size))
				err := eps[r].Send(ctx, p, tag(i), src)
				src.Release()
				if err != nil {
					return err
				}
			}
			// Receive message i from every peer in a random order, while
			// the peers are still sending.
			for _, p := range rng.Perm(k) {
				if p == r {
					continue
				}
				if err := eps[r].Recv(ctx, p, tag(i), dst); err != nil {
					return err
				}
				got, want := tensor.ToHost(dst), fill(p*k+r, i, size)
				for j := range got {
					if got[j] != want[j] {
						return errors.New(tag(i).String() + ": wrong data")
					}
				}
			}
		}
		return nil
	})
	noErrors(t, errs)
	balanced(t, eps, k*(k-1)*msgs*size*4, k*(k-1)*msgs)
	for r, e := range eps {
		s := e.Stats()
		if want := int64((k - 1) * msgs * size * 4); s.SentBytes != want || s.ReceivedBytes != want {
			t.Errorf("rank %d: got %+v, want %d bytes each way", r, s, want)
		}
	}
	noLeak(t, devs, before)
}

func TestRecvCancel(t *testing.T) {
	tests := []struct {
		name   string
		ctx    func() (context.Context, context.CancelFunc)
		cancel bool
		is     error
	}{
		{
			name:   "cancel",
			ctx:    func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			cancel: true,
			is:     context.Canceled,
		},
		{
			name: "deadline",
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 20*time.Millisecond)
			},
			is: context.DeadlineExceeded,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			devs := newDevices(t, 2)
			before := runtime.NumGoroutine()
			tr := comm.NewInProcessTransport(2)
			eps := tr.Endpoints()
			ctx, cancel := tt.ctx()
			defer cancel()
			if tt.cancel {
				time.AfterFunc(20*time.Millisecond, cancel)
			}
			dst := devs[1].Alloc(tensor.Comm, 3)
			gradient := comm.Tag{Step: 3, Kind: "gradient", Stage: 2, Micro: 1}
			errs := runRanks(t, 1, func(int) error { return eps[1].Recv(ctx, 0, gradient, dst) })
			if !errors.Is(errs[0], tt.is) {
				t.Errorf("got %v, want %v", errs[0], tt.is)
			}
			if want := "recv from 0, step 3 gradient stage 2 micro 1: "; errs[0] == nil || !strings.HasPrefix(errs[0].Error(), want) {
				t.Errorf("got %v, want it to start with %q", errs[0], want)
			}
			dst.Release()
			if err := tr.Close(); err != nil {
				t.Error(err)
			}
			settled(t, before)
		})
	}
}

func TestCloseEndsWaitsAndReleases(t *testing.T) {
	devs := newDevices(t, 3)
	before := runtime.NumGoroutine()
	tr := comm.NewInProcessTransport(3)
	eps := tr.Endpoints()
	ctx := testContext(t)

	// A message that nobody receives stays retained until Close.
	src := alloc(devs[0], tensor.Activations, fill(0, 2, 8))
	if err := eps[0].Send(ctx, 2, tag(5), src); err != nil {
		t.Fatal(err)
	}
	src.Release()
	dst := devs[1].Alloc(tensor.Comm, 8)
	defer dst.Release()
	time.AfterFunc(20*time.Millisecond, func() {
		err := tr.Close()
		if want := "close in-process transport: 1 messages never received: send from 0 to 2, step 1 kind1 stage 1 micro 5"; err == nil || err.Error() != want {
			t.Errorf("close: got %v, want %q", err, want)
		}
	})
	errs := runRanks(t, 2, func(r int) error {
		if r == 0 {
			return eps[1].Recv(ctx, 0, tag(0), dst)
		}
		return eps[2].AllGather(ctx, tag(0), nil, make([]*tensor.Tensor, 3))
	})
	for r, err := range errs {
		if !errors.Is(err, comm.ErrClosed) {
			t.Errorf("call %d: got %v, want %v", r, err, comm.ErrClosed)
		}
	}
	if got := devs[0].Memory().LiveTotalBytes; got != 0 {
		t.Errorf("sender's live bytes after close: got %d, want 0", got)
	}
	src = alloc(devs[0], tensor.Activations, fill(0, 2, 8))
	if err := eps[0].Send(ctx, 1, tag(0), src); !errors.Is(err, comm.ErrClosed) {
		t.Errorf("send after close: got %v, want %v", err, comm.ErrClosed)
	}
	if got := src.Refs(); got != 1 {
		t.Errorf("tensor refused after close: got %d refs, want 1", got)
	}
	src.Release()
	if err := tr.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	settled(t, before)
}

func TestProbe(t *testing.T) {
	eps := comm.NewInProcess(2)
	dev := newDevices(t, 1)[0]
	tag := comm.Tag{Step: 1, Kind: "activation", Stage: 0, Micro: 0}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := eps[1].Probe(ctx, 0, tag); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("probe before any send: got %v, want a deadline error", err)
	}
	src := dev.Alloc(tensor.Activations, 3)
	if err := eps[0].Send(context.Background(), 1, tag, src); err != nil {
		t.Fatal(err)
	}
	src.Release()
	for i := 0; i < 2; i++ { // probing leaves the message queued
		if err := eps[1].Probe(context.Background(), 0, tag); err != nil {
			t.Fatalf("probe %d: %v", i, err)
		}
	}
	dst := dev.Alloc(tensor.Comm, 3)
	defer dst.Release()
	if err := eps[1].Recv(context.Background(), 0, tag, dst); err != nil {
		t.Fatalf("recv after probe: %v", err)
	}
	if err := eps[1].Probe(context.Background(), 5, tag); err == nil {
		t.Error("probe of a rank that does not exist: no error")
	}
}
