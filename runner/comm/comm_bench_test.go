package comm_test

import (
	"context"
	"sync"
	"testing"

	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cpu"
)

const mib = 1 << 20

func BenchmarkSendRecv1MiB(b *testing.B) { benchSendRecv(b, mib) }

func BenchmarkAllToAll4x1MiB(b *testing.B) { benchAllToAll(b, 4, mib) }

func benchDevices(b *testing.B, k int) []tensor.Device {
	devs := make([]tensor.Device, k)
	for i := range devs {
		d := cpu.New(tensor.Options{Index: i, Threads: 1})
		devs[i] = d
		b.Cleanup(func() { d.Close() })
	}
	return devs
}

// benchSendRecv moves bytes from one device to another per iteration; the
// throughput is that of the receiver's copy.
func benchSendRecv(b *testing.B, bytes int) {
	devs := benchDevices(b, 2)
	tr := comm.NewInProcessTransport(2)
	defer tr.Close()
	eps := tr.Endpoints()
	ctx := context.Background()
	n := bytes / tensor.BytesPerElement
	src := devs[0].Alloc(tensor.Activations, n)
	dst := devs[1].Alloc(tensor.Comm, n)
	defer src.Release()
	defer dst.Release()
	b.SetBytes(int64(bytes))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := eps[0].Send(ctx, 1, comm.Tag{Step: i}, src); err != nil {
			b.Fatal(err)
		}
		if err := eps[1].Recv(ctx, 0, comm.Tag{Step: i}, dst); err != nil {
			b.Fatal(err)
		}
	}
}

// benchAllToAll runs an all-to-all of k ranks, each sending a piece of
// bytes to every other rank; the throughput counts the k·(k−1) pieces
// moved between devices per iteration.
func benchAllToAll(b *testing.B, k, bytes int) {
	devs := benchDevices(b, k)
	tr := comm.NewInProcessTransport(k)
	defer tr.Close()
	eps := tr.Endpoints()
	ctx := context.Background()
	n := bytes / tensor.BytesPerElement
	parts := make([][]*tensor.Tensor, k)
	dsts := make([][]*tensor.Tensor, k)
	for r := range k {
		parts[r] = make([]*tensor.Tensor, k)
		dsts[r] = make([]*tensor.Tensor, k)
		for q := range k {
			if q != r {
				parts[r][q] = devs[r].Alloc(tensor.Boundary, n)
				dsts[r][q] = devs[r].Alloc(tensor.Comm, n)
			}
		}
	}
	defer func() {
		for r := range k {
			releaseAll(parts[r])
			releaseAll(dsts[r])
		}
	}()
	b.SetBytes(int64(k * (k - 1) * bytes))
	b.ResetTimer()
	errs := make([]error, k)
	for i := 0; i < b.N; i++ {
		var wg sync.WaitGroup
		for r := range k {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[r] = eps[r].AllToAll(ctx, comm.Tag{Step: i}, parts[r], dsts[r])
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}
