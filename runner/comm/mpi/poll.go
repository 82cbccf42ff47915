package mpi

import (
	"runtime"
	"time"

	"github.com/pipecast/pipecast/tensor"
)

// A waiting call polls MPI (MPI_Improbe, MPI_Iprobe, MPI_Testall), since
// the library has no way to wake a goroutine. A transfer's wait is
// usually short, the time its peer takes to send or to copy: for the
// first spinFor of a wait the poller only yields (runtime.Gosched, every
// yieldLooks looks: a yield costs more than a look) between looks, so
// that the call returns within a look's time of the message's arrival. A longer wait is a rank waiting for a slow peer, perhaps for
// seconds: the poller then sleeps between looks, from minSleep doubling up
// to maxSleep, so that the waiting rank leaves its core to the others
// (the machine may run more ranks than it has cores). A cancelled context
// is seen at the next look, within maxSleep.
const (
	spinFor  = 2 * time.Millisecond
	minSleep = 20 * time.Microsecond
	maxSleep = 500 * time.Microsecond
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
	time.Sleep(p.sleep)
	p.sleep = min(2*p.sleep, maxSleep)
}

// sleeping reports whether the wait has moved on to sleeping.
func (p *poller) sleeping() bool { return p.sleep != 0 }
