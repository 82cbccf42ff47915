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
// image size). A new size field is a list here, with its SizeFlag.
type SizeVariants struct {
	Images  []int // input heights and widths in pixels; 0: the model's default
	Classes []int // output classes; 0: the model's default
	Widths  []float64
}

// Of returns the configurations of a at every combination of the lists,
// without repeats (a model of flat vectors takes every image size as the
// same configuration).
func (v SizeVariants) Of(a Arch) []Config {
	var out []Config
	for _, image := range orDefault(v.Images, 0) {
		for _, classes := range orDefault(v.Classes, 0) {
			for _, width := range orDefault(v.Widths, 1) {
				c := a.Sized(image, classes, width)
				if !slices.ContainsFunc(out, func(o Config) bool { return o.Record() == c.Record() }) {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// Add adds r's values to the lists that do not hold them yet.
func (v *SizeVariants) Add(r SizeRecord) {
	v.Images = appendNew(v.Images, r.Image)
	v.Classes = appendNew(v.Classes, r.Classes)
	v.Widths = appendNew(v.Widths, r.Width)
}

// Or returns v with each empty list taken from other.
func (v SizeVariants) Or(other SizeVariants) SizeVariants {
	if len(v.Images) == 0 {
		v.Images = other.Images
	}
	if len(v.Classes) == 0 {
		v.Classes = other.Classes
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
// negative image size or class count, a width that is not a positive
// number. A value a particular model cannot take is Arch.CheckSize's.
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
	// default that a run of model at r's other fields records.
	Selects func(v SizeVariants, i int, model string, r SizeRecord) bool
	// check says why a value no model takes is wrong, or "".
	check func(value string) string
}

// SizeFlags returns the flags of the size fields.
func SizeFlags() []SizeFlag {
	return []SizeFlag{
		{
			Name: "image", Usage: "input height and width in pixels (0: the model's default; a model of flat vectors ignores it)", Whole: true,
			Add:    func(v *SizeVariants, s string) error { return addWhole(&v.Images, "image", s) },
			Values: func(v SizeVariants) []string { return texts(v.Images, strconv.Itoa) },
			Clear:  func(v *SizeVariants) { v.Images = nil },
			Selects: func(v SizeVariants, i int, model string, r SizeRecord) bool {
				return recordedImage(model, v.Images[i]) == r.Image
			},
			check: atLeastZero,
		},
		{
			Name: "classes", Usage: "output classes (0: the model's default)", Whole: true,
			Add:    func(v *SizeVariants, s string) error { return addWhole(&v.Classes, "classes", s) },
			Values: func(v SizeVariants) []string { return texts(v.Classes, strconv.Itoa) },
			Clear:  func(v *SizeVariants) { v.Classes = nil },
			Selects: func(v SizeVariants, i int, model string, r SizeRecord) bool {
				return recordedClasses(model, v.Classes[i], r) == r.Classes
			},
			check: atLeastZero,
		},
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
			check: func(s string) string {
				if w, err := strconv.ParseFloat(s, 64); err != nil || !(w > 0) || math.IsInf(w, 1) {
					return "must be a positive number"
				}
				return ""
			},
		},
	}
}

// recordedImage is the image size a run of model records for the value
// image: the zoo's default for 0, and 0 for a model of flat vectors; an
// unknown model records what it was given.
func recordedImage(model string, image int) int {
	a, err := LookupArch(model)
	switch {
	case err != nil:
		return image
	case a.DefaultImage == 0:
		return 0
	case image == 0:
		return a.DefaultImage
	}
	return image
}

// recordedClasses is the number of classes a run of model at r's image
// and width records for the value classes: the zoo's default for 0.
func recordedClasses(model string, classes int, r SizeRecord) int {
	if classes != 0 {
		return classes
	}
	m, err := Describe(model, Config{Image: r.Image, Width: r.Width})
	if err != nil {
		return -1
	}
	return m.Config.Classes
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
