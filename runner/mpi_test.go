//go:build mpi

package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/runner/comm/mpi"
	"github.com/pipecast/pipecast/schedule"
)

// The MPI tests run twice: the test binary, started by go test, launches
// itself under mpirun for each test, and each rank then runs the test's
// body as one process of the job.

// underMPI reports whether this process is a rank of an MPI job.
func underMPI() bool { return os.Getenv("OMPI_COMM_WORLD_SIZE") != "" }

// mpiRun runs test name of this binary as n ranks under mpirun and
// returns mpirun's combined output, its error and how long it took.
func mpiRun(t *testing.T, n int, name string, extraEnv ...string) (string, error, time.Duration) {
	t.Helper()
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun is not on PATH (apt-get install openmpi-bin)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mpirun, "--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(n),
		os.Args[0], "-test.run", "^"+name+"$", "-test.v")
	if testing.Short() {
		cmd.Args = append(cmd.Args, "-test.short")
	}
	cmd.Env = append(os.Environ(), extraEnv...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	return string(out), err, time.Since(start)
}

// TestMPIEqualsInProcess checks that every pipelined schedule run as one
// process per device over MPI trains exactly what one process trains:
// per-step losses and final weights to 1e-6, with 2 and 3 ranks.
func TestMPIEqualsInProcess(t *testing.T) {
	if !underMPI() {
		for _, n := range []int{2, 3} {
			if out, err, _ := mpiRun(t, n, t.Name()); err != nil {
				t.Errorf("%d ranks: %v\n%s", n, err, out)
			}
		}
		return
	}
	w, err := mpi.Init()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Finalize()
	ctx := context.Background()
	type workload struct {
		model string
		mc    models.Config
	}
	loads := []workload{{"mlp", models.Config{Width: 0.25}}}
	if !testing.Short() {
		loads = append(loads, workload{"resnet50", models.Config{Width: 0.25, Image: 32}})
	}
	for _, l := range loads {
		for k := 2; k <= w.Size(); k++ {
			scheds := []schedule.Options{
				{Name: schedule.GPipe, Devices: k, Micro: 2, Checkpoint: schedule.ExceptLast},
				{Name: schedule.Coop, Devices: k, Micro: 2, Prefetch: 1},
				{Name: schedule.OneF1B, Devices: k, Micro: 2},
				{Name: schedule.ZBH1, Devices: k, Micro: 2},
			}
			if l.model != "mlp" { // the mlp's 3 blocks are too few for 2K stages
				scheds = append(scheds, schedule.Options{Name: schedule.Interleaved, Devices: k, Micro: 2, Virtual: 2},
					schedule.Options{Name: schedule.ZBV, Devices: k, Micro: 2},
					schedule.Options{Name: schedule.DualPipeV, Devices: k, Micro: 4})
			}
			for _, o := range scheds {
				cfg := config.Config{Model: l.model, ModelConfig: l.mc, Batch: 12, Seed: 5, Threads: 1, Schedule: o, Balance: config.BalanceMACs}
				opts := RunOptions{Warmup: 1, Steps: 2, Weights: true, BlockTiming: true, Calibrate: true}
				mpiEquivalence(t, ctx, w, cfg, opts)
			}
		}
	}
}

