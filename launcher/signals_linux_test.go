//go:build linux

package launcher

import (
	"sync"
	"syscall"
)

var (
	sysUSR2 = syscall.SIGUSR2
	sysTERM = syscall.SIGTERM
)

type waitGroup struct{ sync.WaitGroup }
