package reports

import (
	"math"
	"testing"
)

func TestFormatCount(t *testing.T) {
	tests := []struct {
		name string
		n    int64
		want string
	}{
		{name: "zero", n: 0, want: "0"},
		{name: "one", n: 1, want: "1"},
		{name: "mlp input is exact", n: 784, want: "784"},
		{name: "largest exact", n: 999, want: "999"},
		{name: "first with a prefix", n: 1000, want: "1.00 k"},
		{name: "kilo", n: 1_234, want: "1.23 k"},
		{name: "rounds half up in the last digit", n: 1_235_001, want: "1.24 M"},
		{name: "resnet50 params", n: 25_557_032, want: "25.56 M"},
		{name: "vgg16bn params", n: 138_365_992, want: "138.37 M"},
		{name: "resnet50 MACs", n: 4_089_184_256, want: "4.09 G"},
		{name: "carry into the next prefix", n: 999_995, want: "1.00 M"},
		{name: "just below the carry", n: 999_994, want: "999.99 k"},
		{name: "carry into giga", n: 999_999_999, want: "1.00 G"},
		{name: "tera", n: 3_500_000_000_000, want: "3.50 T"},
		{name: "largest int64", n: math.MaxInt64, want: "9.22 E"},
		{name: "negative exact", n: -12, want: "-12"},
		{name: "negative scaled", n: -25_557_032, want: "-25.56 M"},
		{name: "smallest int64", n: math.MinInt64, want: "-9.22 E"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := FormatCount(tc.n); got != tc.want {
				t.Errorf("FormatCount(%d): got %q, want %q", tc.n, got, tc.want)
			}
		})
	}
}

func TestFormatBytes(t *testing.T) {
	tests := []struct {
		name string
		n    int64
		want string
	}{
		{name: "zero", n: 0, want: "0 B"},
		{name: "largest exact", n: 1023, want: "1023 B"},
		{name: "one KiB", n: 1024, want: "1.00 KiB"},
		{name: "two decimals below ten", n: 1536, want: "1.50 KiB"},
		{name: "one float32 of a 784-vector", n: 3136, want: "3.06 KiB"},
		{name: "one decimal from ten", n: 10 * 1024, want: "10.0 KiB"},
		{name: "mebibytes", n: 98 * 1024 * 1024, want: "98.0 MiB"},
		{name: "hundreds", n: 553_451_520, want: "527.8 MiB"},
		{name: "carry into the next unit", n: 1024*1024 - 1, want: "1.00 MiB"},
		{name: "carry from two decimals to one", n: 10*1024 - 1, want: "10.0 KiB"},
		{name: "just below the ten carry", n: 10*1024 - 6, want: "9.99 KiB"},
		{name: "gibibytes", n: 5 * 1024 * 1024 * 1024 / 2, want: "2.50 GiB"},
		{name: "largest int64", n: math.MaxInt64, want: "8.00 EiB"},
		{name: "negative", n: -2048, want: "-2.00 KiB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := FormatBytes(tc.n); got != tc.want {
				t.Errorf("FormatBytes(%d): got %q, want %q", tc.n, got, tc.want)
			}
		})
	}
}
