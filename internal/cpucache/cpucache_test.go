package cpucache

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParseAndFormat(t *testing.T) {
	var cs []Level
	for _, in := range [][4]string{{"1", "Data", "48K", "0"}, {"2", "Unified", "1024K", "0"}, {"3", "Unified", "32768K", "0-1,4-5"}} {
		c, ok := parse(in[0], in[1], in[2], in[3])
		if !ok {
			t.Fatalf("parse%q failed", in)
		}
		cs = append(cs, c)
	}
	if got, want := Format(cs), "L1d 48 KiB, L2 1 MiB, L3 32 MiB"; got != want {
		t.Errorf("Format = %q, want %q", got, want)
	}
	if cs[2].SharedBy != 4 || cs[0].SharedBy != 1 {
		t.Errorf("shared by %d and %d CPUs, want 4 and 1", cs[2].SharedBy, cs[0].SharedBy)
	}
	for _, in := range [][4]string{{"x", "Data", "48K", ""}, {"1", "", "48K", ""}, {"1", "Data", "K", ""}, {"0", "Data", "4K", ""}, {"2", "Unified", "-1K", ""}} {
		if _, ok := parse(in[0], in[1], in[2], in[3]); ok {
			t.Errorf("parse%q accepted", in)
		}
	}
	if got := Format(nil); got != "unknown" {
		t.Errorf("Format(nil) = %q", got)
	}
}

func TestCountCPUs(t *testing.T) {
	for in, want := range map[string]int{"": 1, "0": 1, "0-1": 2, "0,2-3": 3, "0-15,32-47": 32, "3-1": 1, "a": 1} {
		if got := countCPUs(in); got != want {
			t.Errorf("countCPUs(%q) = %d, want %d", in, got, want)
		}
	}
}

// TestRead reads a sysfs-shaped tree: instruction caches are left out,
// levels come sorted.
func TestRead(t *testing.T) {
	root := t.TempDir()
	for i, c := range [][4]string{{"3", "Unified", "16M", "0-7"}, {"1", "Data", "32K", "0"}, {"1", "Instruction", "32K", "0"}, {"2", "Unified", "512K", "0"}} {
		d := filepath.Join(root, "index"+string(rune('0'+i)))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for j, name := range []string{"level", "type", "size", "shared_cpu_list"} {
			if err := os.WriteFile(filepath.Join(d, name), []byte(c[j]+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := read(root)
	if len(got) != 3 || got[0].Bytes != 32<<10 || got[1].Bytes != 512<<10 || got[2].Bytes != 16<<20 || got[2].SharedBy != 8 {
		t.Errorf("read = %+v", got)
	}
	if read(filepath.Join(root, "absent")) != nil {
		t.Error("read of a missing directory found caches")
	}
}
