package schedule

import (
	"fmt"
	"slices"
	"strings"
)

// Names lists the schedules.
func Names() []string {
	return []string{Single, GPipe, Coop, OneF1B, Interleaved, ZBH1, ZBH2, ZBV, DualPipeV}
}

// Splits reports whether schedule name splits its backwards into
// BackwardInput and BackwardWeight.
func Splits(name string) bool {
	return name == ZBH1 || name == ZBH2 || name == ZBV || name == DualPipeV
}

// VShaped reports whether schedule name places two stages on every device
// in a V: device k holds stages k and 2K−1−k, so that the first device
// holds the first and the last stage.
func VShaped(name string) bool { return name == ZBV || name == DualPipeV }

// The options' defaults.
const (
	// DefaultPrefetch is coop's look-ahead depth d: one slice's forward
	// may run ahead of the gradients.
	DefaultPrefetch = 1
	// DefaultVirtual is interleaved's number of model chunks per device,
	// Megatron-LM's usual two: with one, interleaved is 1f1b.
	DefaultVirtual = 2
)

// Options select a schedule and its parameters. Options owns everything
// said about them: their defaults (WithDefaults), their checks (Check),
// the stages they cut a model into (Stages), their label (Label) and
// their form in a run record (Record); a new option is added here and
// nowhere else.
type Options struct {
	// Name is one of Names().
	Name string
	// Devices is K, the number of devices of one pipeline (1 for
	// single), each holding one stage, or v stages in interleaved. A
	// program is one pipeline: a job of data-parallel replicas runs R of
	// them on R·K devices.
	Devices int
	// Micro is M, the number of micro-batches (coop: slices) per step.
	Micro int
	// Checkpoint is gpipe's mode.
	Checkpoint Checkpoint
	// Prefetch is coop's look-ahead depth d ≥ 1: how many slices'
	// forwards may run ahead of their gradients.
	Prefetch int
	// Virtual is interleaved's v ≥ 1: how many model chunks (stages)
	// each device holds, the model being cut into K·v stages.
	Virtual int
	// Replicas is R ≥ 1 (0 counts as 1), the data-parallel copies of the
	// pipeline a job runs on R·K devices, each on its own B samples,
	// their gradients summed before the update (DPAllReduce; see
	// Program.Replicas).
	Replicas int
}

// WithDefaults returns o with its zero fields filled: gpipe, one device,
// one micro-batch, and the defaults of the options the schedule uses
// (gpipe's zero Checkpoint is already its default, ExceptLast).
func (o Options) WithDefaults() Options {
	if o.Name == "" {
		o.Name = GPipe
	}
	if o.Devices == 0 {
		o.Devices = 1
	}
	if o.Micro == 0 {
		o.Micro = 1
	}
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.Name == Coop && o.Prefetch == 0 {
		o.Prefetch = DefaultPrefetch
	}
	if o.Name == Interleaved && o.Virtual == 0 {
		o.Virtual = DefaultVirtual
	}
	return o
}

// OptionError says which option of a schedule is at fault, by its name in
// run records and on the command line.
type OptionError struct {
	// Field is the option: "schedule", "devices", "microbatches",
	// "replicas", "checkpoint", "prefetch" or "virtual-stages".
	Field string
	// Value is the value at fault.
	Value any
	// Why says what is wrong with the value: "need at least 1".
	Why string
	// Reason, when set, is the whole message in place of "Field Value:
	// Why".
	Reason string
	// TooManyDevices is set when the options are right on their own but
	// the schedule runs on fewer devices (single at K = 2): a sweep over
	// device counts skips such a combination rather than refusing it.
	TooManyDevices bool
}

func (e *OptionError) Error() string {
	if e.Reason != "" {
		return e.Reason
	}
	return fmt.Sprintf("%s %v: %s", e.Field, e.Value, e.Why)
}

func optionError(field string, value any, format string, args ...any) error {
	return &OptionError{Field: field, Value: value, Why: fmt.Sprintf(format, args...)}
}

