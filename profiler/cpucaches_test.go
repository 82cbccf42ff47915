package profiler

import "testing"

func TestParseAndFormatCaches(t *testing.T) {
	var cs []CacheLevel
	for _, in := range [][3]string{{"1", "Data", "48K"}, {"2", "Unified", "1024K"}, {"3", "Unified", "32768K"}} {
		c, ok := parseCacheLevel(in[0], in[1], in[2])
		if !ok {
			t.Fatalf("parseCacheLevel%q failed", in)
		}
		cs = append(cs, c)
	}
	if got, want := FormatCaches(cs), "L1d 48 KiB, L2 1 MiB, L3 32 MiB"; got != want {
		t.Errorf("FormatCaches = %q, want %q", got, want)
	}
	for _, in := range [][3]string{{"x", "Data", "48K"}, {"1", "", "48K"}, {"1", "Data", "K"}, {"0", "Data", "4K"}, {"2", "Unified", "-1K"}} {
		if _, ok := parseCacheLevel(in[0], in[1], in[2]); ok {
			t.Errorf("parseCacheLevel%q accepted", in)
		}
	}
	if got := FormatCaches(nil); got != "unknown" {
		t.Errorf("FormatCaches(nil) = %q", got)
	}
}
