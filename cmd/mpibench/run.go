//go:build mpi

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"

	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/runner/comm/mpi"
	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cpu"
)

type options struct {
	maxBytes   int64
	rounds     int
	cpuProfile string
}

// sizes are the message sizes measured, as in scripts/pingpong.c.
var sizes = []int64{8, 64, 512, 4 << 10, 32 << 10, 256 << 10, 1 << 20, 4 << 20}

// rounds returns how many round trips to time at a size: many for small
// messages, fewer for large ones, about the same total time (as
// scripts/pingpong.c).
func rounds(bytes int64) int {
	return int(min(max((64<<20)/bytes, 200), 20000))
}

// run measures every size up to o.maxBytes; rank 0 writes the results.
func run(o options, out io.Writer) (err error) {
	w, err := mpi.Init()
	if err != nil {
		return err
	}
	defer func() {
		if ferr := w.Finalize(); err == nil {
			err = ferr
		}
	}()
	if w.Size() != 2 {
		return fmt.Errorf("needs exactly 2 ranks, got %d", w.Size())
	}
	if o.cpuProfile != "" && w.Rank() == 0 {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	dev := cpu.New(tensor.Options{Index: w.Rank(), Threads: 1})
	defer dev.Close()
	ctx := context.Background()
	for _, bytes := range sizes {
		if bytes > o.maxBytes {
			break
		}
		n := o.rounds
		if n <= 0 {
			n = rounds(bytes)
		}
		oneWay, err := pingPong(ctx, w, dev, bytes, n)
		if err != nil {
			return fmt.Errorf("%d bytes: %w", bytes, err)
		}
		if w.Rank() == 0 {
			fmt.Fprintf(out, "%d %.3f %.1f\n", bytes, oneWay*1e6, float64(bytes)/oneWay/1e6)
		}
	}
	return nil
}

// pingPong returns half the median of n round trips of a tensor of
// bytes between the two ranks, in seconds.
func pingPong(ctx context.Context, g comm.Group, dev tensor.Device, bytes int64, n int) (float64, error) {
	if bytes%tensor.BytesPerElement != 0 {
		return 0, errors.New("not whole float32 elements")
	}
	buf := dev.Alloc(tensor.Comm, int(bytes/tensor.BytesPerElement))
	defer buf.Release()
	me, peer := g.Rank(), 1-g.Rank()
	trip := func(i int) error {
		there := comm.Tag{Step: i, Kind: "activation", Stage: 0, Micro: int(bytes)}
		back := comm.Tag{Step: i, Kind: "activation", Stage: 1, Micro: int(bytes)}
		if me == 0 {
			if err := g.Send(ctx, peer, there, buf); err != nil {
				return err
			}
			return g.Recv(ctx, peer, back, buf)
		}
		if err := g.Recv(ctx, peer, there, buf); err != nil {
			return err
		}
		return g.Send(ctx, peer, back, buf)
	}
	for i := range n/10 + 10 { // warm up
		if err := trip(-1 - i); err != nil {
			return 0, err
		}
	}
	if err := g.Barrier(ctx); err != nil {
		return 0, err
	}
	rtt := make([]int64, n)
	for i := range rtt {
		start := tensor.Nanotime()
		if err := trip(i); err != nil {
			return 0, err
		}
		rtt[i] = tensor.Nanotime() - start
	}
	slices.Sort(rtt)
	return float64(rtt[n/2]) / 2 / 1e9, nil
}
