//go:build linux

package launcher

import (
	"encoding/binary"
	"fmt"
	"syscall"
	"unsafe"
)

// exitStatus is how a worker ended: an exit code, or the signal that killed it.
type exitStatus struct {
	code int
	sig  syscall.Signal
}

func (st exitStatus) failed() bool { return st.code != 0 || st.sig != 0 }

// exitCode is the shell's convention: the code, or 128+N for signal N.
func (st exitStatus) exitCode() int {
	if st.sig != 0 {
		return 128 + int(st.sig)
	}
	return st.code
}

func (st exitStatus) String() string {
	if st.sig != 0 {
		return "was killed by " + sigName(st.sig)
	}
	return fmt.Sprintf("exited with code %d", st.code)
}

const (
	pPID     = 1          // P_PID
	wNoWait  = 0x01000000 // WNOWAIT
	cldExit  = 1          // CLD_EXITED
	sigInfoN = 128        // sizeof(siginfo_t)
)

// waitExited blocks until the process has exited and returns its status
// without reaping it (waitid with WNOWAIT): while the zombie exists its pid,
// which is also its process-group id, cannot be reused, so the supervisor may
// still signal the group safely.
func waitExited(pid int) (exitStatus, error) {
	var info [sigInfoN]byte
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|wNoWait, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return exitStatus{}, e
		}
		break
	}
	// siginfo_t: si_signo, si_errno, si_code (int32 each), then the union,
	// aligned to the pointer size: si_pid, si_uid, si_status.
	union := 12
	if unsafe.Sizeof(uintptr(0)) == 8 {
		union = 16
	}
	code := int32(binary.NativeEndian.Uint32(info[8:]))
	status := int32(binary.NativeEndian.Uint32(info[union+8:]))
	if code == cldExit {
		return exitStatus{code: int(status)}, nil
	}
	return exitStatus{sig: syscall.Signal(status)}, nil // CLD_KILLED, CLD_DUMPED
}
