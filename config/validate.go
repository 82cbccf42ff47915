package config

import (
	"errors"
	"fmt"
	"sync"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
	_ "github.com/pipecast/pipecast/tensor/meta" // models are described on the meta backend
)

// Rule names a rule of what can run.
type Rule int

// The rules Validate checks, in the order it checks them.
const (
	RuleModel      Rule = iota // the model is in the zoo and can be built at its sizes
	RuleImage                  // the model takes its sizes: an input no smaller, a sequence no longer than it accepts
	RuleCounts                 // batch, devices, micro-batches and threads are positive
	RuleStages                 // no more stages (devices; × virtual stages for interleaved, × 2 for zb-v and dualpipev) than the model has blocks
	RuleSchedule               // the schedule exists and its options make sense
	RuleSingle                 // single runs on one device
	RuleMicro                  // the batch splits into M equal micro-batches
	RuleShards                 // coop: the batch splits into K equal shards
	RuleBalance                // the balance is one the partitioner knows
	RulePartition              // a partition given (Bounds) has the configuration's stages, each of a block at least, and the model's blocks
	RuleTransport              // the transport is one the runner knows
	RuleThreads                // the devices' threads fit what the Go runtime and the system allow
	RuleInjection              // an injected straggler or failure names a device of the run
	RuleOptimizer              // the optimizer is one the models know
	RuleDeviceList             // a list per device (threads, speeds) has one entry per pipeline device
)

// Misfit reports whether the rule is one a sweep's combination of values
// may break without anything being wrong with the values on their own
// (single at K = 2, a batch that M does not divide): a sweep skips such
// combinations with a note instead of refusing them.
func (r Rule) Misfit() bool {
	return r == RuleSingle || r == RuleMicro || r == RuleShards || r == RuleDeviceList
}

// InvalidError says which rule a configuration breaks, and why.
type InvalidError struct {
	Rule Rule
	// Field is the configuration's field at fault, by its name in run
	// records and on the command line ("devices", "image"), and Value its
	// value.
	Field, Value string
	// Reason is the whole message; for RuleImage, RuleStages,
	// RuleThreads, RuleInjection and RulePartition it is about the value
	// and does not repeat the field.
	Reason string
	// Err is the underlying error, if any.
	Err error
}

func (e *InvalidError) Error() string { return e.Reason }

func (e *InvalidError) Unwrap() error { return e.Err }

func invalid(rule Rule, field string, value any, format string, args ...any) *InvalidError {
	return &InvalidError{Rule: rule, Field: field, Value: fmt.Sprint(value), Reason: fmt.Sprintf(format, args...)}
}

// Validate reports the first rule of what can run that c, with its
// defaults filled, breaks, as an *InvalidError; nil when it can run. It
// describes the model on the meta backend (shapes and costs, no values):
// milliseconds, and once per sized model.
func (c Config) Validate() error {
	c = c.WithDefaults()
	a, err := models.LookupArch(c.Model)
	if err != nil {
		return &InvalidError{Rule: RuleModel, Field: "model", Value: c.Model, Reason: err.Error(), Err: err}
	}
	var se *models.SizeError
	if err := a.CheckSize(c.ModelConfig); errors.As(err, &se) {
		return &InvalidError{Rule: RuleImage, Field: se.Field, Value: se.Value, Reason: se.Why, Err: err}
	}
	s := c.Schedule
	switch {
	case c.Batch < 1:
		return invalid(RuleCounts, "batch", c.Batch, "batch %d: need at least 1 sample", c.Batch)
	case s.Devices < 1:
		return invalid(RuleCounts, "devices", s.Devices, "devices %d: need at least 1", s.Devices)
	case s.Micro < 1:
		return invalid(RuleCounts, "microbatches", s.Micro, "microbatches %d: need at least 1", s.Micro)
	case c.Threads < 1:
		return invalid(RuleCounts, "threads", c.Threads, "threads %d: need at least 1", c.Threads)
	}
	if err := c.checkDevices(); err != nil {
		return err
	}
	if n, limit := c.TotalThreads(), MaxThreads(); n > limit {
		threads := fmt.Sprint(c.Threads)
		if len(c.DeviceThreads) > 0 {
			threads = profiler.FormatThreads(c.DeviceThreads)
		}
		return invalid(RuleThreads, "threads", threads,
			"%d devices of %s threads need %d OS threads, more than the %d a process may run (the Go runtime's limit less room for its own, or the system's)",
			c.JobDevices(), threads, n, limit)
	}
	m, err := describe(c.Model, c.ModelConfig)
	if err != nil {
		return &InvalidError{Rule: RuleModel, Field: "model", Value: c.Model, Reason: err.Error(), Err: err}
	}
	if err := checkStages(c, len(m.Blocks)); err != nil {
		return err
	}
	if err := checkSchedule(s); err != nil {
		return err
	}
	switch {
	case c.Batch%s.Micro != 0:
		return invalid(RuleMicro, "microbatches", s.Micro,
			"batch %d with M=%d: the batch does not split into %d equal micro-batches", c.Batch, s.Micro, s.Micro)
	case s.ShardsBatch() && c.Batch%s.Devices != 0:
		return invalid(RuleShards, "batch", c.Batch,
			"%s with batch %d at K=%d: the batch does not split into %d equal shards", s.Name, c.Batch, s.Devices, s.Devices)
	}
	if _, err := ParseBalance(string(c.Balance)); err != nil {
		return &InvalidError{Rule: RuleBalance, Field: "balance", Value: string(c.Balance), Reason: err.Error(), Err: err}
	}
	if err := checkPartition(c, len(m.Blocks)); err != nil {
		return err
	}
	if st := c.Straggler; st.Factor != 0 && (st.Factor < 1 || st.Device >= c.JobDevices()) {
		return invalid(RuleInjection, "straggler", fmt.Sprintf("%d:%g", st.Device, st.Factor),
			"want a device below %s and a factor of at least 1", c.deviceCount())
	}
	if f := c.Fail; f != nil && (f.Device >= c.JobDevices() || f.Device < 0 || f.Step < 0) {
		return invalid(RuleInjection, "fail", fmt.Sprintf("%d:%d", f.Device, f.Step),
			"want a device below %s and a step ≥ 0", c.deviceCount())
	}
	if t := c.Transport; t != profiler.TransportInProcess && t != profiler.TransportMPI {
		return invalid(RuleTransport, "transport", t, "transport %q: want %s or %s", t, profiler.TransportInProcess, profiler.TransportMPI)
	}
	if _, err := models.NewOptimizer(c.Optimizer, c.Hyper()); err != nil {
		return &InvalidError{Rule: RuleOptimizer, Field: "optimizer", Value: c.Optimizer, Reason: err.Error(), Err: err}
	}
	return nil
}

