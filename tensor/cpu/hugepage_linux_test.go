package cpu

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/pipecast/pipecast/tensor"
)

// TestAllocAdvisesHugePages checks that a fresh tensor's memory lies in a
// mapping advised for transparent huge pages ("hg" among its VmFlags).
func TestAllocAdvisesHugePages(t *testing.T) {
	if !hugePagesOn() {
		t.Skipf("transparent huge pages are off here (%s or the kernel)", hugePagesEnv)
	}
	d := New(tensor.Options{Threads: 1})
	defer d.Close()
	x := d.Alloc(tensor.Activations, 1<<20) // 4 MiB: fresh memory, not from the cache
	defer x.Release()
	mem := x.Storage().Mem.([]float32)
	addr := uintptr(unsafe.Pointer(&mem[0]))
	flags, ok := vmFlags(t, addr)
	if !ok {
		t.Fatalf("no mapping in /proc/self/smaps holds %#x", addr)
	}
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Errorf("mapping of %#x has VmFlags %q, want hg (advised for huge pages)", addr, flags)
	}
}

// vmFlags returns the VmFlags of the mapping of /proc/self/smaps that holds
// addr.
func vmFlags(t *testing.T, addr uintptr) (string, bool) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := mappingRange(line); ok {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmFlags:")), true
		}
	}
	return "", false
}

// mappingRange parses the address range of a mapping's header line
// ("7f00-7f80 rw-p ...").
func mappingRange(line string) (lo, hi uintptr, ok bool) {
	r, _, found := strings.Cut(line, " ")
	a, b, dash := strings.Cut(r, "-")
	if !found || !dash {
		return 0, 0, false
	}
	l, err1 := strconv.ParseUint(a, 16, 64)
	h, err2 := strconv.ParseUint(b, 16, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return uintptr(l), uintptr(h), true
}

func TestTHPUsable(t *testing.T) {
	for in, want := range map[string]bool{
		"always [madvise] never\n": true,
		"[always] madvise never\n": true,
		"always madvise [never]\n": false,
		"always madvise never\n":   false,
		"":                         false,
		"[madvise":                 false,
		"]madvise[":                false,
		"[]":                       false,
	} {
		if got := thpUsable([]byte(in)); got != want {
			t.Errorf("thpUsable(%q) = %v, want %v", in, got, want)
		}
	}
}

// FuzzTHPUsable checks that any text of
// /sys/kernel/mm/transparent_hugepage/enabled is read without a panic,
// and that it is usable only when it selects always or madvise.
func FuzzTHPUsable(f *testing.F) {
	for _, s := range []string{"always [madvise] never\n", "[always] madvise never", "always madvise [never]", "[", "[]]", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if thpUsable(b) && !strings.Contains(string(b), "[always]") && !strings.Contains(string(b), "[madvise]") {
			t.Fatalf("thpUsable(%q) with neither [always] nor [madvise] selected", b)
		}
	})
}
