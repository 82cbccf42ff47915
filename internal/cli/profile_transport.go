package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner"
	"github.com/pipecast/pipecast/runner/comm"
)

// sweepRunner runs a sweep's configurations on the transport the flags
// chose: in this process, or as one of the processes of an MPI job.
type sweepRunner interface {
	// run runs cfg and returns its record on the process that keeps
	// records (nil, nil on the others).
	run(ctx context.Context, cfg config.Config, opts runner.RunOptions) (*profiler.Record, error)
	// root reports whether this process keeps the records and prints.
	root() bool
	// proceed reports whether the sweep goes on, as this process's
	// root decides: every process stops at the same configuration.
	proceed(ctx context.Context, local bool) (bool, error)
	close() error
}

// inProcessSweep runs every configuration in this process.
type inProcessSweep struct{}

func (inProcessSweep) run(ctx context.Context, cfg config.Config, opts runner.RunOptions) (*profiler.Record, error) {
	res, err := runner.Run(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	rec := res.Record()
	return &rec, nil
}

func (inProcessSweep) root() bool { return true }

func (inProcessSweep) proceed(_ context.Context, local bool) (bool, error) { return local, nil }

func (inProcessSweep) close() error { return nil }

// openWorld opens the MPI job this process belongs to; the build without
// the mpi tag replaces it with one that says how to get it.
var openWorld func() (comm.World, error)

// mpiSweep runs each configuration of K devices on the job's first K
// ranks, rank r as device r, while the others wait.
type mpiSweep struct {
	world comm.World
}

// newSweepRunner returns the runner of the --transport flag's choice,
// refusing (exit 2) a sweep that cannot run on it before anything runs.
func newSweepRunner(transport string, cfgs []config.Config) (sweepRunner, error) {
	if transport != profiler.TransportMPI {
		return inProcessSweep{}, nil
	}
	w, err := openWorld()
	if err != nil {
		return nil, &UsageError{Err: fmt.Errorf("--transport mpi: %w", err)}
	}
	var tooMany []string
	for _, c := range cfgs {
		if c.JobDevices() > w.Size() {
			tooMany = append(tooMany, c.String())
		}
	}
	if len(tooMany) > 0 {
		_ = w.Finalize()
		return nil, usageErrorf("--transport mpi: %d processes cannot run %d configurations of more devices (one process per device): %s",
			w.Size(), len(tooMany), strings.Join(tooMany, "; "))
	}
	return &mpiSweep{world: w}, nil
}

func (m *mpiSweep) run(ctx context.Context, cfg config.Config, opts runner.RunOptions) (*profiler.Record, error) {
	k := cfg.JobDevices()
	if k == 1 && opts.Calibrate && m.world.Size() > 1 {
		// One device has no peer to measure the path to: measure it
		// among the job's processes, which a K = 2 run would use.
		cal, err := runner.CalibrateGroup(ctx, m.world, cfg.Backend, max(cfg.Threads, 1))
		if err != nil {
			return nil, err
		}
		opts.Calibration = cal
	}
	g, err := m.world.Split(ctx, k)
	if err != nil {
		return nil, err
	}
	var rec *profiler.Record
	if g != nil {
		opts.Group = g
		res, err := runner.Run(ctx, cfg, opts)
		_ = g.Close()
		if err != nil {
			return nil, fmt.Errorf("rank %d: %w", m.world.Rank(), err)
		}
		if m.world.Rank() == 0 {
			if res.TransportVersion == "" {
				res.TransportVersion = strings.TrimSpace(m.world.Library())
			}
			r := res.Record()
			rec = &r
		}
	}
	// The ranks that did not take part wait here for those that did.
	if err := m.world.Barrier(ctx); err != nil {
		return nil, err
	}
	return rec, nil
}

func (m *mpiSweep) root() bool { return m.world.Rank() == 0 }

func (m *mpiSweep) proceed(ctx context.Context, local bool) (bool, error) {
	b := []byte{0}
	if local {
		b[0] = 1
	}
	got, err := m.world.Broadcast(ctx, 0, b)
	if err != nil {
		return false, err
	}
	return len(got) == 1 && got[0] == 1, nil
}

func (m *mpiSweep) close() error { return m.world.Finalize() }

// transports lists the transports this build has, for --transport and
// the version command.
func transports() []string {
	out := []string{profiler.TransportInProcess}
	if mpiBuilt {
		out = append(out, profiler.TransportMPI)
	}
	return out
}

// checkTransport checks the --transport and --timeout flags.
func checkTransport(transport string, timeout time.Duration) error {
	if known := []string{profiler.TransportInProcess, profiler.TransportMPI}; !slices.Contains(known, transport) {
		return usageErrorf("--transport %q: unknown transport (want %s)", transport, strings.Join(known, ", "))
	}
	if timeout < 0 {
		return usageErrorf("--timeout %v: cannot be negative (0 turns the watchdog off)", timeout)
	}
	return nil
}
