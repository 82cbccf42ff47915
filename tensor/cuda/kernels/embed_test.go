package kernels

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"testing"
)

// fatbinMagic opens a fatbin container, as a little-endian word (bytes 50
// ed 55 ba).
const fatbinMagic = 0xba55ed50

// fatbinEntry is one image in a fatbin: an ELF cubin (kind 2) or PTX
// (kind 1) for an architecture.
type fatbinEntry struct {
	kind, arch int
	compressed bool
	payload    []byte
}

// parseFatbin splits a fatbin into its images. The layout, which NVIDIA
// does not document, is that of fatbinary_section.h's readers: a 16-byte
// header (magic, version, header size, payload size), then entries each
// with a header giving its kind (offset 0), header size (4), payload size
// (8), flags (40, bit 0x2000: compressed) and SM version (28).
func parseFatbin(t *testing.T, b []byte) []fatbinEntry {
	t.Helper()
	if len(b) < 16 || binary.LittleEndian.Uint32(b) != fatbinMagic {
		t.Fatalf("kernels.fatbin: %d bytes without the fatbin magic %#x: run scripts/cuda-kernels.sh build", len(b), fatbinMagic)
	}
	hsz := int(binary.LittleEndian.Uint16(b[6:]))
	end := hsz + int(binary.LittleEndian.Uint64(b[8:]))
	if end > len(b) {
		t.Fatalf("kernels.fatbin: header claims %d bytes, file has %d", end, len(b))
	}
	var es []fatbinEntry
	for off := hsz; off < end; {
		if off+48 > end {
			t.Fatalf("kernels.fatbin: truncated entry at %d", off)
		}
		e := b[off:]
		ehsz := int(binary.LittleEndian.Uint32(e[4:]))
		psz := int(binary.LittleEndian.Uint64(e[8:]))
		if ehsz < 48 || off+ehsz+psz > end {
			t.Fatalf("kernels.fatbin: entry at %d: header %d, payload %d bytes", off, ehsz, psz)
		}
		es = append(es, fatbinEntry{
			kind:       int(binary.LittleEndian.Uint16(e)),
			arch:       int(binary.LittleEndian.Uint32(e[28:])),
			compressed: binary.LittleEndian.Uint64(e[40:])&0x2000 != 0,
			payload:    e[ehsz : ehsz+psz],
		})
		off += ehsz + psz
	}
	return es
}

// TestFatbinHoldsEveryKernel checks that the embedded fatbin has SASS for
// sm_80 and sm_90 and PTX for compute_90, and that each cubin defines
// every kernel kernels.h declares (an ELF symbol's name is in clear in the
// cubin's string table), so that a fatbin older than the header fails here
// rather than at cuModuleGetFunction.
func TestFatbinHoldsEveryKernel(t *testing.T) {
	names := regexp.MustCompile(`(?m)^__global__ void (pc_\w+)\(`).FindAllStringSubmatch(Header, -1)
	if len(names) == 0 {
		t.Fatal("kernels.h declares no kernels")
	}
	have := map[[2]int]bool{}
	for _, e := range parseFatbin(t, Fatbin) {
		have[[2]int{e.kind, e.arch}] = true
		if e.kind != 2 {
			continue
		}
		if e.compressed || !bytes.HasPrefix(e.payload, []byte("\x7fELF")) {
			t.Errorf("sm_%d cubin: not a plain ELF image (compressed: %v)", e.arch, e.compressed)
			continue
		}
		for _, n := range names {
			if !bytes.Contains(e.payload, []byte("\x00"+n[1]+"\x00")) {
				t.Errorf("sm_%d cubin lacks kernel %s: run scripts/cuda-kernels.sh build", e.arch, n[1])
			}
		}
	}
	for _, want := range []struct{ kind, arch int }{{2, 80}, {2, 90}, {1, 90}} {
		if !have[[2]int{want.kind, want.arch}] {
			what := map[int]string{1: "PTX", 2: "SASS"}[want.kind]
			t.Errorf("kernels.fatbin has no %s for architecture %d", what, want.arch)
		}
	}
}

// TestFatbinIsCurrent checks that kernels.fatbin was built from the
// sources as they are: scripts/cuda-kernels.sh build records the SHA-256
// of kernels.h and of every .cu file in kernels.fatbin.sources, and an
// edit to any of them, or a new or removed file, leaves that record
// stale until the fatbin is rebuilt. (A rebuilt fatbin that is not
// committed with the record shows as the record's change in review.)
func TestFatbinIsCurrent(t *testing.T) {
	const stale = "kernels.fatbin is stale: run bash scripts/cuda-kernels.sh build"
	cu, err := filepath.Glob("*.cu")
	if err != nil || len(cu) == 0 {
		t.Fatalf("no .cu files here (%v)", err)
	}
	names := append(cu, "kernels.h")
	sort.Strings(names) // byte order, as the script's LC_ALL=C sort
	var want bytes.Buffer
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&want, "%x  %s\n", sha256.Sum256(b), n)
	}
	got, err := os.ReadFile("kernels.fatbin.sources")
	if err != nil {
		t.Fatalf("%s (%v)", stale, err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("%s\nkernels.fatbin.sources:\n%s\nthe sources now:\n%s", stale, got, want.Bytes())
	}
}
