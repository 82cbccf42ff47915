package cli

import (
	"github.com/spf13/pflag"

	"github.com/pipecast/pipecast/schedule"
)

// addScheduleOptionFlags adds a list flag for every option of the
// schedules (schedule.OptionFlags) that fills v, its usage followed by
// note; v's lists when the flags are added are their defaults. The
// commands name no option: a new one arrives with its flag.
func addScheduleOptionFlags(f *pflag.FlagSet, v *schedule.Variants, note string) {
	for _, of := range schedule.OptionFlags() {
		typ := "stringSlice"
		if of.Ints {
			typ = "intSlice"
		}
		addListFlag(f, &listFlag{
			values: func() []string { return of.Values(*v) },
			clear:  func() { of.Clear(v) },
			add:    func(s string) error { return of.Add(v, s) },
			typ:    typ,
		}, of.Name, of.Usage+note)
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