// checkStages checks that the model's n blocks make c's stages: K, K·v
// for interleaved, 2K for the V-shaped schedules.
func checkStages(c Config, n int) error {
	s := c.Schedule
	if s.Devices > n {
		return invalid(RuleStages, "devices", s.Devices, "%s has %d blocks, so at most %d stages", c.Model, n, n)
	}
	if k := c.Stages(); k > n {
		if s.Name == schedule.Interleaved {
			return invalid(RuleStages, "virtual-stages", s.Virtual,
				"%s has %d blocks, so at most %d stages, fewer than %d devices × %d virtual stages = %d", c.Model, n, n, s.Devices, s.Virtual, k)
		}
		return invalid(RuleStages, "devices", s.Devices,
			"%s has %d blocks, so at most %d stages, fewer than the %d stages of %s", c.Model, n, n, k, stagesOf(c))
	}
	return nil
}

// checkSchedule checks the schedule's name and its options
// (schedule.Options.Check): a schedule that cannot run on K devices
// breaks RuleSingle, which a sweep skips, any other option RuleSchedule.
func checkSchedule(s schedule.Options) error {
	var oe *schedule.OptionError
	if err := s.Check(); !errors.As(err, &oe) {
		return err
	}
	rule := RuleSchedule
	if oe.TooManyDevices {
		rule = RuleSingle
	}
	return &InvalidError{Rule: rule, Field: oe.Field, Value: fmt.Sprint(oe.Value), Reason: oe.Error(), Err: oe}
}

// describedLimit bounds the descriptions describe keeps: a sweep sizes a
// handful of models, and each description is the model's block list.
const describedLimit = 64

// described caches model descriptions by model and sizes.
var described struct {
	sync.Mutex
	byKey map[string]*models.Model
}

// describe returns the symbolic description of a sized model, from the
// cache when it was described before.
func describe(name string, mc models.Config) (*models.Model, error) {
	key := fmt.Sprintf("%s %+v", name, mc)
	described.Lock()
	m, ok := described.byKey[key]
	described.Unlock()
	if ok {
		return m, nil
	}
	m, err := models.Describe(name, mc)
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", name, err)
	}
	if m == nil {
		return nil, errors.New("describe " + name + ": no model")
	}
	described.Lock()
	defer described.Unlock()
	if described.byKey == nil || len(described.byKey) >= describedLimit {
		described.byKey = map[string]*models.Model{}
	}
	described.byKey[key] = m
	return m, nil
}

// Describe returns the symbolic description of c's model at its sizes:
// its blocks, their shapes and costs. Descriptions are cached.
func (c Config) Describe() (*models.Model, error) { return describe(c.Model, c.ModelConfig) }

// deviceCount names the job's device count as messages give it: "K=2",
// or with replicas "R·K=4".
func (c Config) deviceCount() string {
	if c.Schedule.Replicas > 1 {
		return fmt.Sprintf("R·K=%d", c.JobDevices())
	}
	return fmt.Sprintf("K=%d", c.Schedule.Devices)
}
