package profiler

import (
	"runtime"
	"testing"
)

func TestParseVmHWM(t *testing.T) {
	tests := []struct {
		name   string
		status string
		want   int64
		ok     bool
	}{
		{"linux", "Name:\ttest\nVmPeak:\t  812344 kB\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\n", 20480 << 10, true},
		{"last line without newline", "VmRSS:\t1 kB\nVmHWM:\t7 kB", 7 << 10, true},
		{"missing", "Name:\ttest\nVmRSS:\t10240 kB\n", 0, false},
		{"other unit", "VmHWM:\t20 MB\n", 0, false},
		{"not a number", "VmHWM:\tlots kB\n", 0, false},
		{"empty", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseVmHWM([]byte(tt.status))
			if got != tt.want || ok != tt.ok {
				t.Errorf("parseVmHWM = %d, %v; want %d, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestMaxrssBytes(t *testing.T) {
	tests := []struct {
		name   string
		maxrss int64
		goos   string
		want   int64
	}{
		{"linux kilobytes", 2048, "linux", 2 << 20},
		{"freebsd kilobytes", 1, "freebsd", 1024},
		{"darwin bytes", 2048, "darwin", 2048},
		{"ios bytes", 5, "ios", 5},
		{"unknown", 0, "linux", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := maxrssBytes(tt.maxrss, tt.goos); got != tt.want {
				t.Errorf("maxrssBytes(%d, %s) = %d, want %d", tt.maxrss, tt.goos, got, tt.want)
			}
		})
	}
}

func TestPeakRSSBytesGrows(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the peak resident set is known to be available on Linux")
	}
	before := PeakRSSBytes()
	if before <= 0 {
		t.Fatalf("PeakRSSBytes() = %d, want > 0", before)
	}
	if ru := rusagePeakRSS(); ru <= 0 {
		t.Errorf("rusagePeakRSS() = %d, want > 0", ru)
	}
	const extra = 32 << 20
	if before > 1<<30 {
		t.Skipf("peak already %d bytes; touching more would be costly", before)
	}
	// Resident pages beyond the previous peak must raise it: touch one
	// byte of every page of a block larger than the peak so far.
	block := make([]byte, before+extra)
	for i := 0; i < len(block); i += 4096 {
		block[i] = 1
	}
	after := PeakRSSBytes()
	runtime.KeepAlive(block)
	if after < before+extra/2 {
		t.Errorf("PeakRSSBytes() = %d after touching %d bytes, was %d; want at least %d",
			after, len(block), before, before+extra/2)
	}
}
