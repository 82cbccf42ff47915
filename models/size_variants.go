package models

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// SizeVariants are lists of size values that a sweep tries, every
// combination once; an empty list means the field's default (each
// model's own). A model ignores a field it does not take (the mlp, an
// image size; a CNN, a sequence length; a language model, classes). A new
// size field is a list here, with its SizeFlag.
type SizeVariants struct {
	Images  []int // input heights and widths in pixels; 0: the model's default
	Classes []int // output classes; 0: the model's default
	Widths  []float64
	Seqs    []int // a language model's sequence lengths; 0: its default
	Vocabs  []int // a language model's vocabulary sizes; 0: its default
	Layers  []int // a language model's decoder layers; 0: its default
}

// Of returns the configurations of a at every combination of the lists,
// without repeats (a model that does not take a field takes its every
// value as the same configuration).
func (v SizeVariants) Of(a Arch) []Config {
	cs := []Config{{}}
	cs = combine(cs, orDefault(v.Images, 0), func(c *Config, x int) { c.Image = x })
	cs = combine(cs, orDefault(v.Classes, 0), func(c *Config, x int) { c.Classes = x })
	cs = combine(cs, orDefault(v.Widths, 1), func(c *Config, x float64) { c.Width = x })
	cs = combine(cs, orDefault(v.Seqs, 0), func(c *Config, x int) { c.Seq = x })
	cs = combine(cs, orDefault(v.Vocabs, 0), func(c *Config, x int) { c.Vocab = x })
	cs = combine(cs, orDefault(v.Layers, 0), func(c *Config, x int) { c.Layers = x })
	var out []Config
	for _, c := range cs {
		c = a.Sized(c)
		if !slices.ContainsFunc(out, func(o Config) bool { return o.Record() == c.Record() }) {
			out = append(out, c)
		}
	}
	return out
}

// combine returns every configuration of cs with every value of list set
// by set, the values of cs varying slowest.
func combine[T any](cs []Config, list []T, set func(*Config, T)) []Config {
	out := make([]Config, 0, len(cs)*len(list))
	for _, c := range cs {
		for _, x := range list {
			set(&c, x)
			out = append(out, c)
		}
	}
	return out
}

// Add adds r's values to the lists that do not hold them yet.
func (v *SizeVariants) Add(r SizeRecord) {
	v.Images = appendNew(v.Images, r.Image)
	v.Classes = appendNew(v.Classes, r.Classes)
	v.Widths = appendNew(v.Widths, r.Width)
	v.Seqs = appendNew(v.Seqs, r.Seq)
	v.Vocabs = appendNew(v.Vocabs, r.Vocab)
	v.Layers = appendNew(v.Layers, r.Layers)
}

// Or returns v with each empty list taken from other.
func (v SizeVariants) Or(other SizeVariants) SizeVariants {
	for _, l := range []struct{ mine, theirs *[]int }{
		{&v.Images, &other.Images}, {&v.Classes, &other.Classes},
		{&v.Seqs, &other.Seqs}, {&v.Vocabs, &other.Vocabs}, {&v.Layers, &other.Layers},
	} {
		if len(*l.mine) == 0 {
			*l.mine = *l.theirs
		}
	}
	if len(v.Widths) == 0 {
		v.Widths = other.Widths
	}
	return v
}

// SizeError says which size value no model can take.
type SizeError struct {
	Field string // the flag's name: "image"
	Value string
	Why   string
}

func (e *SizeError) Error() string { return e.Field + " " + e.Value + ": " + e.Why }

// Check reports a value that no model can take as a *SizeError: a
// negative count (image size, classes, sequence length, vocabulary,
// layers), a width that is not a positive number. A value a particular
// model cannot take is Arch.CheckSize's.
func (v SizeVariants) Check() error {
	for _, f := range SizeFlags() {
		for _, s := range f.Values(v) {
			if why := f.check(s); why != "" {
				return &SizeError{Field: f.Name, Value: s, Why: why}
			}
		}
	}
	return nil
}

// SizeFlag is one size field as a command line lists it, the way
// schedule.OptionFlag is one schedule option: commands register
// SizeFlags() rather than naming the fields.
type SizeFlag struct {
	// Name is the flag's name: "image".
	Name string
	// Usage says what the values are, for the flag's help.
	Usage string
	// Whole is set when the values are whole numbers.
	Whole bool
	// Add parses one value and appends it to v's list of the field.
	Add func(v *SizeVariants, value string) error
	// Values returns v's list of the field as text.
	Values func(v SizeVariants) []string
	// Clear empties v's list of the field.
	Clear func(v *SizeVariants)
	// Selects reports whether the list's i-th value of v, given for
	// model, selects a run that recorded size r: the value, or for 0 the
	// default that a run of model at r's other fields records; a value
	// of a field the model does not take selects its every run, as the
	// model ignores it.
	Selects func(v SizeVariants, i int, model string, r SizeRecord) bool
	// Ignored says why a ignores the field ("mlp takes flat vectors"), or
	// "" when a takes it.
	Ignored func(a Arch) string
	// check says why a value no model takes is wrong, or "".
	check func(value string) string
}

