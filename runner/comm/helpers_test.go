package comm_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cpu"
)

// testTimeout bounds every wait in a test: a call that should return but
// hangs fails the test within it instead of at go test's deadline.
const testTimeout = 10 * time.Second

// newDevices opens k CPU devices of one thread each (no worker
// goroutines, so goroutine counts stay exact) and closes them at the end.
func newDevices(t *testing.T, k int) []tensor.Device {
	t.Helper()
	devs := make([]tensor.Device, k)
	for i := range devs {
		d := cpu.New(tensor.Options{Index: i, Threads: 1})
		devs[i] = d
		t.Cleanup(func() { d.Close() })
	}
	return devs
}

// fill returns n values that identify (a, b, i), so that a misrouted or
// misplaced element is caught.
func fill(a, b, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(a*1_000_000 + b*10_000 + i)
	}
	return s
}

// alloc allocates a tensor on dev holding data.
func alloc(dev tensor.Device, cat tensor.Category, data []float32) *tensor.Tensor {
	return tensor.FromHost(dev, cat, tensor.Shape{len(data)}, data)
}

// equal fails the test unless got equals want element by element.
func equal(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d elements, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: element %d: got %v, want %v", what, i, got[i], want[i])
		}
	}
}

// liveBytes returns every device's live bytes.
func liveBytes(devs []tensor.Device) []int64 {
	out := make([]int64, len(devs))
	for i, d := range devs {
		out[i] = d.Memory().LiveTotalBytes
	}
	return out
}

// noLeak fails the test unless every device's live bytes equal want.
func noLeak(t *testing.T, devs []tensor.Device, want []int64) {
	t.Helper()
	for i, got := range liveBytes(devs) {
		if got != want[i] {
			t.Errorf("%s: %d live bytes, want %d", devs[i].Name(), got, want[i])
		}
	}
}

// balanced fails the test unless the bytes sent by all endpoints equal the
// bytes received by all, and they equal wantBytes in wantMessages
// messages.
func balanced(t *testing.T, eps []comm.Endpoint, wantBytes, wantMessages int64) {
	t.Helper()
	var sum comm.Stats
	for _, e := range eps {
		s := e.Stats()
		sum.SentBytes += s.SentBytes
		sum.ReceivedBytes += s.ReceivedBytes
		sum.Messages += s.Messages
	}
	if sum.SentBytes != sum.ReceivedBytes {
		t.Errorf("bytes sent by all %d, received by all %d", sum.SentBytes, sum.ReceivedBytes)
	}
	if sum.ReceivedBytes != wantBytes || sum.Messages != wantMessages {
		t.Errorf("received %d bytes in %d messages, want %d in %d", sum.ReceivedBytes, sum.Messages, wantBytes, wantMessages)
	}
}

// runRanks calls fn for every rank on its own goroutine, as the runner's
// workers do, and returns their errors. It fails the test if they do not
// all return within testTimeout.
func runRanks(t *testing.T, k int, fn func(rank int) error) []error {
	t.Helper()
	errs := make([]error, k)
	var wg sync.WaitGroup
	for r := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = fn(r)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(testTimeout):
		t.Fatalf("ranks still running after %v", testTimeout)
	}
	return errs
}

// noErrors fails the test for every non-nil error.
func noErrors(t *testing.T, errs []error) {
	t.Helper()
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// testContext returns a context that ends after testTimeout.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// settled fails the test unless the goroutine count returns to at most
// before within a short settle time: calls that ended must not leave
// anything running.
func settled(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= before {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// tag returns a distinct tag for message i.
func tag(i int) comm.Tag {
	return comm.Tag{Step: i / 4, Kind: fmt.Sprintf("kind%d", i%2), Stage: i % 4, Micro: i}
}
