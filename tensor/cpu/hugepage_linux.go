package cpu

import (
	"bytes"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Tensor memory asks Linux for transparent huge pages. Most distributions
// set transparent_hugepage to "madvise", and the Go runtime does not advise
// its heap, so by default every tensor sits on 4 KiB pages: a training
// step that walks tens of MiB of weights and activations misses the TLB on
// almost every page it enters. That cost grows with what a core touches
// between two visits of a page, so it made the same block run 5–10 %
// slower on a device that holds a whole model than on one that holds half
// of it (each core has its own TLB), which no single-device record could
// show. With 2 MiB pages a TLB entry covers 512 times more memory and a
// block's time hardly depends on what else its device holds.
//
// Each fresh allocation advises the huge pages its memory overlaps before
// anything writes to it (the runtime maps the heap in as it grows, and a
// new mapping drops advice given to its range before) and collapses them:
// the heap's small objects share those huge pages and have touched them on
// small pages already, which the kernel would otherwise collapse only in
// its own time, minutes later. The caching allocator hands the same memory
// out again, so this is two system calls per fresh buffer, almost all of
// them in a run's first step.

// hugePagesEnv names the environment variable that turns huge pages off
// ("off"), to measure what they are worth.
const hugePagesEnv = "PIPECAST_CPU_HUGEPAGES"

// hugePage is the transparent huge page size of x86-64, and of arm64 with
// 4 KiB base pages.
const hugePage = 2 << 20

// hugePagesState is what the devices do with huge pages (see
// Device.HugePages): "advised", "off" (turned off by hugePagesEnv) or
// "unavailable" (the kernel has no transparent huge pages, or has them
// set to "never", which a collapse would ignore).
var hugePagesState = sync.OnceValue(func() string {
	if os.Getenv(hugePagesEnv) == "off" {
		return "off"
	}
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !thpUsable(mode) {
		return "unavailable"
	}
	return "advised"
})

// thpUsable reports whether /sys/kernel/mm/transparent_hugepage/enabled
// (the modes with the selected one in brackets: "always [madvise]
// never") lets advised memory have huge pages: the selected mode is
// "always" or "madvise".
func thpUsable(mode []byte) bool {
	open := bytes.IndexByte(mode, '[')
	if open < 0 {
		return false
	}
	end := bytes.IndexByte(mode[open:], ']')
	if end < 0 {
		return false
	}
	sel := string(mode[open+1 : open+end])
	return sel == "always" || sel == "madvise"
}

// hugePagesOn reports whether to advise.
func hugePagesOn() bool { return hugePagesState() == "advised" }

// adviseHugePages advises and collapses the huge pages b's memory overlaps.
// Errors are ignored: the advice is best effort, and memory the kernel
// cannot back with huge pages stays as it was.
func adviseHugePages(b []float32) {
	if len(b) == 0 || !hugePagesOn() {
		return
	}
	start := uintptr(unsafe.Pointer(&b[0]))
	end := start + uintptr(len(b))*4
	start &^= hugePage - 1
	end = (end + hugePage - 1) &^ (hugePage - 1)
	// Parts of the range that are not mapped make madvise fail with
	// ENOMEM after it has advised the mapped ones.
	_, _, _ = unix.Syscall(unix.SYS_MADVISE, start, end-start, unix.MADV_HUGEPAGE)
	_, _, _ = unix.Syscall(unix.SYS_MADVISE, start, end-start, unix.MADV_COLLAPSE)
}
