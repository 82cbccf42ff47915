package runner

import (
	"fmt"
	"os"

	"github.com/pipecast/pipecast/runner/schedule"
)

// debugEnv names the environment variable that adds the goroutine's
// stack to a fault's message (PIPECAST_DEBUG=1).
const debugEnv = "PIPECAST_DEBUG"

// Fault is a failure inside a run's kernels or layers (a panic, which
// the layers raise for inputs they cannot take): the step, device, stage
// and block it happened in, and what went wrong, in one line. Stack is
// the goroutine's stack, which Error adds only with PIPECAST_DEBUG=1.
type Fault struct {
	Step   int
	Device int
	// Name is the device's name ("cpu:1"); Op the program's op.
	Name string
	Op   schedule.Op
	// Block is the global index of the block and BlockName its name, or
	// −1 and "" when the op did not run block by block.
	Block     int
	BlockName string
	Reason    string
	Stack     []byte
}

func (f *Fault) Error() string {
	where := fmt.Sprintf("step %d, device %d (%s), stage %d, %v", f.Step, f.Device, f.Name, f.Op.Stage, f.Op)
	if f.Op.Stage == schedule.None {
		where = fmt.Sprintf("step %d, device %d (%s), %v", f.Step, f.Device, f.Name, f.Op)
	}
	if f.Block >= 0 {
		where += fmt.Sprintf(", block %d (%s)", f.Block+1, f.BlockName)
	}
	msg := where + ": " + f.Reason
	if os.Getenv(debugEnv) == "1" {
		msg += "\n" + string(f.Stack)
	}
	return msg
}

// fault turns a panic of the worker's current op into a Fault.
func (w *worker) fault(r any, stack []byte) *Fault {
	f := &Fault{Step: w.step.step, Device: w.k, Name: w.dev.Name(), Op: w.op, Block: w.block,
		Reason: fmt.Sprintf("panic: %v", r), Stack: stack}
	if w.block >= 0 && w.block < len(w.t.model.Blocks) {
		f.BlockName = w.t.model.Blocks[w.block].Name
	}
	return f
}
