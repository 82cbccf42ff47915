package runner

import (
	"errors"
	"fmt"
	"os"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
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
	reason := fmt.Sprintf("panic: %v", r)
	var input *models.InputError
	if err, ok := r.(error); ok && errors.As(err, &input) {
		reason = err.Error() // an input the layer cannot take, not a bug
	}
	f := &Fault{Step: w.step.step, Device: w.d, Name: w.dev.Name(), Op: w.op, Block: w.block,
		Reason: reason, Stack: stack}
	if w.block >= 0 && w.block < len(w.t.model.Blocks) {
		f.BlockName = w.t.model.Blocks[w.block].Name
	}
	return f
}

// faultf returns a Fault of the worker's current op, for a failure found
// by a check rather than raised by a panic.
func (w *worker) faultf(format string, args ...any) *Fault {
	f := w.fault(fmt.Sprintf(format, args...), nil)
	f.Reason = fmt.Sprintf(format, args...)
	return f
}

// checkGradients fails the update with a Fault naming the first block of
// stage st (in forward order) whose accumulated gradients hold a NaN or
// an infinity, before the optimizer spreads it into the weights. The
// stage's gradients are screened together (tensor.FirstNonFiniteOf). A
// device without values (the meta backend) has nothing to check.
func (w *worker) checkGradients(st int) error {
	if tensor.IsSymbolic(w.dev) {
		return nil
	}
	type owner struct {
		layer int
		name  string
	}
	var grads []*tensor.Tensor
	var owners []owner
	for i, c := range w.stages[st].Layers {
		for _, p := range models.Params(c.Layer) {
			if g := p.Param.Grad; g != nil {
				grads = append(grads, g)
				owners = append(owners, owner{i, p.Name})
			}
		}
	}
	k, j := tensor.FirstNonFiniteOf(grads)
	if k < 0 {
		return nil
	}
	v := tensor.ToHost(grads[k])[j] // a copy only on the way to a fault
	w.block = w.t.bounds[st] + owners[k].layer
	return w.faultf("non-finite gradient %v in %s (element %d): the training diverged (a smaller --lr may help)", v, owners[k].name, j)
}

// opError returns the error of op as runStep reports it: a Fault as it
// is (it names its place), anything else prefixed with the device and op.
func (w *worker) opError(op schedule.Op, err error) error {
	var f *Fault
	if errors.As(err, &f) {
		return err
	}
	return fmt.Errorf("%s: %v: %w", w.dev.Name(), op, err)
}
