package cli

import (
	"errors"

	"github.com/spf13/pflag"

	"github.com/pipecast/pipecast/models"
)

// addSizeListFlags adds a list flag for every size field of the models
// (models.SizeFlags) that fills v, its usage followed by note; v's lists
// when the flags are added are their defaults. The commands name no size
// field: a new one arrives with its flag.
func addSizeListFlags(f *pflag.FlagSet, v *models.SizeVariants, note string) {
	for _, sf := range models.SizeFlags() {
		addListFlag(f, sizeFlag(v, sf, false), sf.Name, sf.Usage+note)
	}
}

// addSizeFlags adds a one-value flag for every size field that fills s,
// for the commands that size one model.
func addSizeFlags(f *pflag.FlagSet, s *ModelSize) {
	for _, sf := range models.SizeFlags() {
		addListFlag(f, sizeFlag(&s.SizeVariants, sf, true), sf.Name, sf.Usage)
	}
}

// sizeFlag is the flag value of size field sf's list in v.
func sizeFlag(v *models.SizeVariants, sf models.SizeFlag, single bool) *listFlag {
	var typ string
	switch {
	case single && sf.Whole:
		typ = "int"
	case single:
		typ = "float"
	case sf.Whole:
		typ = "intSlice"
	default:
		typ = "float64Slice"
	}
	return &listFlag{
		values: func() []string { return sf.Values(*v) },
		clear:  func() { sf.Clear(v) },
		add:    func(s string) error { return sf.Add(v, s) },
		typ:    typ,
		single: single,
	}
}

// sizeFlagNames returns the names of the size flags.
func sizeFlagNames() []string {
	var out []string
	for _, sf := range models.SizeFlags() {
		out = append(out, sf.Name)
	}
	return out
}

// checkSizes turns a size no model takes into a usage error.
func checkSizes(v models.SizeVariants) error {
	var se *models.SizeError
	if err := v.Check(); errors.As(err, &se) {
		return usageErrorf("--%s %s: %s", se.Field, se.Value, se.Why)
	}
	return nil
}
