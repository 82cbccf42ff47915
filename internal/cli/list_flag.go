package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// listFlag is the pflag.Value of a list that a package outside the
// command line owns (a schedule option's values, a size field's): the
// first value given replaces the default list, and each value, or each
// of a comma-separated list, is added; with single, the flag takes one
// value. An empty value is an error: no list of these may be empty.
type listFlag struct {
	values func() []string
	clear  func()
	add    func(string) error
	// typ names the values as pflag's own flags do ("intSlice",
	// "stringSlice", "float64Slice"; "int", "float" with single), so that
	// help says "ints" or "strings".
	typ     string
	single  bool
	changed bool
}

func (x *listFlag) String() string {
	if x.single {
		return strings.Join(x.values(), ",")
	}
	return "[" + strings.Join(x.values(), ",") + "]"
}

func (x *listFlag) Set(s string) error {
	if x.single || !x.changed {
		x.clear()
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
		if err := x.add(strings.TrimSpace(part)); err != nil {
			return err
		}
	}
	return nil
}

func (x *listFlag) Type() string { return x.typ }

// addListFlag adds x as flag name; help leaves out an empty default
// list, as pflag's own list flags do.
func addListFlag(f *pflag.FlagSet, x *listFlag, name, usage string) {
	f.Var(x, name, usage)
	if fl := f.Lookup(name); fl.DefValue == "[]" {
		fl.DefValue = ""
	}
}
