package predictor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
)

// Key identifies what a cost model describes: one network at one size,
// trained by one optimizer, on one backend with one number of threads
// per device. The predictor forecasts other device counts, micro-batch
// counts, batches and schedules of the same key, never another key; and
// of a language model other sequence lengths too, which its key leaves
// out (see KeySize).
type Key struct {
	Model string
	// SizeRecord is the model's size, its family's fields, as KeySize
	// gives it: a language model's without its sequence length.
	models.SizeRecord
	Backend string
	Threads int
	// Transport is the records' transport, "" for in-process (see
	// KeyTransport): MPI records forecast MPI runs, in-process records
	// in-process ones.
	Transport string `json:",omitempty"`
	// Optimizer is the records' optimizer as records name it, "" for SGD
	// (see KeyOptimizer): an update of AdamW, which reads and writes two
	// moments a parameter, is not timed by SGD's runs, nor the other way.
	Optimizer string `json:",omitempty"`
}

// KeyTransport is a transport as keys hold it: "" for in-process.
func KeyTransport(transport string) string {
	if transport == profiler.TransportInProcess {
		return ""
	}
	return transport
}

// KeyOptimizer is an optimizer as keys hold it, as records name it: ""
// for SGD (models.DefaultOptimizer), which records from before optimizers
// had names trained with.
func KeyOptimizer(name string) string {
	if name == models.DefaultOptimizer {
		return ""
	}
	return name
}

// OptimizerName is the optimizer a key's records trained with, by name
// (KeyOptimizer's inverse): SGD for "".
func (k Key) OptimizerName() string {
	if k.Optimizer == "" {
		return models.DefaultOptimizer
	}
	return k.Optimizer
}

// KeySize is a size as keys hold it: a language model's without its
// sequence length (Seq 0), so that the runs of one at every sequence
// length fit one cost model, whose block costs are functions of the
// tokens (see CostModel.Block) and forecast sequence lengths never run;
// any other model's whole.
func KeySize(r models.SizeRecord) models.SizeRecord {
	r.Seq = 0
	return r
}

// SpansSeq says whether k's cost model spans sequence lengths: whether
// it is a language model's.
func (k Key) SpansSeq() bool { return k.Vocab != 0 || k.Layers != 0 }

// KeyOf returns the key of a record.
func KeyOf(r *profiler.Record) Key {
	return Key{
		Model: r.Config.Model, SizeRecord: KeySize(r.Config.SizeRecord),
		Backend: r.Env.Backend, Threads: r.Config.Threads, Transport: KeyTransport(profiler.TransportOf(&r.Env)),
		Optimizer: KeyOptimizer(r.Config.Optimizer),
	}
}

// configKey returns the key of a configuration normalised by
// config.Config.WithDefaults, whose model describes to size.
func configKey(cfg config.Config, size models.SizeRecord) Key {
	return Key{
		Model: cfg.Model, SizeRecord: KeySize(size), Backend: cfg.Backend, Threads: cfg.Threads,
		Transport: KeyTransport(cfg.Transport), Optimizer: KeyOptimizer(cfg.Optimizer),
	}
}

// String formats the key for messages.
func (k Key) String() string {
	size := k.SizeRecord.Describe()
	if k.SpansSeq() && k.Seq == 0 {
		size = fmt.Sprintf("vocab %d, %d layers, width %g, any sequence length", k.Vocab, k.Layers, k.Width)
	}
	s := fmt.Sprintf("%s (%s) on %s with %d thread(s) per device", k.Model, size, k.Backend, k.Threads)
	if k.Transport != "" {
		s += ", one process per device over " + k.Transport
	}
	if k.Optimizer != "" {
		s += ", trained by " + k.Optimizer
	}
	return s
}

// Phase is the kind of compute a block time is fitted for.
type Phase int

// The phases of a block.
const (
	PhaseForward Phase = iota
	PhaseBackward
	PhaseRecompute
	PhasePredict
	// PhaseBackwardInput and PhaseBackwardWeight are the halves of a
	// split backward (the zero-bubble schedules' B and W).
	PhaseBackwardInput
	PhaseBackwardWeight
)

// Line is a fitted t = Intercept + Slope·x with its residuals, as every
// fit reports them. A language model's block times add Quad·x·s, where x
// is the call's tokens m·S and s its sequence length S: the m·S² of
// attention's scores and context (see fitLine); Quad is 0 in every other
// fit.
type Line struct {
	Intercept, Slope float64
	Quad             float64
	// Points is how many measurements the fit used; RMSE and MaxRelErr
	// are its residuals' root mean square (in the fit's unit) and largest
	// relative error over the points.
	Points    int
	RMSE      float64
	MaxRelErr float64
}

// At evaluates the line at x, with no sequence term.
func (l Line) At(x float64) float64 { return l.Intercept + l.Slope*x }

// AtSeq evaluates the line at x of sequences of s tokens: At(x) +
// Quad·x·s.
func (l Line) AtSeq(x, s float64) float64 { return l.At(x) + l.Quad*x*s }

// scaled returns the line times f, its residuals scaled alike.
func (l Line) scaled(f float64) Line {
	l.Intercept, l.Slope, l.Quad, l.RMSE = l.Intercept*f, l.Slope*f, l.Quad*f, l.RMSE*f
	return l
}

// FitReport names one fitted primitive for users: what it predicts, the
// variable, and the line.
type FitReport struct {
	Name     string // "block layer1.0 forward", "transfer p2p", "update"
	Variable string // "samples", "tokens" (a language model's m·S), "bytes", "params"
	Unit     string // "ns"
	Line     Line
}

// MarshalJSON writes the key as one flat object under the fields' Go
// names in their order, the size's fields in its place ({"Model": …,
// "Image": …, "Classes": …, "Width": …, "Backend": …}, a field the record
// omits when zero left out alike), as reports of validation have always
// shown it.
func (k Key) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	field := func(name string, v any) error {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		j, err := json.Marshal(v)
		fmt.Fprintf(&b, "%q:%s", name, j)
		return err
	}
	if err := field("Model", k.Model); err != nil {
		return nil, err
	}
	size := reflect.ValueOf(k.SizeRecord)
	for i := range size.NumField() {
		// A field a record omits when zero (a language model's, in a
		// CNN's key) is omitted here too.
		_, opts, _ := strings.Cut(size.Type().Field(i).Tag.Get("json"), ",")
		if slices.Contains(strings.Split(opts, ","), "omitempty") && size.Field(i).IsZero() {
			continue
		}
		if err := field(size.Type().Field(i).Name, size.Field(i).Interface()); err != nil {
			return nil, err
		}
	}
	if err := field("Backend", k.Backend); err != nil {
		return nil, err
	}
	if err := field("Threads", k.Threads); err != nil {
		return nil, err
	}
	if k.Transport != "" {
		if err := field("Transport", k.Transport); err != nil {
			return nil, err
		}
	}
	if k.Optimizer != "" {
		if err := field("Optimizer", k.Optimizer); err != nil {
			return nil, err
		}
	}
	return []byte("{" + b.String() + "}"), nil
}
