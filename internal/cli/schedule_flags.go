package cli

import (
	"errors"
	"strings"

	"github.com/spf13/pflag"

	"github.com/pipecast/pipecast/schedule"
)

// addScheduleOptionFlags adds a list flag for every option of the
// schedules (schedule.OptionFlags) that fills v, its usage followed by
// note; v's lists when the flags are added are their defaults. The
// commands name no option: a new one arrives with its flag.
func addScheduleOptionFlags(f *pflag.FlagSet, v *schedule.Variants, note string) {
	for _, of := range schedule.OptionFlags() {
		f.Var(&optionFlag{v: v, of: of}, of.Name, of.Usage+note)
		noEmptyDefault(f, of.Name)
	}
}

// scheduleOptionFlagNames returns the names of the schedules' option
// flags.
func scheduleOptionFlagNames() []string {
	var out []string
	for _, of := range schedule.OptionFlags() {
		out = append(out, of.Name)
	}
	return out
}

// optionFlag is the pflag.Value of one schedule option's list: the first
// value given replaces the default list, and each value, or each of a
// comma-separated list, is added; an empty value is an error, as no
// option takes an empty list.
type optionFlag struct {
	v       *schedule.Variants
	of      schedule.OptionFlag
	changed bool
}

func (x *optionFlag) String() string { return "[" + strings.Join(x.of.Values(*x.v), ",") + "]" }

func (x *optionFlag) Set(s string) error {
	if !x.changed {
		x.of.Clear(x.v)
		x.changed = true
	}
	if strings.TrimSpace(s) == "" {
		return errors.New("empty list")
	}
	for _, part := range strings.Split(s, ",") {
		if err := x.of.Add(x.v, strings.TrimSpace(part)); err != nil {
			return err
		}
	}
	return nil
}

// Type names the values as pflag's own list flags do, so that help says
// "strings" or "ints" and leaves an empty default out.
func (x *optionFlag) Type() string {
	if x.of.Ints {
		return "intSlice"
	}
	return "stringSlice"
}
