//go:build mpi

package predictor

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner"
	"github.com/pipecast/pipecast/runner/comm/mpi"
)

// mpiGenerateEnv names the environment variable that makes
// TestGenerateMPIValidationDataset measure the MPI validation dataset
// again: the validation configurations run as one process per device
// under mpirun with 2 ranks (a K = 1 run on rank 0 while rank 1 waits,
// its transfer path calibrated between the two).
const mpiGenerateEnv = "PIPECAST_GENERATE_MPI_VALIDATION"

// mpiValidationRepeats is how many runs measure each configuration.
const mpiValidationRepeats = 3

func TestGenerateMPIValidationDataset(t *testing.T) {
	if os.Getenv(mpiGenerateEnv) == "" {
		t.Skipf("set %s=1 to measure the MPI validation dataset again (minutes; needs mpirun)", mpiGenerateEnv)
	}
	if os.Getenv("OMPI_COMM_WORLD_SIZE") == "" {
		cmd := exec.Command("mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
			os.Args[0], "-test.run", "^TestGenerateMPIValidationDataset$", "-test.v", "-test.timeout", "2h")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		return
	}
	w, err := mpi.Init()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Finalize()
	ctx := context.Background()
	names := []string{"resnet50", "vgg16bn"}
	if s := os.Getenv(mpiGenerateEnv + "_MODELS"); s != "" {
		names = filepath.SplitList(s)
	}
	out := mpiValidationData + ".new"
	if w.Rank() == 0 {
		if err := os.Remove(out); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	cfgs := validationConfigs(names, []int{1, 2}, []int{1, 2, 4, 8, 16})
	for i := range cfgs {
		cfgs[i].Transport = profiler.TransportMPI
	}
	start := time.Now()
	for round := range mpiValidationRepeats {
		// The same order on every rank: the seed is the round.
		order := rand.New(rand.NewPCG(uint64(round), 0x6d7069)).Perm(len(cfgs))
		for _, j := range order {
			cfg := cfgs[j]
			opts := validationOptions
			if k := cfg.Schedule.Devices; k == 1 {
				if opts.Calibration, err = runner.CalibrateGroup(ctx, w, cfg.Backend, cfg.Threads); err != nil {
					t.Fatal(err)
				}
			}
			g, err := w.Split(ctx, cfg.Schedule.Devices)
			if err != nil {
				t.Fatal(err)
			}
			if g != nil {
				opts.Group = g
				res, err := runner.Run(ctx, cfg, opts)
				g.Close()
				if err != nil {
					t.Fatalf("rank %d: %s: %v", w.Rank(), cfg, err)
				}
				if w.Rank() == 0 {
					if res.TransportVersion == "" {
						res.TransportVersion = strings.TrimSpace(w.Library())
					}
					rec := stripBlockEvents(res.Record())
					rec.Round = round + 1
					if err := rec.Validate(); err != nil {
						t.Fatalf("%s: %v", cfg, err)
					}
					if err := profiler.Append(out, rec); err != nil {
						t.Fatal(err)
					}
					t.Logf("%s: median step %.1f ms", cfg, float64(rec.Summary.StepNanosMedian)/1e6)
				}
			}
			if err := w.Barrier(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if w.Rank() == 0 {
		t.Logf("%d configurations × %d runs in %.0f s; rename %s to %s to commit them",
			len(cfgs), mpiValidationRepeats, time.Since(start).Seconds(), out, mpiValidationData)
	}
}
