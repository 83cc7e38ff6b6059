// Package searchoutput reads the search container's output as untrusted: the search may write
// anything into its output directory, so every file is opened without following a symbolic link
// (for it or its directory), only as a regular file, and read whole only up to its cap
// (caps.go). A file that breaks these rules is a RejectedError, and nothing is published.
package searchoutput

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

// RejectedError says that the search output broke the output contract (a file over its
// cap, a symbolic link, something that is not a regular file). The reporter publishes nothing
// and exits with jobcontract.ReporterExitOutputRejected, which the Run controller turns into the
// terminal reason OutputRejected.
type RejectedError struct {
	// File is the offending file, relative to the output directory.
	File string
	// Problem says what is wrong with it.
	Problem string
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("search output rejected: %s %s; nothing was published", e.File, e.Problem)
}

// ExitCode is the reporter's exit code for this error.
func (e *RejectedError) ExitCode() int { return jobcontract.ReporterExitOutputRejected }

// IsRejected tells whether err is (or wraps) a RejectedError.
func IsRejected(err error) bool {
	var re *RejectedError
	return errors.As(err, &re)
}

// FormatCap renders a cap for messages ("32 MiB").
func FormatCap(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Rel names path relative to the output directory dir in messages.
func Rel(dir, path string) string {
	if rel, err := filepath.Rel(dir, path); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return path
}

// openDir opens a directory of the output without following a symbolic link (O_NOFOLLOW,
// O_DIRECTORY): the files under it are then opened relative to the returned descriptor
// (openRegularIn), so the directory that was checked is the one read, even if the search swaps
// its path for a symbolic link meanwhile. A symbolic link or a non-directory is refused; a missing
// directory is reported as os.ErrNotExist.
func openDir(path, name string) (*os.File, error) {
	return openDirAt(unix.AT_FDCWD, path, name)
}

// openDirIn opens the directory sub of dir as openDir opens one.
func openDirIn(dir *os.File, sub, name string) (*os.File, error) {
	return openDirAt(int(dir.Fd()), sub, name)
}

func openDirAt(dirfd int, sub, name string) (*os.File, error) {
	fd, err := unix.Openat(dirfd, sub, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			// Linux says ENOTDIR for a link with O_DIRECTORY; lstat tells which (refused either way).
			var st unix.Stat_t
			if unix.Fstatat(dirfd, sub, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return nil, &RejectedError{File: name, Problem: "is a symbolic link (refused)"}
			}
			return nil, &RejectedError{File: name, Problem: "is not a directory"}
		}
		return nil, &os.PathError{Op: "openat", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// openRegularIn opens the file named file directly in dir (no path: file must be one name) as
// OpenRegular opens one: O_NOFOLLOW, O_NONBLOCK, and only a regular file. name is the file in
// messages; a missing file is reported as os.ErrNotExist.
func openRegularIn(dir *os.File, file, name string) (*os.File, os.FileInfo, error) {
	fd, err := unix.Openat(int(dir.Fd()), file, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, openError(&os.PathError{Op: "openat", Path: name, Err: err}, name)
	}
	return checkRegular(os.NewFile(uintptr(fd), name), name)
}

// OpenRegular opens the file at p (the directory named in p, then the file in it) without
// following a symbolic link in either (O_NOFOLLOW on both, O_DIRECTORY on the directory) and
// without blocking on a FIFO (O_NONBLOCK), and refuses anything the open file's fstat does not
// show as a regular file (devices such as /dev/zero, FIFOs, sockets, directories). The file is
// opened relative to the directory's descriptor (openat), so the search cannot swap the
// directory for a symbolic link between the check and the open. The directories above p's own
// (the output volume's mount) are the operator's. A missing directory or file is reported as
// os.ErrNotExist; name is the file in messages.
func OpenRegular(p, name string) (*os.File, os.FileInfo, error) {
	dirName := path.Dir(name)
	if dirName == "." {
		dirName = filepath.Base(filepath.Dir(p))
	}
	dir, err := openDir(filepath.Dir(p), dirName)
	if err != nil {
		return nil, nil, err
	}
	defer dir.Close()
	return openRegularIn(dir, filepath.Base(p), name)
}

// OpenRegularAt opens dir/sub/file as OpenRegular opens a file, where sub must be a real
// directory: sub is opened relative to dir and file relative to sub, each with O_NOFOLLOW (and
// sub with O_DIRECTORY), so neither can be a symbolic link, nor be swapped for one between a check
// and the open. name is the file in messages; a missing sub or file is reported as
// os.ErrNotExist.
func OpenRegularAt(dir *os.File, sub, file, name string) (*os.File, os.FileInfo, error) {
	d, err := openDirIn(dir, sub, path.Dir(name))
	if err != nil {
		return nil, nil, err
	}
	defer d.Close()
	return openRegularIn(d, file, name)
}

// openError maps the error of an O_NOFOLLOW|O_NONBLOCK open to a RejectedError when the
// file is a symbolic link or cannot be a regular file.
func openError(err error, name string) error {
	if errors.Is(err, syscall.ELOOP) {
		return &RejectedError{File: name, Problem: "is a symbolic link (refused)"}
	}
	if errors.Is(err, syscall.ENXIO) || errors.Is(err, syscall.EOPNOTSUPP) {
		return &RejectedError{File: name, Problem: "is not a regular file"}
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
		return nil, nil, &RejectedError{File: name, Problem: fmt.Sprintf("is not a regular file (mode %s)", st.Mode())}
	}
	return f, st, nil
}

// ReadCappedIn reads the regular file named file in dir whole (a directory OpenSubdir opened),
// as ReadCapped reads one, refusing it when it is larger than limit: first by its size, then
// through io.LimitReader(limit+1), so a file that grows while it is read is never read past the
// cap either.
func ReadCappedIn(dir *os.File, file, name string, limit int64) ([]byte, error) {
	f, st, err := openRegularIn(dir, file, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooLarge := func(size int64) error {
		return &RejectedError{File: name, Problem: fmt.Sprintf("is %d bytes, over the reporter's cap of %s", size, FormatCap(limit))}
	}
	if st.Size() > limit {
		return nil, tooLarge(st.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &RejectedError{File: name, Problem: fmt.Sprintf("grew over the reporter's cap of %s while it was read", FormatCap(limit))}
	}
	return data, nil
}

// ReadCapped reads the regular file at p whole through the output contract: no symbolic link
// for it or its directory, a regular file only, at most limit bytes. name is the file in
// messages; a refusal is a RejectedError, a missing file os.ErrNotExist.
func ReadCapped(p, name string, limit int64) ([]byte, error) {
	dirName := path.Dir(name)
	if dirName == "." {
		dirName = filepath.Base(filepath.Dir(p))
	}
	dir, err := openDir(filepath.Dir(p), dirName)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	return ReadCappedIn(dir, filepath.Base(p), name, limit)
}

// OpenSubdir opens the directory sub of the output directory dir by descriptor: dir, then sub in
// it, neither a symbolic link, so every file read in it (ReadCappedIn) is read from the
// directories that were checked, even if the search swaps a path for a symbolic link meanwhile.
func OpenSubdir(dir, sub string) (*os.File, error) {
	out, err := openDir(dir, filepath.Base(dir))
	if err != nil {
		return nil, err
	}
	defer out.Close()
	return openDirIn(out, sub, sub)
}