// Check reports an option that the schedule cannot take, as an
// *OptionError: an unknown name, fewer than one device or micro-batch,
// single on more than one device, or an option of the schedule out of its
// range. Options the schedule does not use are not checked.
func (o Options) Check() error {
	switch {
	case !slices.Contains(Names(), o.Name):
		return optionError("schedule", fmt.Sprintf("%q", o.Name), "unknown (want %s)", strings.Join(Names(), ", "))
	case o.Devices < 1:
		return optionError("devices", o.Devices, "need at least 1")
	case o.Micro < 1:
		return optionError("microbatches", o.Micro, "need at least 1")
	case o.Replicas < 0:
		return optionError("replicas", o.Replicas, "need at least 1")
	case o.MaxDevices() > 0 && o.Devices > o.MaxDevices():
		return &OptionError{Field: "schedule", Value: o.Name, TooManyDevices: true,
			Reason: fmt.Sprintf("single at K=%d: it runs on one device", o.Devices)}
	case o.Name == GPipe && (o.Checkpoint < ExceptLast || o.Checkpoint > Never):
		return optionError("checkpoint", int(o.Checkpoint), "unknown mode")
	case o.Name == Coop && o.Prefetch < 1:
		return optionError("prefetch", o.Prefetch, "need at least 1")
	case o.Name == Interleaved && o.Virtual < 1:
		return optionError("virtual-stages", o.Virtual, "need at least 1 model chunk per device")
	}
	return nil
}

// Stages returns the number of stages the model is cut into: K·v for
// interleaved (v chunks on each of K devices), 2K for the V-shaped
// schedules (two on each), K otherwise.
func (o Options) Stages() int {
	switch {
	case o.Name == Interleaved:
		return o.Devices * max(o.Virtual, 1)
	case VShaped(o.Name):
		return 2 * o.Devices
	}
	return o.Devices
}

// StageRule says how Stages follows from the options where it is not K:
// "K·v" for interleaved, "2K" for the V-shaped schedules, "" otherwise.
func (o Options) StageRule() string {
	switch {
	case o.Name == Interleaved:
		return "K·v"
	case VShaped(o.Name):
		return "2K"
	}
	return ""
}

// Owner returns the device that holds stage s of the o.Stages() stages:
// s itself, s mod K in interleaved (device k holds k, k+K, …), and in a
// V (zb-v, dualpipev) s on the way down and 2K−1−s on the way back, so
// that device k holds k and 2K−1−k.
func (o Options) Owner(s int) int {
	K := max(o.Devices, 1)
	switch {
	case o.Name == Interleaved:
		return s % K
	case VShaped(o.Name) && s >= K:
		return 2*K - 1 - s
	}
	return s
}

// MaxDevices returns the most devices the schedule runs on (single: 1),
// or 0 where it takes any number.
func (o Options) MaxDevices() int {
	if o.Name == Single {
		return 1
	}
	return 0
}

// ShardsBatch reports whether the schedule splits each mini-batch into K
// shards, one a device (coop's prediction step), so that K must divide
// the batch.
func (o Options) ShardsBatch() bool { return o.Name == Coop }

// PredictsBoundaries reports whether the schedule's prediction step
// supplies every stage after the first its input for the whole mini-batch
// (coop's all-to-all), so that a stage's forward output goes to no next
// stage and only the last stage's, which feeds the loss, is kept.
func (o Options) PredictsBoundaries() bool { return o.Name == Coop }

// Recomputes reports whether the schedule recomputes checkpointed
// forwards before their backwards (gpipe in every mode but never).
func (o Options) Recomputes() bool { return o.Name == GPipe && o.Checkpoint != Never }

// Label names the schedule with the option that shapes it: "gpipe
// (except-last)", "coop (d=2)", "interleaved (v=2)", "1f1b".
func (o Options) Label() string { return o.Record().Label() }

// OptionLabel is the option that shapes the schedule (see
// RecordOptions.OptionLabel): "except-last", "d=2", "v=2" or "".
func (o Options) OptionLabel() string { return o.Record().OptionLabel() }

