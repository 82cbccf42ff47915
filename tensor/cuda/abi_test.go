package cuda

import (
	"bytes"
	"go/format"
	"os"
	"testing"

	"github.com/pipecast/pipecast/tensor/cuda/internal/abi"
)

// TestGeneratedLaunchersMatchTheHeader checks that kernels_gen.go and
// emu/dispatch_gen.h are what genlaunch makes of kernels/kernels.h now:
// the Go that launches the kernels and the header that declares them
// agree on every name and parameter.
func TestGeneratedLaunchersMatchTheHeader(t *testing.T) {
	h, err := os.ReadFile("kernels/kernels.h")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := abi.Parse(h)
	if err != nil {
		t.Fatal(err)
	}
	goSrc, err := format.Source(abi.GoSource(ks))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string][]byte{"kernels_gen.go": goSrc, "emu/dispatch_gen.h": abi.CSource(ks)} {
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go generate ./tensor/cuda", path)
		}
	}
	if len(kernelNames) != len(ks) {
		t.Errorf("%d kernel names compiled in, the header declares %d", len(kernelNames), len(ks))
	}
}
