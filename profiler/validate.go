package profiler

import (
	"errors"
	"fmt"
	"time"
)

// SchemaVersionError reports a record whose schema version this build
// does not read. Records never change meaning within a version, so a
// reader refuses other versions rather than guess.
type SchemaVersionError struct {
	Version int
}

func (e *SchemaVersionError) Error() string {
	switch {
	case e.Version > SchemaVersion:
		return fmt.Sprintf("schema version %d is newer than this pipecast reads (%d): upgrade pipecast to read it",
			e.Version, SchemaVersion)
	case e.Version == 0:
		return "schema version missing: not a pipecast run record"
	default:
		return fmt.Sprintf("schema version %d is not supported: this pipecast reads version %d", e.Version, SchemaVersion)
	}
}

// Validate checks what every consumer of a record relies on: the schema
// version, the kind, the identifying and configuration fields, counts
// that agree with each other, and times and sizes that are not negative.
// Messages name fields by their JSON names so that they can be found in
// the file. Validate does not check that the numbers are plausible.
func (r *Record) Validate() error {
	if r.Schema != SchemaVersion {
		return &SchemaVersionError{Version: r.Schema}
	}
	if r.Kind != KindMeasured && r.Kind != KindPredicted {
		return fmt.Errorf("kind %q: want %q or %q", r.Kind, KindMeasured, KindPredicted)
	}
	if r.Round < 0 {
		return fmt.Errorf("round %d is negative", r.Round)
	}
	if r.ID == "" {
		return errors.New("id is empty")
	}
	if _, err := time.Parse(time.RFC3339, r.CreatedUTC); err != nil {
		return fmt.Errorf("created_utc %q is not RFC 3339", r.CreatedUTC)
	}
	if err := r.Env.validate(); err != nil {
		return fmt.Errorf("environment: %w", err)
	}
	if err := r.Config.validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := r.validateCounts(); err != nil {
		return err
	}
	if err := r.validateTimes(); err != nil {
		return err
	}
	return nil
}

func (e *Environment) validate() error {
	if e.PeakRSSBytes < 0 {
		return fmt.Errorf("peak_rss_bytes %d is negative", e.PeakRSSBytes)
	}
	if t := e.Transport; t != "" && t != TransportInProcess && t != TransportMPI {
		return fmt.Errorf("transport %q: want %q or %q", t, TransportInProcess, TransportMPI)
	}
	if e.ClockResidualNanos < 0 {
		return fmt.Errorf("clock_residual_nanos %d is negative", e.ClockResidualNanos)
	}
	for i, r := range e.Ranks {
		if r.Rank != i || r.Threads < 0 {
			return fmt.Errorf("ranks[%d]: rank %d, threads %d: want rank %d and threads ≥ 0", i, r.Rank, r.Threads, i)
		}
	}
	for i, d := range e.Devices {
		if d.Threads < 0 {
			return fmt.Errorf("devices[%d]: threads %d is negative", i, d.Threads)
		}
	}
	if c := e.Calibration; c != nil {
		if c.LatencyNanos < 0 || c.BandwidthBytesPerSecond < 0 {
			return fmt.Errorf("calibration: latency_nanos %g or bandwidth_bytes_per_second %g is negative",
				c.LatencyNanos, c.BandwidthBytesPerSecond)
		}
		for i, s := range c.Samples {
			if s.Bytes < 0 || s.Nanos < 0 || s.Devices < 0 {
				return fmt.Errorf("calibration: samples[%d]: negative devices, bytes or nanos", i)
			}
		}
	}
	return nil
}

func (c *RunConfig) validate() error {
	if c.Model == "" {
		return errors.New("model is empty")
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"batch", c.Batch}, {"devices", c.Devices}, {"microbatches", c.Micro},
	} {
		if f.v <= 0 {
			return fmt.Errorf("%s %d: want > 0", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"threads", c.Threads}, {"steps", c.Steps}, {"warmup", c.Warmup},
	} {
		if f.v < 0 {
			return fmt.Errorf("%s %d is negative", f.name, f.v)
		}
	}
	if err := c.SizeRecord.Check(); err != nil {
		return err
	}
	if err := c.OptimizerRecord.Check(); err != nil {
		return err
	}
	return c.RecordOptions.Check()
}

