package comm_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/runner/comm/commtest"
)

// TestSuite runs the transport suite on the in-process transport, one
// goroutine per rank, as the MPI transport runs it with one process per
// rank.
func TestSuite(t *testing.T) {
	for _, k := range []int{2, 3} {
		t.Run(fmt.Sprintf("ranks=%d", k), func(t *testing.T) { commtest.Run(t, inProcessHarness(k)) })
	}
}

// inProcessHarness runs a test body on every rank of a fresh in-process
// group of k ranks, each on its own goroutine and CPU device; then
// nothing may be left in flight or allocated.
func inProcessHarness(k int) commtest.Harness {
	return func(t *testing.T, body func(*commtest.Rank)) {
		devs := newDevices(t, k)
		groups := comm.NewInProcessGroups(k)
		var wg sync.WaitGroup
		for r := range k {
			wg.Add(1)
			go func() {
				defer wg.Done()
				commtest.NewRank(t, groups[r], devs[r]).Do(body)
			}()
		}
		wg.Wait()
		if err := groups[0].Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		noLeak(t, devs, make([]int64, k))
	}
}
