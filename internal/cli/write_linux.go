//go:build linux

package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"unsafe"
)

// sysRenameat2 is renameat2(2)'s number; the syscall package does not have it.
var sysRenameat2 = map[string]uintptr{"amd64": 316, "arm64": 276, "riscv64": 276, "loong64": 276, "386": 353, "arm": 382, "ppc64le": 357, "s390x": 347}[runtime.GOARCH]

const renameExchangeFlag = 1 << 1 // RENAME_EXCHANGE, linux/fs.h

// renameExchange swaps the directories a and b in one step (renameat2 with
// RENAME_EXCHANGE, Linux 3.15; ext4, xfs, btrfs, tmpfs, ...). It returns
// errNoExchange where the kernel or the file system cannot.
func renameExchange(a, b string) error {
	if sysRenameat2 == 0 {
		return errNoExchange
	}
	pa, err := syscall.BytePtrFromString(a)
	if err != nil {
		return err
	}
	pb, err := syscall.BytePtrFromString(b)
	if err != nil {
		return err
	}
	const atFDCWD = -100
	fd := atFDCWD
	_, _, e := syscall.Syscall6(sysRenameat2, uintptr(fd), uintptr(unsafe.Pointer(pa)),
		uintptr(fd), uintptr(unsafe.Pointer(pb)), renameExchangeFlag, 0)
	switch e {
	case 0:
		return nil
	case syscall.ENOSYS, syscall.EINVAL, syscall.EOPNOTSUPP, syscall.EXDEV, syscall.EBUSY:
		return errNoExchange // EBUSY: dir is a mount point
	}
	return &os.LinkError{Op: "renameat2 RENAME_EXCHANGE", Old: a, New: b, Err: e}
}

// ownGroup reports whether st belongs to this process's user, and its group.
func ownGroup(st fs.FileInfo) (int, bool) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return -1, false
	}
	return int(sys.Gid), int(sys.Uid) == os.Geteuid()
}

// lockDir takes an exclusive flock on dir for the length of one write, so
// that two parc compile runs into the same directory do not remove each
// other's work in progress. Where locks are not supported it does nothing.
func lockDir(dir string) (unlock func()) {
	f, err := os.Open(dir)
	if err != nil {
		return func() {}
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	return func() { f.Close() }
}

// cwdInside reports whether a process (this one, `parc compile -o .`, or a
// shell or job of the same user) has its working directory in dir: swapping
// dir would leave it in the removed old directory, so the journal is used.
// Processes of other users, whose cwd cannot be read, are not seen.
func cwdInside(dir string) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true // cannot tell: do not swap
	}
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+"/")) {
			return true
		}
	}
	return false
}
