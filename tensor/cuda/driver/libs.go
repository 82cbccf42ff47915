//go:build cuda

package driver

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"unsafe"
)

// A library that the driver opens at run time: where to look, and what
// became of it.
type library struct {
	name string // "cublas", "cudnn"
	env  string // the variable naming a path that overrides the search
	// sonames are tried in order after the variable's path: the newest
	// major version first, then the unversioned development link.
	sonames []string
	bind    func(lib unsafe.Pointer) *C.char

	once   sync.Once
	loaded bool   // set once, under notesMu
	path   string // what dlopen was given
	note   string // why it is not loaded, or why not from the variable's path
}

var (
	cublasLib = &library{
		name:    "cublas",
		env:     "PIPECAST_CUBLAS",
		sonames: []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"},
		bind:    func(lib unsafe.Pointer) *C.char { return C.pc_cublas_bind(lib) },
	}
	cudnnLib = &library{
		name:    "cudnn",
		env:     "PIPECAST_CUDNN",
		sonames: []string{"libcudnn.so.9", "libcudnn.so.8", "libcudnn.so"},
		bind:    func(lib unsafe.Pointer) *C.char { return C.pc_cudnn_bind(lib) },
	}
)

// load opens the library once per process, trying the path in its
// variable, then its sonames: the first candidate that dlopen opens and
// that has every function is used. It reports whether one was.
func (l *library) load() bool {
	l.once.Do(func() {
		candidates := l.sonames
		override := os.Getenv(l.env)
		if override != "" {
			candidates = append([]string{override}, candidates...)
		}
		var failures []string
		opened := false // some candidate opened, but lacked a function
		for _, name := range candidates {
			cname := C.CString(name)
			var cerr *C.char
			lib := C.pc_dlopen(cname, &cerr)
			C.free(unsafe.Pointer(cname))
			if lib == nil {
				failures = append(failures, firstLine(C.GoString(cerr)))
				continue
			}
			if missing := l.bind(lib); missing != nil {
				failures = append(failures, fmt.Sprintf("%s lacks %s", name, C.GoString(missing)))
				opened = true
				C.pc_dlclose(lib)
				continue
			}
			notesMu.Lock()
			l.loaded, l.path = true, name
			if len(failures) > 0 && override != "" {
				// The variable's library was refused: say so, since
				// another copy serves instead.
				l.note = fmt.Sprintf("%s: %s=%s refused (%s)", l.name, l.env, override, failures[0])
			}
			notesMu.Unlock()
			return
		}
		what := "not found"
		if opened {
			what = "no usable library"
		}
		note := fmt.Sprintf("%s: %s (tried %s)", l.name, what, strings.Join(failures, "; "))
		if override == "" {
			note += fmt.Sprintf("; set %s to its path", l.env)
		}
		notesMu.Lock()
		l.note = note
		notesMu.Unlock()
	})
	return l.loaded
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

var (
	// notesMu guards the libraries' loaded, path and note once set, and
	// extraNotes, which LibraryNotes reads from any goroutine.
	notesMu    sync.Mutex
	extraNotes []string // failures after loading: a handle that could not be made
)

// addNote records, once per text, why a loaded library serves no device.
func addNote(s string) {
	notesMu.Lock()
	defer notesMu.Unlock()
	for _, n := range extraNotes {
		if n == s {
			return
		}
	}
	extraNotes = append(extraNotes, s)
}

// LibraryNotes says, for run records and error messages, which file each
// loaded library came from, and why cuBLAS or cuDNN is not in use
// ("cudnn: not found (tried …)"). It is empty before the first Open.
func LibraryNotes() []string {
	notesMu.Lock()
	defer notesMu.Unlock()
	var notes []string
	for _, l := range []*library{cublasLib, cudnnLib} {
		if l.loaded {
			notes = append(notes, fmt.Sprintf("%s: loaded from %s", l.name, l.path))
		}
		if l.note != "" {
			notes = append(notes, l.note)
		}
	}
	return append(notes, extraNotes...)
}

// cublasError turns a cuBLAS status into an error naming the call. The
// names are cublasStatus_t's (cublas_api.h), the same in cuBLAS 11–13;
// cublasGetStatusString's text follows where the library has it.
func cublasError(call string, status C.int) error {
	if status == 0 {
		return nil
	}
	names := map[C.int]string{
		1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED",
		7: "CUBLAS_STATUS_INVALID_VALUE", 8: "CUBLAS_STATUS_ARCH_MISMATCH",
		11: "CUBLAS_STATUS_MAPPING_ERROR", 13: "CUBLAS_STATUS_EXECUTION_FAILED",
		14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED",
		16: "CUBLAS_STATUS_LICENSE_ERROR",
	}
	msg := fmt.Sprintf("%s: status %d", call, int(status))
	if n, ok := names[status]; ok {
		msg += " " + n
	}
	if s := C.pc_cublasGetStatusString(status); s != nil {
		msg += " (" + C.GoString(s) + ")"
	}
	return fmt.Errorf("%s", msg)
}

// cudnnError turns a cuDNN status into an error naming the call, with
// cudnnGetErrorString's text (the codes differ between cuDNN 8 and 9).
func cudnnError(call string, status C.int) error {
	if status == 0 {
		return nil
	}
	return fmt.Errorf("%s: status %d (%s)", call, int(status), C.GoString(C.pc_cudnnGetErrorString(status)))
}

// cublasVersion formats cublasGetVersion's number: major·10000 +
// minor·100 + patch (CUBLAS_VERSION in cublas_api.h).
func cublasVersion(v int) string {
	return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
}

// cudnnVersion formats cudnnGetVersion's number: major·10000 + minor·100
// + patch from cuDNN 9 on, major·1000 + minor·100 + patch before
// (CUDNN_VERSION in cudnn_version.h).
func cudnnVersion(v int) string {
	if v >= 90000 {
		return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
	}
	return fmt.Sprintf("%d.%d.%d", v/1000, v/100%10, v%100)
}