// mpiEquivalence runs cfg in this process and on the world's first K
// ranks, and compares what this rank trained with the in-process run.
func mpiEquivalence(t *testing.T, ctx context.Context, w comm.World, cfg config.Config, opts RunOptions) {
	t.Helper()
	name := cfg.String()
	want, err := Run(ctx, cfg, opts)
	if err != nil {
		t.Fatalf("%s in one process: %v", name, err)
	}
	g, err := w.Split(ctx, cfg.JobDevices())
	if err != nil {
		t.Fatalf("%s: split: %v", name, err)
	}
	if g != nil {
		o := opts
		o.Group = g
		got, err := Run(ctx, cfg, o)
		if err != nil {
			t.Fatalf("rank %d: %s: %v", w.Rank(), name, err)
		}
		g.Close()
		for n, v := range got.Weights {
			if d, _ := relDiff(map[string][]float32{n: v}, map[string][]float32{n: want.Weights[n]}); d > multiprocessTol {
				t.Errorf("rank %d: %s: %s differs from one process's by %.3g", w.Rank(), name, n, d)
			}
		}
		if len(got.Weights) == 0 {
			t.Errorf("rank %d: %s: no weights", w.Rank(), name)
		}
		if w.Rank() == 0 {
			if d := lossDiff(stepLosses(got), stepLosses(want)); d > multiprocessTol {
				t.Errorf("%s: losses %v, in one process %v", name, stepLosses(got), stepLosses(want))
			}
			rec := got.Record()
			if err := rec.Validate(); err != nil {
				t.Errorf("%s: record: %v", name, err)
			}
			if rec.Env.Transport != profiler.TransportMPI || !strings.Contains(rec.Env.TransportVersion, "MPI") ||
				len(rec.Env.Ranks) != cfg.JobDevices() || len(rec.Devices) != cfg.JobDevices() || rec.Env.Calibration == nil {
				t.Errorf("%s: environment %+v", name, rec.Env)
			}
			if sums := slices.IndexFunc(rec.Env.Calibration.Samples, func(s profiler.TransferSample) bool { return s.Kind == DPAllReduceKind && s.Nanos > 0 }); sums < 0 {
				t.Errorf("%s: the calibration has no replicas' sums: %+v", name, rec.Env.Calibration.Samples)
			}
		}
	}
	if err := w.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestMPIReplicas runs data-parallel replicas over MPI, one process per
// job device on 4 ranks (oversubscribed on a smaller machine: this
// checks correctness, not speed): each replica's pipeline and each
// device's replicas talk over subsets of the world's ranks, and every
// rank must train what one process trains.
func TestMPIReplicas(t *testing.T) {
	if !underMPI() {
		if out, err, _ := mpiRun(t, 4, t.Name()); err != nil {
			t.Errorf("4 ranks: %v\n%s", err, out)
		}
		return
	}
	w, err := mpi.Init()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Finalize()
	ctx := context.Background()
	for _, o := range []schedule.Options{
		{Name: schedule.Single, Devices: 1, Micro: 2, Replicas: 2},
		{Name: schedule.Single, Devices: 1, Micro: 1, Replicas: 4},
		{Name: schedule.GPipe, Devices: 2, Micro: 2, Checkpoint: schedule.ExceptLast, Replicas: 2},
		{Name: schedule.Coop, Devices: 2, Micro: 2, Prefetch: 1, Replicas: 2},
		{Name: schedule.OneF1B, Devices: 2, Micro: 2, Replicas: 2},
		{Name: schedule.ZBH1, Devices: 2, Micro: 2, Replicas: 2},
	} {
		cfg := config.Config{Model: "mlp", ModelConfig: models.Config{Width: 0.25}, Batch: 12, Seed: 5, Threads: 1, Schedule: o, Balance: config.BalanceMACs}
		mpiEquivalence(t, ctx, w, cfg, RunOptions{Warmup: 1, Steps: 2, Weights: true, BlockTiming: true, Calibrate: true})
	}
}

// TestMPIKilledRank kills rank 1 in the middle of a step and checks that
// the job ends non-zero within 10 s, naming the rank, with no process
// left behind.
func TestMPIKilledRank(t *testing.T) {
	if !underMPI() {
		out, err, took := mpiRun(t, 2, t.Name(), "PIPECAST_TEST_FAULT=kill")
		checkFaultedJob(t, out, err, took, "rank 1")
		return
	}
	faultedRun(t)
}

// TestMPIStoppedRank stops rank 1 (SIGSTOP) in the middle of a step and
// checks that rank 0's watchdog ends the job, naming where rank 0's
// device waits, with no process left behind.
func TestMPIStoppedRank(t *testing.T) {
	if !underMPI() {
		out, err, took := mpiRun(t, 2, t.Name(), "PIPECAST_TEST_FAULT=stop")
		checkFaultedJob(t, out, err, took, "no progress for 2s: device 0 at step")
		return
	}
	faultedRun(t)
}

// faultedRun is a rank of a job whose rank 1 kills or stops itself
// before its third op of step 1.
func faultedRun(t *testing.T) {
	w, err := mpi.Init()
	if err != nil {
		t.Fatal(err)
	}
	// No Finalize: it would wait for the faulted rank. A rank that ends
	// without it makes mpirun end the job, the stopped rank included.
	ctx := context.Background()
	cfg := config.Config{Model: "mlp", ModelConfig: models.Config{Width: 0.25}, Batch: 8, Threads: 1, Balance: config.BalanceMACs,
		Schedule: schedule.Options{Name: schedule.GPipe, Devices: 2, Micro: 2}}
	opts := RunOptions{Warmup: 1, Steps: 3, Group: w, Timeout: 2 * time.Second}
	if w.Rank() == 1 {
		prog, err := schedule.Build(cfg.Schedule)
		if err != nil {
			t.Fatal(err)
		}
		ops := 0
		opts.fault = func(int, schedule.Op) error {
			if ops++; ops == 3+len(prog.Devices[1]) {
				sig := syscall.SIGKILL
				if os.Getenv("PIPECAST_TEST_FAULT") == "stop" {
					sig = syscall.SIGSTOP
				}
				syscall.Kill(os.Getpid(), sig)
			}
			return nil
		}
	}
	_, err = Run(ctx, cfg, opts)
	fmt.Fprintf(os.Stderr, "rank %d: %v\n", w.Rank(), err)
	os.Exit(1)
}

// checkFaultedJob checks that a faulted job failed within 10 s, that its
// output says want, and that none of its processes is left.
func checkFaultedJob(t *testing.T, out string, err error, took time.Duration, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("the job succeeded:\n%s", out)
	}
	if took > 10*time.Second {
		t.Errorf("the job took %v to fail, want at most 10 s", took)
	}
	if !strings.Contains(out, want) {
		t.Errorf("the output does not say %q:\n%s", want, out)
	}
	self := strconv.Itoa(os.Getpid())
	time.Sleep(500 * time.Millisecond)
	ps, _ := exec.Command("pgrep", "-f", os.Args[0]).Output()
	for _, pid := range strings.Fields(string(ps)) {
		if pid != self {
			t.Errorf("process %s of the job is still running", pid)
		}
	}
	t.Logf("failed after %v:\n%s", took.Round(time.Millisecond), out)
}
