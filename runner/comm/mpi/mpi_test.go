//go:build mpi

package mpi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/runner/comm/commtest"
	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cpu"
)

// The tests run in two roles. Started by go test, the binary is the
// launcher: TestMPI runs it again under mpirun with 2 and 3 processes.
// Started by mpirun (OMPI_COMM_WORLD_SIZE is set), every process is one
// rank: TestMain initialises MPI, and the TestRanks tests run the same
// code on every rank, in the same order.

// world is this process's MPI world when it runs as a rank.
var world comm.World

// underMPIRun reports whether mpirun started this process.
func underMPIRun() bool { return os.Getenv("OMPI_COMM_WORLD_SIZE") != "" }

func TestMain(m *testing.M) {
	if !underMPIRun() {
		os.Exit(m.Run())
	}
	w, err := Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	world = w
	code := m.Run()
	if err := w.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// rankTimeout bounds one launch of the rank tests.
const rankTimeout = 4 * time.Minute

// TestMPI runs this test binary's TestRanks tests under mpirun, with 2
// and 3 processes, and fails with mpirun's output if any rank fails.
func TestMPI(t *testing.T) {
	if underMPIRun() {
		t.Skip("the launcher does not run under mpirun")
	}
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skipf("mpirun not on PATH (Open MPI's openmpi-bin runs these tests): %v", err)
	}
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("np=%d", n), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), rankTimeout+30*time.Second)
			defer cancel()
			args := []string{"--allow-run-as-root", "--oversubscribe", "-np", fmt.Sprint(n), "--tag-output",
				os.Args[0], "-test.run=^TestRanks", "-test.count=1", "-test.timeout=" + rankTimeout.String()}
			if testing.Verbose() {
				args = append(args, "-test.v")
			}
			if testing.Short() {
				args = append(args, "-test.short")
			}
			out, err := exec.CommandContext(ctx, mpirun, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("mpirun %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			if testing.Verbose() {
				t.Logf("mpirun -np %d:\n%s", n, out)
			}
		})
	}
}

// needRanks skips a test that is not running as a rank.
func needRanks(t *testing.T) {
	t.Helper()
	if !underMPIRun() {
		t.Skip("runs as a rank under mpirun, which TestMPI starts")
	}
}

// testContext returns a context that ends after commtest.Timeout.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), commtest.Timeout)
	t.Cleanup(cancel)
	return ctx
}

// newDevice opens a CPU device of one thread, closed at the end.
func newDevice(t *testing.T) tensor.Device {
	d := cpu.New(tensor.Options{Threads: 1})
	t.Cleanup(func() { d.Close() })
	return d
}

// TestRanksSuite runs the transport suite with each test on a fresh
// group of the whole world.
func TestRanksSuite(t *testing.T) {
	needRanks(t)
	commtest.Run(t, func(t *testing.T, body func(*commtest.Rank)) {
		g, err := world.Split(testContext(t), world.Size())
		if err != nil {
			t.Fatal(err)
		}
		dev := newDevice(t)
		commtest.NewRank(t, g, dev).Do(body)
		if err := g.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if got := dev.Memory().LiveTotalBytes; got != 0 {
			t.Errorf("%d bytes live after close, want 0", got)
		}
	})
}

// TestRanksSplit splits the world's first n ranks off, for every n:
// those ranks get a group of n ranks in which they keep their ranks, and
// the group works; the others get nil.
func TestRanksSplit(t *testing.T) {
	needRanks(t)
	ctx := testContext(t)
	me := world.Rank()
	for n := 1; n <= world.Size(); n++ {
		g, err := world.Split(ctx, n)
		if err != nil {
			t.Fatalf("split %d: %v", n, err)
		}
		if me >= n {
			if g != nil {
				t.Errorf("split %d: rank %d got a group of %d ranks, want none", n, me, g.Size())
			}
			continue
		}
		if g == nil {
			t.Fatalf("split %d: rank %d got no group", n, me)
		}
		if g.Rank() != me || g.Size() != n {
			t.Errorf("split %d: got rank %d of %d, want %d of %d", n, g.Rank(), g.Size(), me, n)
		}
		// A run given only the group records the transport from it.
		about, ok := g.(interface {
			Library() string
			Host() string
		})
		if !ok || about.Library() != world.Library() || about.Host() != world.Host() {
			t.Errorf("split %d: the group does not say the world's library and host", n)
		}
		if err := g.Barrier(ctx); err != nil {
			t.Errorf("split %d: barrier: %v", n, err)
		}
		all, err := g.Gather(ctx, 0, []byte{byte(me)})
		if err != nil {
			t.Errorf("split %d: gather: %v", n, err)
		}
		if me == 0 && len(all) != n {
			t.Errorf("split %d: gathered %d pieces, want %d", n, len(all), n)
		}
		b, err := g.Broadcast(ctx, n-1, []byte(fmt.Sprint("from ", me)))
		if want := fmt.Sprint("from ", n-1); err != nil || string(b) != want {
			t.Errorf("split %d: broadcast: got %q, %v, want %q", n, b, err, want)
		}
		if err := g.Close(); err != nil {
			t.Errorf("split %d: close: %v", n, err)
		}
	}
	// The world still works after its groups have gone.
	if err := world.Barrier(ctx); err != nil {
		t.Error(err)
	}
}

