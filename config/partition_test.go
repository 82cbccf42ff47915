package config

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
)

func TestParsePartition(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		err  string
	}{
		{in: "3,4,4,3", want: []int{3, 4, 4, 3}},
		{in: " 1, 2 ", want: []int{1, 2}},
		{in: "7", want: []int{7}},
		{in: "", err: "empty"},
		{in: "3,,4", err: `"" is not a count of blocks`},
		{in: "3,x", err: `"x" is not a count of blocks`},
		{in: "3,0,4", err: "a stage of 0 blocks: every stage needs at least 1"},
		{in: "3,-1", err: "a stage of -1 blocks"},
	}
	for _, tc := range tests {
		got, err := ParsePartition(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParsePartition(%q) = %v, %v; want an error containing %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParsePartition(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if back := FormatPartition(got); back != strings.ReplaceAll(tc.in, " ", "") {
			t.Errorf("FormatPartition(%v) = %q, want %q", got, back, strings.ReplaceAll(tc.in, " ", ""))
		}
		if b := BoundsOf(got); b[0] != 0 || !slices.Equal(SizesOf(b), got) {
			t.Errorf("BoundsOf(%v) = %v, whose sizes are %v", got, b, SizesOf(b))
		}
	}
}

func FuzzParsePartition(f *testing.F) {
	for _, s := range []string{"3,4,4,3", "1", "", "0", "2,,3", "9999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sizes, err := ParsePartition(s)
		if err != nil {
			return
		}
		for _, n := range sizes {
			if n < 1 {
				t.Fatalf("ParsePartition(%q) = %v: a stage of %d blocks", s, sizes, n)
			}
		}
		if again, err := ParsePartition(FormatPartition(sizes)); err != nil || !slices.Equal(again, sizes) {
			t.Fatalf("round trip of %v: %v, %v", sizes, again, err)
		}
	})
}

// TestSweepPartitions checks that a sweep runs every configuration with
// each partition of its stage count, and refuses, naming the partition,
// one that no partition fits and partitions that cannot serve.
func TestSweepPartitions(t *testing.T) {
	s := Sweep{
		Models: []string{"mlp"}, Batches: []int{4}, Devices: []int{2}, Micro: []int{2},
		Schedules: []string{"gpipe", "1f1b"}, Balance: BalanceGiven, Partitions: [][]int{{1, 2}, {2, 1}},
		Backend: "cpu", Threads: 1,
		SizeVariants: models.SizeVariants{Images: []int{0}, Classes: []int{0}, Widths: []float64{0.25}},
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	cfgs, _, err := s.Expand()
	if err != nil {
		t.Fatal(err)
	}
	var got [][]int
	for _, c := range cfgs {
		if c.Balance != BalanceGiven {
			t.Errorf("%s: balance %q, want given", c, c.Balance)
		}
		got = append(got, c.Bounds)
	}
	if want := [][]int{{0, 1, 3}, {0, 2, 3}, {0, 1, 3}, {0, 2, 3}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("bounds %v, want %v", got, want)
	}
	var fe *FieldError
	for _, tc := range []struct {
		name    string
		change  func(s *Sweep)
		field   string
		want    string
		atCheck bool
	}{
		{name: "no partition of K", change: func(s *Sweep) { s.Devices = []int{2, 3} }, field: "partition",
			want: "partition 1,2 and 2,1: 2 stages, but gpipe at K=3 cuts mlp into 3"},
		{name: "interleaved's K·v", change: func(s *Sweep) {
			s.Devices, s.Schedules, s.Variants = []int{1}, []string{"interleaved"}, schedule.Variants{Virtual: []int{3}}
		}, field: "partition", want: "2 stages, but interleaved at K=1 with v=3 (K·v) cuts mlp into 3"},
		{name: "too many blocks", change: func(s *Sweep) { s.Partitions = [][]int{{2, 2}} }, field: "partition",
			want: "partition 2,2: 4 blocks, but mlp has 3"},
		{name: "an empty stage", change: func(s *Sweep) { s.Partitions = [][]int{{3, 0}} }, field: "partition",
			want: "partition 3,0: a stage of 0 blocks", atCheck: true},
		{name: "given without a partition", change: func(s *Sweep) { s.Partitions = nil }, field: "balance",
			want: "balance given: no partition given", atCheck: true},
		{name: "a partition and a balance", change: func(s *Sweep) { s.Balance = BalanceMACs }, field: "balance",
			want: "balance macs: a partition is given (1,2), so nothing is balanced", atCheck: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := s
			tc.change(&c)
			err := c.Check()
			if !tc.atCheck {
				if err != nil {
					t.Fatalf("check: %v", err)
				}
				_, _, err = c.Expand()
			}
			if !errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want a FieldError of %s containing %q", err, tc.field, tc.want)
			}
		})
	}
}
