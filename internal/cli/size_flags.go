package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/pipecast/pipecast/models"
)

// addSizeListFlags adds a list flag for every size field of the models
// (models.SizeFlags) that fills v, its usage followed by note; v's lists
// when the flags are added are their defaults. The commands name no size
// field: a new one arrives with its flag.
func addSizeListFlags(f *pflag.FlagSet, v *models.SizeVariants, note string) {
	for _, sf := range models.SizeFlags() {
		f.Var(&sizeFlag{v: v, sf: sf}, sf.Name, sf.Usage+note)
		noEmptyDefault(f, sf.Name)
	}
}

// noEmptyDefault keeps help from showing "(default [])" for list flag
// name when its default is the empty list, as pflag's own list flags do.
func noEmptyDefault(f *pflag.FlagSet, name string) {
	if fl := f.Lookup(name); fl != nil && fl.DefValue == "[]" {
		fl.DefValue = ""
	}
}

// addSizeFlags adds a one-value flag for every size field that fills s,
// for the commands that size one model.
func addSizeFlags(f *pflag.FlagSet, s *ModelSize) {
	for _, sf := range models.SizeFlags() {
		f.Var(&sizeFlag{v: &s.SizeVariants, sf: sf, single: true}, sf.Name, sf.Usage)
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

// sizeFlag is the pflag.Value of one size field: a list, whose first
// value given replaces the default, or with single one value.
type sizeFlag struct {
	v       *models.SizeVariants
	sf      models.SizeFlag
	single  bool
	changed bool
}

func (x *sizeFlag) String() string {
	vals := x.sf.Values(*x.v)
	if x.single {
		return strings.Join(vals, ",")
	}
	return "[" + strings.Join(vals, ",") + "]"
}

func (x *sizeFlag) Set(s string) error {
	if x.single || !x.changed {
		x.sf.Clear(x.v)
		x.changed = true
	}
	if strings.TrimSpace(s) == "" {
		return errors.New("empty list")
	}
	parts := strings.Split(s, ",")
	if x.single && len(parts) > 1 {
		return fmt.Errorf("one value, not %d", len(parts))
	}
	for _, part := range parts {
		if err := x.sf.Add(x.v, strings.TrimSpace(part)); err != nil {
			return err
		}
	}
	return nil
}

// Type names the values as pflag's own flags do.
func (x *sizeFlag) Type() string {
	switch {
	case x.single && x.sf.Whole:
		return "int"
	case x.single:
		return "float"
	case x.sf.Whole:
		return "intSlice"
	}
	return "float64Slice"
}

// checkSizes turns a size no model takes into a usage error.
func checkSizes(v models.SizeVariants) error {
	var se *models.SizeError
	if err := v.Check(); errors.As(err, &se) {
		return usageErrorf("--%s %s: %s", se.Field, se.Value, se.Why)
	}
	return nil
}