// validateCounts checks that the parts of a record agree in size. A
// measured record holds exactly the steps its configuration asked for; a
// predicted one may hold none, since a prediction need not list steps.
func (r *Record) validateCounts() error {
	if r.Kind == KindMeasured && len(r.Steps) != r.Config.Steps {
		return fmt.Errorf("steps: %d measured steps, config.steps is %d", len(r.Steps), r.Config.Steps)
	}
	if r.Kind == KindPredicted && len(r.Steps) != 0 && len(r.Steps) != r.Config.Steps {
		return fmt.Errorf("steps: %d predicted steps, config.steps is %d", len(r.Steps), r.Config.Steps)
	}
	if p := r.Env.Probe; p != nil {
		if err := p.validate(len(r.Steps)); err != nil {
			return fmt.Errorf("environment: %w", err)
		}
	}
	if len(r.WarmupLosses) > r.Config.Warmup {
		return fmt.Errorf("warmup_losses: %d losses, config.warmup is %d", len(r.WarmupLosses), r.Config.Warmup)
	}
	for i, s := range r.Partition {
		if s.FirstBlock < 0 || s.EndBlock < s.FirstBlock {
			return fmt.Errorf("partition[%d]: blocks [%d, %d) are not a range", i, s.FirstBlock, s.EndBlock)
		}
		if s.Params < 0 || s.MACsPerSample < 0 || s.ActivationBytesPerSample < 0 {
			return fmt.Errorf("partition[%d]: negative params, macs or activation bytes", i)
		}
	}
	return nil
}

// validateTimes checks that no time, size or count is negative and that
// no event ends before it starts.
func (r *Record) validateTimes() error {
	for i, s := range r.Steps {
		if s.WallNanos < 0 {
			return fmt.Errorf("steps[%d]: wall_nanos %d is negative", i, s.WallNanos)
		}
	}
	m := r.Summary
	if m.StepNanosMedian < 0 || m.StepNanosMin < 0 || m.StepNanosMax < 0 ||
		m.SamplesPerSecond < 0 || m.BubbleFraction < 0 || m.PeakBytesMax < 0 || m.MovedBytesPerStep < 0 {
		return errors.New("summary: a time, rate, fraction or size is negative")
	}
	if m.StepNanosMin > m.StepNanosMax {
		return fmt.Errorf("summary: step_nanos_min %d exceeds step_nanos_max %d", m.StepNanosMin, m.StepNanosMax)
	}
	for i, d := range r.Devices {
		if err := d.validate(); err != nil {
			return fmt.Errorf("devices[%d]: %w", i, err)
		}
	}
	for i, b := range r.Blocks {
		if b.Samples < 0 || b.ForwardNanos < 0 || b.BackwardNanos < 0 || b.RecomputeNanos < 0 || b.PredictNanos < 0 ||
			b.BackwardInputNanos < 0 || b.BackwardWeightNanos < 0 {
			return fmt.Errorf("blocks[%d]: a time or the samples is negative", i)
		}
	}
	for i, e := range r.Events {
		if e.StartNanos < 0 || e.EndNanos < e.StartNanos {
			return fmt.Errorf("events[%d]: start_nanos %d, end_nanos %d: want 0 ≤ start ≤ end", i, e.StartNanos, e.EndNanos)
		}
		if e.Bytes < 0 {
			return fmt.Errorf("events[%d]: bytes %d is negative", i, e.Bytes)
		}
	}
	return nil
}

func (d *Device) validate() error {
	if d.BusyNanos < 0 || d.IdleNanos < 0 || d.PeakBytes < 0 || d.SentBytesPerStep < 0 || d.ReceivedBytesPerStep < 0 {
		return errors.New("a time or size is negative")
	}
	for op, n := range d.BusyNanosByOp {
		if n < 0 {
			return fmt.Errorf("busy_nanos_by_op[%q] %d is negative", op, n)
		}
	}
	for c, n := range d.PeakBytesByCategory {
		if n < 0 {
			return fmt.Errorf("peak_bytes_by_category[%q] %d is negative", c, n)
		}
	}
	return nil
}
