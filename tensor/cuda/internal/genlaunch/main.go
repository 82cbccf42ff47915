// Command genlaunch reads the kernel prototypes of tensor/cuda's
// kernels/kernels.h and writes what launches them: kernels_gen.go (the
// Kernel constants, their names and parameters, and a typed launch method
// of Device for each) and emu/dispatch_gen.h (the emulator's call of each
// kernel from cuLaunchKernel-style arguments). One header is the contract;
// both sides are generated from it, so they cannot drift apart.
//
// Run it from tensor/cuda: go generate ./tensor/cuda.
package main

import (
	"bytes"
	"fmt"
	"go/format"
	"log"
	"os"

	"github.com/pipecast/pipecast/tensor/cuda/internal/abi"
)

func main() {
	src, err := os.ReadFile("kernels/kernels.h")
	if err != nil {
		log.Fatal(err)
	}
	ks, err := abi.Parse(src)
	if err != nil {
		log.Fatal(err)
	}
	goSrc, err := format.Source(abi.GoSource(ks))
	if err != nil {
		log.Fatal(err)
	}
	write("kernels_gen.go", goSrc)
	write("emu/dispatch_gen.h", abi.CSource(ks))
}

func write(path string, b []byte) {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, b) {
		return
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Println("wrote", path)
}
