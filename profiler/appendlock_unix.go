//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris

package profiler

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockAppend takes an exclusive advisory lock (flock) on f, waiting while
// an Append of another process holds it, and returns the function that
// releases it. A file system that cannot lock files (ENOLCK, EOPNOTSUPP,
// ENOSYS: some network and FUSE file systems) is appended to without the
// lock, as on systems without flock.
func lockAppend(f *os.File) (unlock func(), err error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	flock := func(how int) (err error) {
		cerr := rc.Control(func(fd uintptr) {
			for {
				if err = unix.Flock(int(fd), how); !errors.Is(err, unix.EINTR) {
					return
				}
			}
		})
		if cerr != nil {
			return cerr
		}
		return err
	}
	switch err := flock(unix.LOCK_EX); {
	case err == nil:
		return func() { flock(unix.LOCK_UN) }, nil
	case errors.Is(err, unix.ENOLCK), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
		return func() {}, nil
	default:
		return nil, &os.PathError{Op: "flock", Path: f.Name(), Err: err}
	}
}
