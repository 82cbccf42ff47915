package profiler

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
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
		{"largest in bytes", "VmHWM:\t9007199254740991 kB\n", 9007199254740991 << 10, true},
		{"overflows in bytes", "VmHWM:\t9007199254740992 kB\n", 0, false},
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

// FuzzParseVmHWM checks parseVmHWM on any text and on a VmHWM line of any
// value. What it accepts is a whole number of KiB that the first VmHWM
// line of the text says, with kB after it; a line it writes itself reads
// back as the value, in bytes, whenever that fits an int64.
func FuzzParseVmHWM(f *testing.F) {
	for _, seed := range []struct {
		status string
		kb     int64
	}{
		{"Name:\tpipecast\nUmask:\t0022\nState:\tR (running)\nVmPeak:\t 1264736 kB\nVmSize:\t 1264736 kB\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\nThreads:\t8\n", 20480},
		{"VmRSS:\t1 kB\nVmHWM:\t7 kB", 0},
		{"VmHWM:\t20 MB\n", 1},
		{"VmHWM:\t+5 kB\n", -1},
		{"VmHWM:\t-5 kB\n", 1 << 40},
		{"VmHWM:\t0x10 kB\n", math.MaxInt64 >> 10},
		{"VmHWM:\t9223372036854775807 kB\nVmHWM:\t1 kB\n", math.MaxInt64>>10 + 1},
		{"VmHWM:\n", math.MaxInt64},
		{"vmhwm:\t5 kB\n", 3},
		{"", 0},
	} {
		f.Add([]byte(seed.status), seed.kb)
	}
	f.Fuzz(func(t *testing.T, status []byte, kb int64) {
		if n, ok := parseVmHWM(status); ok {
			want, found := firstVmHWMKiB(status)
			if !found || n < 0 || n%1024 != 0 || n/1024 != want {
				t.Fatalf("parseVmHWM(%q) = %d bytes; the text says %d KiB (found %v)", status, n, want, found)
			}
		} else if n != 0 {
			t.Fatalf("parseVmHWM(%q) = %d, false; want 0 when it finds nothing", status, n)
		}

		line := fmt.Sprintf("Name:\tx\nVmHWM:\t%8d kB\nVmRSS:\t1 kB\n", kb)
		n, ok := parseVmHWM([]byte(line))
		switch fits := kb >= 0 && kb <= math.MaxInt64>>10; {
		case fits && (!ok || n != kb<<10):
			t.Fatalf("parseVmHWM(%q) = %d, %v; want %d, true", line, n, ok, kb<<10)
		case !fits && ok:
			t.Fatalf("parseVmHWM(%q) = %d, true; want false, %d KiB is no peak in bytes", line, n, kb)
		}
	})
}

// firstVmHWMKiB is what the first line of status that starts with
// "VmHWM:" says in KiB, if it is a number followed by kB.
func firstVmHWMKiB(status []byte) (int64, bool) {
	for _, line := range strings.Split(string(status), "\n") {
		rest, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		return kb, err == nil
	}
	return 0, false
}