// TestRanksWorld checks what the world says about the job and refuses.
func TestRanksWorld(t *testing.T) {
	needRanks(t)
	ctx := testContext(t)
	if lib := world.Library(); !strings.Contains(lib, "MPI") || strings.Contains(lib, "\n") {
		t.Errorf("library %q: want one line naming MPI", lib)
	}
	if world.Host() == "" {
		t.Error("empty host name")
	}
	if got := os.Getenv("OMPI_COMM_WORLD_RANK"); got != fmt.Sprint(world.Rank()) {
		t.Errorf("rank %d, mpirun says %s", world.Rank(), got)
	}
	for _, n := range []int{0, world.Size() + 1} {
		if g, err := world.Split(ctx, n); err == nil || g != nil {
			t.Errorf("split %d of %d: got %v, %v, want an error", n, world.Size(), g, err)
		}
	}
	if w, err := Init(); err == nil || w != nil {
		t.Errorf("second Init: got %v, %v, want an error", w, err)
	}
}

// TestRanksErrorsReturn makes the library fail calls: they return errors
// carrying MPI_Error_string's text, and the process goes on.
func TestRanksErrorsReturn(t *testing.T) {
	needRanks(t)
	ctx := testContext(t)
	g, err := world.Split(ctx, world.Size())
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	mg := g.(*group)
	tests := []struct {
		name string
		call func() error
		want string // in the error's text
	}{
		{name: "broadcast from a root out of range", call: func() error {
			_, err := g.Broadcast(ctx, g.Size()+2, []byte("x"))
			return err
		}, want: "MPI_Ibcast: MPI_ERR_ROOT"},
		{name: "gather to a root out of range", call: func() error {
			_, err := g.Gather(ctx, -3, []byte("x"))
			return err
		}, want: "MPI_Igather: MPI_ERR_ROOT"},
		{name: "isend to a rank out of range", call: func() error {
			var q requests
			return mg.data.isend(&q, nil, 0, floats, g.Size()+5, 0)
		}, want: "MPI_Isend: MPI_ERR_RANK"},
		{name: "isend under a negative tag", call: func() error {
			var q requests
			return mg.ctl.isend(&q, nil, 0, bytes, 0, -7)
		}, want: "MPI_Isend: MPI_ERR_TAG"},
	}
	for _, tt := range tests {
		err := tt.call()
		var me *Error
		if !errors.As(err, &me) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want an *Error containing %q", tt.name, err, tt.want)
		}
	}
	if err := g.Barrier(ctx); err != nil {
		t.Errorf("barrier after the errors: %v", err)
	}
}

// TestRanksClosed checks calls after Close.
func TestRanksClosed(t *testing.T) {
	needRanks(t)
	ctx := testContext(t)
	g, err := world.Split(ctx, world.Size())
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	dev := newDevice(t)
	src := dev.Alloc(tensor.Activations, 4)
	defer src.Release()
	if err := g.Send(ctx, 0, comm.Tag{}, src); !errors.Is(err, comm.ErrClosed) {
		t.Errorf("send after close: got %v, want %v", err, comm.ErrClosed)
	}
	if err := g.Barrier(ctx); !errors.Is(err, comm.ErrClosed) {
		t.Errorf("barrier after close: got %v, want %v", err, comm.ErrClosed)
	}
	if err := g.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}

// TestRanksGoPanics checks that MPI left Go's own signal handling alone:
// a nil dereference is still a panic that recover catches.
func TestRanksGoPanics(t *testing.T) {
	needRanks(t)
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	var p *int
	_ = *p
}

// TestRanksSplitByAndAllReduce splits the world by the parity of its
// ranks, keyed in reverse, and sums a tensor over each group with
// AllReduceSum: every rank ends with its group's elementwise sum, the same
// values on each, the group ranked by key; an odd rank with colour −1
// when the world has three ranks joins none.
func TestRanksSplitByAndAllReduce(t *testing.T) {
	needRanks(t)
	ctx := testContext(t)
	me, n := world.Rank(), world.Size()
	color := me % 2
	if n == 3 && me == 1 {
		color = -1
	}
	s, ok := world.(comm.Splitter)
	if !ok {
		t.Fatal("the MPI world does not split by colour")
	}
	g, err := s.SplitBy(ctx, color, n-me)
	if err != nil {
		t.Fatal(err)
	}
	var members []int
	for r := n - 1; r >= 0; r-- { // by key: n − rank, increasing
		if c := r % 2; c == color && !(n == 3 && r == 1) {
			members = append(members, r)
		}
	}
	if color < 0 {
		if g != nil {
			t.Fatalf("rank %d of colour −1 got a group of %d", me, g.Size())
		}
		return
	}
	if g == nil || g.Size() != len(members) || members[g.Rank()] != me {
		t.Fatalf("rank %d: group %v, want rank %d of %v", me, g, slices.Index(members, me), members)
	}
	defer g.Close()
	dev := cpu.New(tensor.Options{Index: me, Threads: 1})
	defer dev.Close()
	const size = 1000
	x := make([]float32, size)
	want := make([]float32, size)
	for i := range x {
		x[i] = float32(me*size + i)
		for _, r := range members {
			want[i] += float32(r*size + i)
		}
	}
	tn := tensor.FromHost(dev, tensor.Gradients, tensor.Shape{size}, x)
	defer tn.Release()
	before := g.Stats()
	if err := g.(comm.Reducer).AllReduceSum(ctx, comm.Tag{Kind: "test-sum"}, tn); err != nil {
		t.Fatal(err)
	}
	got := tensor.ToHost(tn)
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("rank %d: element %d is %v, want %v", me, i, got[i], want[i])
		}
	}
	if k := int64(len(members)); k > 1 {
		if moved := g.Stats().ReceivedBytes - before.ReceivedBytes; moved != 2*(k-1)*size*4/k {
			t.Errorf("rank %d: %d bytes received, want 2(k−1)/k of %d", me, moved, size*4)
		}
	}
}
