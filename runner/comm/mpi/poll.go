package mpi

import (
	"runtime"
	"time"

	"github.com/pipecast/pipecast/tensor"
	"golang.org/x/sys/unix"
)

// A waiting call polls MPI (MPI_Improbe, MPI_Iprobe, MPI_Testall), since
// the library has no way to wake a goroutine. Within a pipeline step a
// wait is the time a peer takes to compute a stage's forward or backward,
// a few to tens of milliseconds, and the transfer must be seen the moment
// it arrives: for the first spinFor of a wait the poller only yields
// (runtime.Gosched, every yieldLooks looks: a yield costs more than a
// look) between looks, so that the call returns within a look's time of
// the message's arrival. Ranks run one per core, so a spinning rank takes
// nothing from the others. A longer wait is a rank waiting for a slow
// peer or for a configuration it takes no part in, perhaps for seconds:
// the poller then sleeps between looks, from minSleep doubling up to
// maxSleep (a sleep of the OS thread, precise to the kernel's timer
// slack), so that the waiting rank leaves its core to the others (the
// machine may run more ranks than it has cores). A cancelled context is
// seen at the next look, within maxSleep. Measured on two processes of
// one host: sleeping already after 2 ms of a wait delayed every transfer
// seen while asleep by 0.1–0.2 ms (1.2 ms with time.Sleep, whose timers
// an idle Go process wakes through the network poller at millisecond
// granularity), 5–20 % of a small pipeline step.
const (
	spinFor  = 100 * time.Millisecond
	minSleep = 50 * time.Microsecond
	maxSleep = time.Millisecond
	// spinLooks is how many spinning looks go between two readings of
	// the clock.
	spinLooks = 64
	// yieldLooks is how many spinning looks go between two yields: with
	// a yield after every look, the 8-byte ping-pong of cmd/mpibench
	// took 0.93 µs one way, with one every 16 looks 0.78 µs, and with
	// none 0.77 µs.
	yieldLooks = 16
)

// poller paces the looks of one wait.
type poller struct {
	start int64         // tensor.Nanotime at the first pause
	looks int           // pauses so far
	sleep time.Duration // the next sleep; 0 while spinning
}

// pause waits before the next look.
func (p *poller) pause() {
	p.looks++
	if p.sleep == 0 {
		switch {
		case p.looks == 1:
			p.start = tensor.Nanotime()
			return
		case p.looks%spinLooks != 0 || time.Duration(tensor.Nanotime()-p.start) < spinFor:
			if p.looks%yieldLooks == 0 {
				runtime.Gosched()
			}
			return
		}
		p.sleep = minSleep
	}
	// A raw nanosleep, not time.Sleep: the Go runtime wakes an idle
	// process's timers through the network poller at millisecond
	// granularity, which turned every sleep of tens of microseconds
	// into a millisecond and delayed each transfer noticed while
	// sleeping by as much (measured: 1.2 ms from send to probe).
	ts := unix.NsecToTimespec(int64(p.sleep))
	_ = unix.Nanosleep(&ts, nil)
	p.sleep = min(2*p.sleep, maxSleep)
}

// sleeping reports whether the wait has moved on to sleeping.
func (p *poller) sleeping() bool { return p.sleep != 0 }
