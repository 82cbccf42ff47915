package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
)

// TestListFlags checks the flags of lists owned outside the command
// line: the first value replaces the default, later ones add to it, a
// one-value flag refuses a list, and an empty value is an error.
func TestListFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    schedule.Variants
		wantErr string
	}{
		{name: "default", want: schedule.DefaultVariants()},
		{name: "replaces then adds", args: []string{"--prefetch", "2", "--prefetch", "3,4"},
			want: schedule.Variants{Checkpoints: []schedule.Checkpoint{schedule.ExceptLast}, Prefetch: []int{2, 3, 4}, Virtual: []int{schedule.DefaultVirtual}}},
		{name: "checkpoint modes", args: []string{"--checkpoint", "never,always"},
			want: schedule.Variants{Checkpoints: []schedule.Checkpoint{schedule.Never, schedule.Always}, Prefetch: []int{1}, Virtual: []int{schedule.DefaultVirtual}}},
		{name: "empty", args: []string{"--virtual-stages="}, wantErr: "empty list"},
		{name: "not a number", args: []string{"--prefetch", "x"}, wantErr: "not a whole number"},
		{name: "unknown mode", args: []string{"--checkpoint", "sometimes"}, wantErr: "unknown checkpoint mode"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := pflag.NewFlagSet("test", pflag.ContinueOnError)
			v := schedule.DefaultVariants()
			addScheduleOptionFlags(f, &v, "")
			err := f.Parse(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(v.Checkpoints, tc.want.Checkpoints) || !slices.Equal(v.Prefetch, tc.want.Prefetch) || !slices.Equal(v.Virtual, tc.want.Virtual) {
				t.Errorf("got %+v, want %+v", v, tc.want)
			}
		})
	}
	f := pflag.NewFlagSet("test", pflag.ContinueOnError)
	s := defaultModelSize()
	addSizeFlags(f, &s)
	if err := f.Parse([]string{"--image", "64", "--image", "96"}); err != nil || !slices.Equal(s.Images, []int{96}) {
		t.Errorf("one-value --image 64 then 96: got %v, %v; want [96]", s.Images, err)
	}
	if err := f.Parse([]string{"--width", "0.5,1"}); err == nil || !strings.Contains(err.Error(), "one value") {
		t.Errorf("one-value --width 0.5,1: got %v, want a one-value error", err)
	}
	var v models.SizeVariants
	f = pflag.NewFlagSet("test", pflag.ContinueOnError)
	addSizeListFlags(f, &v, "")
	if err := f.Parse([]string{"--classes", "10,100"}); err != nil || !slices.Equal(v.Classes, []int{10, 100}) {
		t.Errorf("--classes 10,100: got %v, %v", v.Classes, err)
	}
	if fl := f.Lookup("image"); fl.DefValue != "" {
		t.Errorf("empty default shown as %q, want none", fl.DefValue)
	}
}
