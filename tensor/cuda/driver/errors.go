//go:build cuda

package driver

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>
*/
import "C"

import (
	"fmt"
	"reflect"
)

// cudaError is a failed CUDA driver call: the call, and the driver's own
// name and text for the status (cuGetErrorName, cuGetErrorString).
// It unwraps to gorgonia.org/cu's error value (errors.Is(err,
// cu.OutOfMemory) holds).
type cudaError struct {
	call, name, text string
	err              error
}

func (e *cudaError) Error() string {
	return fmt.Sprintf("%s: %s (%s)", e.call, e.text, e.name)
}

func (e *cudaError) Unwrap() error { return e.err }

// cuError names the call that returned err, an error of gorgonia.org/cu
// or nil. cu's errors are its unexported integer type of CUresult codes;
// their own text is only the enumerator's name in Go, so the driver is
// asked for its description.
func cuError(call string, err error) error {
	if err == nil {
		return nil
	}
	if v := reflect.ValueOf(err); v.Kind() == reflect.Int {
		code := C.CUresult(v.Int())
		var name, text *C.char
		if C.cuGetErrorName(code, &name) == C.CUDA_SUCCESS && C.cuGetErrorString(code, &text) == C.CUDA_SUCCESS {
			return &cudaError{call: call, name: C.GoString(name), text: C.GoString(text), err: err}
		}
	}
	return fmt.Errorf("%s: %w", call, err)
}
