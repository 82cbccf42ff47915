package profiler

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseCPUModel(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{name: "x86", in: "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\nmodel name\t: other\n", want: "Intel(R) Xeon(R) CPU @ 2.20GHz"},
		{name: "no model", in: "processor\t: 0\nBogoMIPS\t: 50.00\n", want: ""},
		{name: "empty", in: "", want: ""},
	} {
		if got := parseCPUModel([]byte(tc.in)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// FuzzParseCPUModel checks parseCPUModel on any text: the model it finds
// is trimmed, on one line, and in the text; and a "model name" line put
// first in any text is found again, trimmed.
func FuzzParseCPUModel(f *testing.F) {
	for _, seed := range []struct{ cpuinfo, name string }{
		{"processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\nmodel name\t: Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz\nstepping\t: 4\nflags\t\t: fpu vme de pse tsc msr\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz\n", "AMD EPYC 7B13 64-Core Processor"},
		{"processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n", "Neoverse-N1"},
		{"processor\t: 0\ncpu\t\t: POWER9 (architected), altivec supported\nclock\t\t: 2300.000000MHz\n", ""},
		{"model name\t:\n", "  "},
		{"model name:a:b\r\n", "x: y\r"},
		{"model name", "\t spaced \t"},
		{"", "\xff\xfe"},
	} {
		f.Add([]byte(seed.cpuinfo), seed.name)
	}
	f.Fuzz(func(t *testing.T, cpuinfo []byte, name string) {
		got := parseCPUModel(cpuinfo)
		if got != strings.TrimSpace(got) || strings.Contains(got, "\n") || !bytes.Contains(cpuinfo, []byte(got)) {
			t.Fatalf("parseCPUModel(%q) = %q: not trimmed, not one line, or not in the text", cpuinfo, got)
		}
		// A line longer than bufio.Scanner's 64 KiB stops the parser;
		// cpuinfo lines are far shorter.
		if strings.Contains(name, "\n") || len(name) > 4096 {
			return
		}
		text := append([]byte("processor\t: 0\nmodel name\t: "+name+"\n"), cpuinfo...)
		if got, want := parseCPUModel(text), strings.TrimSpace(name); got != want {
			t.Fatalf("parseCPUModel(%q) = %q, want %q", text, got, want)
		}
	})
}
