package cli

import (
	"io"
	"os"
	"sync/atomic"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// isTerminal reports whether w is a terminal; tests replace it.
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// sweepProgress is the progress bar of a sweep: a bar over the runs, the
// current configuration and the time left. It draws nothing unless the
// writer is a terminal, so that pipes and logs stay clean.
type sweepProgress struct {
	p       *mpb.Progress
	bar     *mpb.Bar
	current atomic.Value // string: the configuration now running
}

func newSweepProgress(w io.Writer, runs int) *sweepProgress {
	s := &sweepProgress{}
	if !isTerminal(w) {
		return s
	}
	s.current.Store("")
	s.p = mpb.New(mpb.WithOutput(w), mpb.WithWidth(24))
	s.bar = s.p.AddBar(int64(runs),
		mpb.PrependDecorators(decor.CountersNoUnit("run %d/%d", decor.WCSyncSpaceR)),
		mpb.AppendDecorators(
			decor.AverageETA(decor.ET_STYLE_GO, decor.WCSyncSpace),
			decor.Any(func(decor.Statistics) string { return " " + s.current.Load().(string) }),
		),
	)
	return s
}

func (s *sweepProgress) start(config string) {
	if s.bar != nil {
		s.current.Store(config)
	}
}

func (s *sweepProgress) done() {
	if s.bar != nil {
		s.bar.Increment()
	}
}

// finish removes a bar that did not complete and waits for the last
// frame, so that later messages start on a line of their own.
func (s *sweepProgress) finish(aborted bool) {
	if s.p == nil {
		return
	}
	if aborted {
		s.bar.Abort(false)
	}
	s.p.Wait()
}
