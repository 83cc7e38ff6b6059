package reporter

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
)

// OutputRejectedError says that the search output broke the output contract (a file over its
// cap, a symbolic link, something that is not a regular file). The reporter publishes nothing
// and exits with jobcontract.ReporterExitOutputRejected, which the Run controller turns into the
// terminal reason OutputRejected.
type OutputRejectedError struct {
	// File is the offending file, relative to the output directory.
	File string
	// Problem says what is wrong with it.
	Problem string
}

func (e *OutputRejectedError) Error() string {
	return fmt.Sprintf("search output rejected: %s %s; nothing was published", e.File, e.Problem)
}

// ExitCode is the reporter's exit code for this error.
func (e *OutputRejectedError) ExitCode() int { return jobcontract.ReporterExitOutputRejected }

// IsOutputRejected tells whether err is (or wraps) an OutputRejectedError.
func IsOutputRejected(err error) bool {
	var re *OutputRejectedError
	return errors.As(err, &re)
}

// mib renders a cap for messages.
func mib(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// rel names path relative to the output directory in messages.
func (r *Reporter) rel(path string) string {
	if rel, err := filepath.Rel(r.OutputDir, path); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return path
}

// checkDir refuses a directory of the output that is a symbolic link or not a directory (the
// search could point it anywhere on the reporter's file system). A missing directory is
// reported as os.ErrNotExist.
func checkDir(path, name string) error {
	st, err := os.Lstat(path)
	if err != nil {
		return err
	}
	switch {
	case st.Mode()&os.ModeSymlink != 0:
		return &OutputRejectedError{File: name, Problem: "is a symbolic link (refused)"}
	case !st.IsDir():
		return &OutputRejectedError{File: name, Problem: fmt.Sprintf("is not a directory (mode %s)", st.Mode())}
	}
	return nil
}

// openRegular opens a file of the output without following a symbolic link in its last
// component (O_NOFOLLOW) and without blocking on a FIFO (O_NONBLOCK), and refuses anything the
// open file's fstat does not show as a regular file (devices such as /dev/zero, FIFOs, sockets,
// directories). A missing file is reported as os.ErrNotExist.
func openRegular(path, name string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, openError(err, name)
	}
	return checkRegular(f, name)
}

// openRegularAt opens dir/sub/file as openRegular opens a file, where sub must be a real
// directory: sub is opened relative to dir and file relative to sub, each with O_NOFOLLOW (and
// sub with O_DIRECTORY), so neither can be a symbolic link, nor be swapped for one between a check
// and the open. name is the file in messages; a missing sub or file is reported as
// os.ErrNotExist.
func openRegularAt(dir *os.File, sub, file, name string) (*os.File, os.FileInfo, error) {
	dfd, err := unix.Openat(int(dir.Fd()), sub, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		subName := path.Dir(name)
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			// Linux says ENOTDIR for a link with O_DIRECTORY; lstat tells which (refused either way).
			var st unix.Stat_t
			if unix.Fstatat(int(dir.Fd()), sub, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return nil, nil, &OutputRejectedError{File: subName, Problem: "is a symbolic link (refused)"}
			}
			return nil, nil, &OutputRejectedError{File: subName, Problem: "is not a directory"}
		}
		return nil, nil, &os.PathError{Op: "openat", Path: subName, Err: err}
	}
	defer unix.Close(dfd)
	fd, err := unix.Openat(dfd, file, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, openError(&os.PathError{Op: "openat", Path: name, Err: err}, name)
	}
	return checkRegular(os.NewFile(uintptr(fd), name), name)
}

// openError maps the error of an O_NOFOLLOW|O_NONBLOCK open to an OutputRejectedError when the
// file is a symbolic link or cannot be a regular file.
func openError(err error, name string) error {
	if errors.Is(err, syscall.ELOOP) {
		return &OutputRejectedError{File: name, Problem: "is a symbolic link (refused)"}
	}
	if errors.Is(err, syscall.ENXIO) || errors.Is(err, syscall.EOPNOTSUPP) {
		return &OutputRejectedError{File: name, Problem: "is not a regular file"}
	}
	return err
}

// checkRegular refuses (and closes) an open file that fstat does not show as a regular file.
func checkRegular(f *os.File, name string) (*os.File, os.FileInfo, error) {
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		_ = f.Close()
		return nil, nil, &OutputRejectedError{File: name, Problem: fmt.Sprintf("is not a regular file (mode %s)", st.Mode())}
	}
	return f, st, nil
}

// readCapped reads a regular file of the output whole, refusing it when it is larger than limit:
// first by its size, then through io.LimitReader(limit+1), so a file that grows while it is read
// is never read past the cap either.
func readCapped(path, name string, limit int64) ([]byte, error) {
	f, st, err := openRegular(path, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooLarge := func(size int64) error {
		return &OutputRejectedError{File: name, Problem: fmt.Sprintf("is %d bytes, over the reporter's cap of %s", size, mib(limit))}
	}
	if st.Size() > limit {
		return nil, tooLarge(st.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &OutputRejectedError{File: name, Problem: fmt.Sprintf("grew over the reporter's cap of %s while it was read", mib(limit))}
	}
	return data, nil
}
