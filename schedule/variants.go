package schedule

import (
	"fmt"
	"slices"
	"strconv"
)

// Variants are lists of option values that a sweep or a plan tries:
// each schedule takes the lists of the options it uses, and an empty
// list its default.
type Variants struct {
	Checkpoints []Checkpoint
	Prefetch    []int
	Virtual     []int
}

// DefaultVariants are the options' defaults as one-value lists.
func DefaultVariants() Variants {
	return Variants{Checkpoints: []Checkpoint{ExceptLast}, Prefetch: []int{DefaultPrefetch}, Virtual: []int{DefaultVirtual}}
}

// Of returns the options of schedule name, one for each value of the
// lists of the options it uses (Devices and Micro left zero).
func (v Variants) Of(name string) []Options {
	var out []Options
	switch name {
	case GPipe:
		for _, c := range orDefault(v.Checkpoints, ExceptLast) {
			out = append(out, Options{Name: name, Checkpoint: c})
		}
	case Coop:
		for _, d := range orDefault(v.Prefetch, DefaultPrefetch) {
			out = append(out, Options{Name: name, Prefetch: d})
		}
	case Interleaved:
		for _, n := range orDefault(v.Virtual, DefaultVirtual) {
			out = append(out, Options{Name: name, Virtual: n})
		}
	default:
		out = append(out, Options{Name: name})
	}
	return out
}

// Add adds the values of the options o's schedule uses to the lists that
// do not hold them yet.
func (v *Variants) Add(o Options) {
	switch o.Name {
	case GPipe:
		v.Checkpoints = appendNew(v.Checkpoints, o.Checkpoint)
	case Coop:
		v.Prefetch = appendNew(v.Prefetch, o.Prefetch)
	case Interleaved:
		v.Virtual = appendNew(v.Virtual, o.Virtual)
	}
}

// Or returns v with each empty list taken from other: the values given,
// and where none were, other's (a forecast's flags over its data's).
func (v Variants) Or(other Variants) Variants {
	if len(v.Checkpoints) == 0 {
		v.Checkpoints = other.Checkpoints
	}
	if len(v.Prefetch) == 0 {
		v.Prefetch = other.Prefetch
	}
	if len(v.Virtual) == 0 {
		v.Virtual = other.Virtual
	}
	return v
}

// Sort sorts the lists of numbers; checkpoint modes keep their order.
func (v *Variants) Sort() {
	slices.Sort(v.Prefetch)
	slices.Sort(v.Virtual)
}

// Check reports a value no schedule can take as an *OptionError: a
// checkpoint mode that does not exist, a look-ahead or a chunk count
// below 1.
func (v Variants) Check() error {
	for _, name := range []string{GPipe, Coop, Interleaved} {
		for _, o := range v.Of(name) {
			o.Devices, o.Micro = 1, 1
			if err := o.Check(); err != nil {
				return err
			}
		}
	}
	return nil
}

// OptionFlag is one schedule option as a command line lists it: a flag
// whose values a sweep or a plan tries, every schedule that uses the
// option once with each. Commands register OptionFlags() rather than
// naming the options, so that an option is added here alone.
type OptionFlag struct {
	// Name is the flag's name: "checkpoint".
	Name string
	// Usage says what the values are, for the flag's help.
	Usage string
	// Ints is set when the values are whole numbers.
	Ints bool
	// Add parses one value and appends it to v's list of the option.
	Add func(v *Variants, value string) error
	// Values returns v's list of the option as text.
	Values func(v Variants) []string
	// Clear empties v's list of the option.
	Clear func(v *Variants)
}

// OptionFlags returns the flags of the schedules' options.
func OptionFlags() []OptionFlag {
	return []OptionFlag{
		{
			Name:  "checkpoint",
			Usage: "gpipe checkpointing: never,except-last,always",
			Add: func(v *Variants, s string) error {
				c, err := ParseCheckpoint(s)
				if err != nil {
					return err
				}
				v.Checkpoints = append(v.Checkpoints, c)
				return nil
			},
			Values: func(v Variants) []string { return texts(v.Checkpoints, Checkpoint.String) },
			Clear:  func(v *Variants) { v.Checkpoints = nil },
		},
		{
			Name:   "prefetch",
			Usage:  "coop look-ahead depths d",
			Ints:   true,
			Add:    func(v *Variants, s string) error { return addInt(&v.Prefetch, "prefetch", s) },
			Values: func(v Variants) []string { return texts(v.Prefetch, strconv.Itoa) },
			Clear:  func(v *Variants) { v.Prefetch = nil },
		},
		{
			Name:   "virtual-stages",
			Usage:  "interleaved: model chunks per device v; the model is cut into K·v stages",
			Ints:   true,
			Add:    func(v *Variants, s string) error { return addInt(&v.Virtual, "virtual-stages", s) },
			Values: func(v Variants) []string { return texts(v.Virtual, strconv.Itoa) },
			Clear:  func(v *Variants) { v.Virtual = nil },
		},
	}
}

func addInt(list *[]int, name, s string) error {
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