// SizeFlags returns the flags of the size fields.
func SizeFlags() []SizeFlag {
	return []SizeFlag{
		wholeFlag("image", "input height and width in pixels (0: the model's default; a model of flat vectors or tokens ignores it)",
			func(v *SizeVariants) *[]int { return &v.Images },
			func(c *Config, x int) { c.Image = x }, func(r SizeRecord) int { return r.Image },
			func(a Arch) string {
				switch {
				case a.Tokens != nil:
					return a.Name + " takes token sequences"
				case a.DefaultImage == 0:
					return a.Name + " takes flat vectors"
				}
				return ""
			}),
		wholeFlag("classes", "output classes (0: the model's default; a language model's are its vocabulary)",
			func(v *SizeVariants) *[]int { return &v.Classes },
			func(c *Config, x int) { c.Classes = x }, func(r SizeRecord) int { return r.Classes },
			func(a Arch) string {
				if a.Tokens != nil {
					return a.Name + "'s classes are its vocabulary (--vocab)"
				}
				return ""
			}),
		{
			Name: "width", Usage: "channel-width multiplier (1: torchvision's networks)",
			Add: func(v *SizeVariants, s string) error {
				w, err := strconv.ParseFloat(s, 64)
				if err != nil {
					return fmt.Errorf("width %q: not a number", s)
				}
				v.Widths = append(v.Widths, w)
				return nil
			},
			Values:  func(v SizeVariants) []string { return texts(v.Widths, formatWidth) },
			Clear:   func(v *SizeVariants) { v.Widths = nil },
			Selects: func(v SizeVariants, i int, _ string, r SizeRecord) bool { return v.Widths[i] == r.Width },
			Ignored: func(Arch) string { return "" },
			check: func(s string) string {
				if w, err := strconv.ParseFloat(s, 64); err != nil || !(w > 0) || math.IsInf(w, 1) {
					return "must be a positive number"
				}
				return ""
			},
		},
		wholeFlag("seq", "a language model's sequence length in tokens (0: its default; other models ignore it)",
			func(v *SizeVariants) *[]int { return &v.Seqs },
			func(c *Config, x int) { c.Seq = x }, func(r SizeRecord) int { return r.Seq }, noTokens),
		wholeFlag("vocab", "a language model's vocabulary size (0: its default; other models ignore it)",
			func(v *SizeVariants) *[]int { return &v.Vocabs },
			func(c *Config, x int) { c.Vocab = x }, func(r SizeRecord) int { return r.Vocab }, noTokens),
		wholeFlag("layers", "a language model's decoder layers (0: its default; other models ignore it)",
			func(v *SizeVariants) *[]int { return &v.Layers },
			func(c *Config, x int) { c.Layers = x }, func(r SizeRecord) int { return r.Layers }, noTokens),
	}
}

// wholeFlag is the flag of a size field of whole numbers, 0 the model's
// default: list is v's list of it, set sets it in a Config and get reads
// it from a record.
func wholeFlag(name, usage string, list func(*SizeVariants) *[]int, set func(*Config, int), get func(SizeRecord) int,
	ignored func(Arch) string) SizeFlag {
	return SizeFlag{
		Name: name, Usage: usage, Whole: true,
		Add:    func(v *SizeVariants, s string) error { return addWhole(list(v), name, s) },
		Values: func(v SizeVariants) []string { return texts(*list(&v), strconv.Itoa) },
		Clear:  func(v *SizeVariants) { *list(v) = nil },
		Selects: func(v SizeVariants, i int, model string, r SizeRecord) bool {
			x := (*list(&v))[i]
			return get(recorded(model, r, func(c *Config) { set(c, x) })) == get(r)
		},
		Ignored: ignored,
		check:   atLeastZero,
	}
}

// noTokens says why a model without Tokens ignores a language model's
// field.
func noTokens(a Arch) string {
	if a.Tokens == nil {
		return a.Name + " takes no token sequences"
	}
	return ""
}

// recorded is the size a run of model records when given r with one
// field changed by set: the field as set, the model's default for 0, and
// 0 (a language model's classes: its vocabulary) for a field the model
// does not take. An unknown model records what it was given.
func recorded(model string, r SizeRecord, set func(*Config)) SizeRecord {
	c := r.Config()
	set(&c)
	a, err := LookupArch(model)
	if err != nil {
		return c.Record()
	}
	return a.resolve(a.Sized(c)).Record()
}

func formatWidth(w float64) string { return strconv.FormatFloat(w, 'g', -1, 64) }

func atLeastZero(s string) string {
	if n, err := strconv.Atoi(s); err != nil || n < 0 {
		return "must be positive (or 0 for the model's default)"
	}
	return ""
}

func addWhole(list *[]int, name, s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("%s %q: not a whole number", name, s)
	}
	*list = append(*list, n)
	return nil
}

func texts[T any](list []T, text func(T) string) []string {
	out := make([]string, len(list))
	for i, x := range list {
		out[i] = text(x)
	}
	return out
}

func orDefault[T any](list []T, def T) []T {
	if len(list) == 0 {
		return []T{def}
	}
	return list
}

func appendNew[T comparable](list []T, v T) []T {
	if slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}