// ShortLabel is Label without the options at their defaults,
// torchgpipe's except-last checkpointing and coop's look-ahead of 1:
// "gpipe", "coop", but "gpipe (never)" and "coop (d=2)".
func (o Options) ShortLabel() string { return o.Record().ShortLabel() }

// ShortLabelNote says what ShortLabel leaves out, for a table's footnote.
const ShortLabelNote = "gpipe's except-last and coop's d=1 not shown"

// Record returns o's form in a run record: the options the schedule
// uses, the others left zero (and so out of the record's JSON).
func (o Options) Record() RecordOptions {
	r := RecordOptions{Devices: o.Devices, Micro: o.Micro, Schedule: o.Name}
	if o.Replicas > 1 {
		r.Replicas = o.Replicas
	}
	switch o.Name {
	case GPipe:
		r.Checkpoint = o.Checkpoint.String()
	case Coop:
		r.Prefetch = o.Prefetch
	case Interleaved:
		r.Virtual = o.Virtual
	}
	return r
}

// RecordOptions are a schedule's options as a run record holds them,
// under the record's JSON names; run records embed them whole.
type RecordOptions struct {
	Devices    int    `json:"devices"`
	Micro      int    `json:"microbatches"`
	Schedule   string `json:"schedule"`
	Checkpoint string `json:"checkpoint,omitempty"`
	Prefetch   int    `json:"prefetch,omitempty"`
	Virtual    int    `json:"virtual_stages,omitempty"` // interleaved's chunks per device v: Devices·Virtual stages
	Replicas   int    `json:"replicas,omitempty"`       // data-parallel copies R of the pipeline, left out for 1
}

// JobDevices returns R·K, the devices of the recorded job: K for one
// replica.
func (r RecordOptions) JobDevices() int { return max(r.Replicas, 1) * r.Devices }

// Check reports a recorded option that no run could have had: a
// negative look-ahead or chunk count.
func (r RecordOptions) Check() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"prefetch", r.Prefetch}, {"virtual_stages", r.Virtual}, {"replicas", r.Replicas}} {
		if f.v < 0 {
			return fmt.Errorf("%s %d is negative", f.name, f.v)
		}
	}
	return nil
}

// Options returns the options r records. A record without a checkpoint
// mode has gpipe's default.
func (r RecordOptions) Options() (Options, error) {
	o := Options{Name: r.Schedule, Devices: r.Devices, Micro: r.Micro, Prefetch: r.Prefetch, Virtual: r.Virtual,
		Replicas: r.Replicas}
	if r.Checkpoint != "" {
		ck, err := ParseCheckpoint(r.Checkpoint)
		if err != nil {
			return Options{}, err
		}
		o.Checkpoint = ck
	}
	return o, nil
}

// Label names the recorded schedule with the option that shapes it (see
// Options.Label); a gpipe record that names no checkpoint mode is
// "gpipe".
func (r RecordOptions) Label() string {
	if o := r.OptionLabel(); o != "" {
		return r.Schedule + " (" + o + ")"
	}
	return r.Schedule
}

// OptionLabel is the option that shapes the recorded schedule, as Label
// shows it in parentheses: "except-last", "d=2", "v=2", or "" for a
// schedule without options.
func (r RecordOptions) OptionLabel() string {
	switch r.Schedule {
	case GPipe:
		return r.Checkpoint
	case Coop:
		return fmt.Sprintf("d=%d", r.Prefetch)
	case Interleaved:
		return fmt.Sprintf("v=%d", max(r.Virtual, 1))
	}
	return ""
}

// ShortLabel is Label without the options at their defaults (see
// Options.ShortLabel).
func (r RecordOptions) ShortLabel() string {
	switch {
	case r.Schedule == GPipe && r.Checkpoint == ExceptLast.String(),
		r.Schedule == Coop && r.Prefetch == DefaultPrefetch:
		return r.Schedule
	}
	return r.Label()
}
