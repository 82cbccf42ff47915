package profiler

import "testing"

func TestParseMemAvailable(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     int64
	}{
		{"kB", "MemTotal:       24576000 kB\nMemFree:  100 kB\nMemAvailable:   23000000 kB\n", 23000000 * 1024},
		{"missing", "MemTotal: 1 kB\n", 0},
		{"garbage", "MemAvailable: lots kB\n", 0},
		{"negative", "MemAvailable: -5 kB\n", 0},
		{"overflow", "MemAvailable: 9223372036854775807 kB\n", 0},
	} {
		if got := parseMemAvailable([]byte(tc.in)); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if AvailableMemoryBytes() <= 0 {
		t.Log("no /proc/meminfo here")
	}
}

func FuzzParseMemAvailable(f *testing.F) {
	f.Add([]byte("MemAvailable:   23000000 kB\n"))
	f.Add([]byte("MemAvailable: 1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if n := parseMemAvailable(b); n < 0 {
			t.Errorf("negative memory %d", n)
		}
	})
}
