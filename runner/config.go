package runner

import (
	"fmt"
	"runtime"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/runner/schedule"
	"github.com/pipecast/pipecast/tensor"
	_ "github.com/pipecast/pipecast/tensor/cpu" // the default backend, always built
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
	// Balance is the block cost the partitioner balances: "params",
	// "macs" (default) or "time" (each block's forward and backward
	// measured on one device at the micro-batch size, as torchgpipe's
	// balance_by_time does).
	Balance string
	// Backend names the tensor backend ("cpu"); Threads is T, the worker
	// threads of each device.
	Backend string
	Threads int
	// Dataset is a datasets.Open spec ("synthetic", "cifar10:DIR", …).
	Dataset string
	// Seed determines the initial weights, the data order and the dropout
	// masks.
	Seed uint64
	// SGD is the optimizer's hyper-parameters.
	SGD tensor.SGDParams
	// Bounds, when set, is the partition to use instead of balancing:
	// stage s holds blocks [Bounds[s], Bounds[s+1]). A forecast sets it
	// to run exactly the partition it computed from fitted block times.
	Bounds []int
}

// DefaultSGD is the optimizer of the runs unless a caller says otherwise:
// torchvision's reference training recipe's momentum and weight decay at a
// learning rate suited to training from scratch on small batches.
func DefaultSGD() tensor.SGDParams {
	return tensor.SGDParams{LR: 0.01, Momentum: 0.9, WeightDecay: 1e-4}
}

// WithDefaults returns c with its zero fields filled as Run fills them.
func (c Config) WithDefaults() Config { return c.withDefaults() }

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	if c.Balance == "" {
		c.Balance = "macs"
	}
	if c.Backend == "" {
		c.Backend = "cpu"
	}
	if c.Threads == 0 {
		c.Threads = max(1, runtime.NumCPU()/max(1, c.Schedule.Devices))
	}
	if c.Dataset == "" {
		c.Dataset = "synthetic"
	}
	if c.Schedule.Name == "" {
		c.Schedule.Name = schedule.GPipe
	}
	if c.Schedule.Devices == 0 {
		c.Schedule.Devices = 1
	}
	if c.Schedule.Micro == 0 {
		c.Schedule.Micro = 1
	}
	if c.Schedule.Name == schedule.Coop && c.Schedule.Prefetch == 0 {
		c.Schedule.Prefetch = 1
	}
	if c.SGD == (tensor.SGDParams{}) {
		c.SGD = DefaultSGD()
	}
	return c
}

// validate reports configurations no schedule can run.
func (c Config) validate() error {
	k, m := c.Schedule.Devices, c.Schedule.Micro
	switch {
	case c.Batch < 1:
		return fmt.Errorf("batch %d: need at least 1 sample", c.Batch)
	case m < 1 || c.Batch%m != 0:
		return fmt.Errorf("batch %d does not split into %d micro-batches of equal size", c.Batch, m)
	case c.Schedule.Name == schedule.Coop && c.Batch%k != 0:
		return fmt.Errorf("coop: batch %d does not split into %d equal shards, one per device", c.Batch, k)
	case c.Threads < 1:
		return fmt.Errorf("threads %d: need at least 1", c.Threads)
	case c.Balance != "params" && c.Balance != "macs" && c.Balance != "time":
		return fmt.Errorf("balance %q: want params, macs or time", c.Balance)
	}
	return nil
}

// Oversubscribed reports whether K devices of T threads ask for more
// threads than the machine has cores.
func (c Config) Oversubscribed() bool {
	c = c.withDefaults()
	return c.Schedule.Devices*c.Threads > runtime.NumCPU()
}
