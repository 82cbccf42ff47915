package config

import (
	"strconv"
	"strings"
	"testing"
)

func TestParseThreadsMax(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		good bool
	}{
		{"191469\n", 191469, true},
		{"  42 \n", 42, true},
		{"0\n", 0, false},
		{"-5\n", -5, false},
		{"", 0, false},
		{"12 13\n", 0, false},
		{"0x10\n", 0, false},
		{"99999999999999999999999\n", 0, false},
	} {
		n, ok := parseThreadsMax([]byte(c.in))
		if ok != c.good || (ok && n != c.n) {
			t.Errorf("parseThreadsMax(%q) = %d, %v; want %d, %v", c.in, n, ok, c.n, c.good)
		}
	}
	if m := MaxThreads(); m < 1 || m > goMaxThreads-runtimeThreads {
		t.Errorf("MaxThreads() = %d, want 1 to %d", m, goMaxThreads-runtimeThreads)
	}
}

// FuzzParseThreadsMax checks that any text of /proc/sys/kernel/threads-max
// parses without a panic, that a count it accepts is positive, and that
// it accepts exactly the trimmed positive decimals.
func FuzzParseThreadsMax(f *testing.F) {
	for _, s := range []string{"191469\n", "1", "0", "-1", "", "+7\n", "\x00", "18446744073709551616"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, ok := parseThreadsMax(b)
		if ok && n <= 0 {
			t.Fatalf("parseThreadsMax(%q) accepted %d", b, n)
		}
		want, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if ok != (err == nil && want > 0) || (ok && n != want) {
			t.Fatalf("parseThreadsMax(%q) = %d, %v; Atoi gives %d, %v", b, n, ok, want, err)
		}
	})
}
