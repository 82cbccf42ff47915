package config

import (
	"fmt"
	"runtime"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// Config is one training configuration: what to train, on what, how.
type Config struct {
	// Model names a zoo network; ModelConfig sizes it.
	Model       string
	ModelConfig models.Config
	// Batch is B, the mini-batch size of one step.
	Batch int
	// Schedule selects the schedule, K (Devices), M (Micro) and its
	// options.
	Schedule schedule.Options
	// Balance is the block cost the partitioner balances (BalanceMACs by
	// default).
	Balance Balance
	// Backend names the tensor backend ("cpu"); Threads is T, the worker
	// threads of each device.
	Backend string
	Threads int
	// DeviceThreads, when set, gives each of the K pipeline devices its
	// own worker threads (every replica's device k takes DeviceThreads[k]);
	// Threads is then their largest, the reference device's. Threads
	// alike are folded into Threads (WithDefaults).
	DeviceThreads []int
	// Speeds, when set, are the K pipeline devices' speeds relative to
	// a device of Threads threads (0.5: it takes twice as long), which
	// the runner measures from the model's block times when DeviceThreads
	// differ and a forecast takes from the cost models of each thread
	// count. An injected straggler is not in them (see Slowdown).
	Speeds []float64
	// Transport is how the devices move data:
	// profiler.TransportInProcess (the default: devices are goroutines of
	// one process) or profiler.TransportMPI (one process per device).
	Transport string
	// Dataset is a datasets.Open spec ("synthetic", "cifar10:DIR", …).
	Dataset string
	// Seed determines the initial weights, the data order and the dropout
	// masks.
	Seed uint64
	// Optimizer names the optimizer (models.OptimizerNames;
	// the model's, models.OptimizerOf, when empty); SGD and AdamW hold the
	// hyper-parameters of each, of which the optimizer reads its own.
	Optimizer string
	SGD       tensor.SGDParams
	AdamW     tensor.AdamWParams
	// Straggler, when its Factor exceeds 1, slows one device's compute:
	// every compute op of device Straggler.Device takes Factor times as
	// long (the worker sleeps after the op's work for the difference).
	// Transfers keep their speed.
	Straggler Straggler
	// Fail, when set (Step ≥ 0 and Device ≥ 0), makes device Fail.Device
	// fail at the start of step Fail.Step: an injected fault.
	Fail *FailAt
	// Bounds, when set, is the partition to use instead of balancing:
	// stage s holds blocks [Bounds[s], Bounds[s+1]). A forecast sets it
	// to run exactly the partition it computed from fitted block times.
	Bounds []int
	// BalanceTimes, when set and Balance is BalanceTime, are the block
	// times the partition balances (ns, each block's forward and backward
	// at the micro-batch size) instead of the runner measuring them: a
	// sweep measures them once per workload and shares them, so that its
	// rounds, schedules and device counts split alike, and a forecast
	// balances the times the run it forecasts did.
	BalanceTimes []float64
}

// DefaultSGD is the optimizer of the runs unless a caller says otherwise:
// torchvision's reference training recipe's momentum and weight decay at a
// learning rate suited to training from scratch on small batches.
func DefaultSGD() tensor.SGDParams {
	return tensor.SGDParams{LR: 0.01, Momentum: 0.9, WeightDecay: 1e-4}
}

// DefaultHyper returns every optimizer's hyper-parameters where a caller
// gives none: DefaultSGD, and torch.optim.AdamW's defaults.
func DefaultHyper() models.Hyper {
	return models.Hyper{SGD: DefaultSGD(), AdamW: tensor.DefaultAdamW()}
}

// DefaultThreads is the worker threads of every device when a sweep's
// largest device count is maxDevices: the machine's cores shared among
// them, at least 1, so that runs at different K compare like with like.
func DefaultThreads(maxDevices int) int {
	return max(1, runtime.NumCPU()/max(1, maxDevices))
}

// WithDefaults returns c with its zero fields filled as the runner fills
// them, the schedule's by schedule.Options.WithDefaults. A configuration
// is normalised once where it enters: Sweep.Expand, FromRecord and the
// library's entry points (runner.Run, the predictor's forecasts) return
// or take it so, and what they call relies on it.
func (c Config) WithDefaults() Config {
	if c.Balance == "" {
		c.Balance = BalanceMACs
	}
	if c.Backend == "" {
		c.Backend = tensor.CPUBackend
	}
	c.Schedule = c.Schedule.WithDefaults()
	c.normaliseDevices()
	if c.Threads == 0 {
		c.Threads = DefaultThreads(c.JobDevices())
	}
	if c.Transport == "" {
		c.Transport = profiler.TransportInProcess
	}
	if c.Dataset == "" {
		c.Dataset = "synthetic"
	}
	if c.Optimizer == "" {
		c.Optimizer = models.OptimizerOf(c.Model)
	}
	if c.SGD == (tensor.SGDParams{}) {
		c.SGD = DefaultSGD()
	}
	if c.AdamW == (tensor.AdamWParams{}) {
		c.AdamW = tensor.DefaultAdamW()
	}
	return c
}

// Hyper returns the optimizers' hyper-parameters.
func (c Config) Hyper() models.Hyper { return models.Hyper{SGD: c.SGD, AdamW: c.AdamW} }

// Stages returns the number of stages the model is cut into (see
// schedule.Options.Stages).
func (c Config) Stages() int { return c.Schedule.WithDefaults().Stages() }

// MicroBatchSize returns m = B/M, the samples of one micro-batch (coop:
// of one slice).
func (c Config) MicroBatchSize() int { return c.Batch / max(c.Schedule.Micro, 1) }

// JobDevices returns N = R·K, the devices of the job: R replicas of a
// pipeline of K devices.
func (c Config) JobDevices() int { return max(c.Schedule.Replicas, 1) * max(c.Schedule.Devices, 1) }

// StepSamples returns R·B, the samples one training step trains on: B
// for each of the R replicas.
func (c Config) StepSamples() int { return max(c.Schedule.Replicas, 1) * c.Batch }

// ShardSize returns B/K, the samples of one shard of the mini-batch:
// what each device predicts in coop's prediction step.
func (c Config) ShardSize() int { return c.Batch / max(c.Schedule.Devices, 1) }

// Oversubscribed reports whether the job's R·K devices' threads are more
// than the machine has cores.
func (c Config) Oversubscribed() bool {
	return c.WithDefaults().TotalThreads() > runtime.NumCPU()
}

// String names the configuration briefly, as progress lines and errors
// do: "resnet50 32px ×0.25 gpipe (except-last) K=2 M=4 B=16"; coop adds
// its look-ahead "(d=1)", interleaved its chunks per device "(v=2)", and
// a job of replicas their count before K: "R=2 K=2".
func (c Config) String() string {
	s := c.Schedule
	name := s.Label()
	replicas := ""
	if s.Replicas > 1 {
		replicas = fmt.Sprintf("R=%d ", s.Replicas)
	}
	return fmt.Sprintf("%s %s %sK=%d M=%d B=%d", c.ModelConfig.Record().Label(c.Model), name, replicas, s.Devices, s.Micro, c.Batch)
}
