package tensor

import "fmt"

// Category tags an allocation with what it holds, so that memory can be
// reported the way a training framework's users think about it.
type Category int

// The memory categories. Their order is the order of reports.
const (
	Weights     Category = iota // parameters and buffers (running statistics)
	Gradients                   // parameter gradients
	Optimizer                   // optimizer state (momentum buffers)
	Activations                 // tensors kept for backward, and layer outputs
	Boundary                    // stage inputs and outputs a schedule keeps
	Comm                        // buffers that receive transfers
	Workspace                   // scratch memory of kernels
	NumCategories
)

var categoryNames = [NumCategories]string{
	"weights", "gradients", "optimizer", "activations", "boundary", "comm", "workspace",
}

// String returns the category's lower-case name, as records and reports use it.
func (c Category) String() string {
	if c < 0 || c >= NumCategories {
		return fmt.Sprintf("category(%d)", int(c))
	}
	return categoryNames[c]
}

// ParseCategory returns the category with the given name.
func ParseCategory(s string) (Category, error) {
	for i, n := range categoryNames {
		if n == s {
			return Category(i), nil
		}
	}
	return 0, fmt.Errorf("unknown memory category %q", s)
}

// Categories lists every category in report order.
func Categories() []Category {
	cs := make([]Category, NumCategories)
	for i := range cs {
		cs[i] = Category(i)
	}
	return cs
}
