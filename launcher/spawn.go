package launcher

import (
	"os/exec"
	"runtime"
)

// spawnRequest asks the spawner to start commands, in order, stopping at
// the first that fails.
type spawnRequest struct {
	cmds []*exec.Cmd
	done chan spawnResult
}

type spawnResult struct {
	started int
	err     error
}

// spawner starts every process from one locked OS thread that lives as long
// as the supervisor: Linux sends the parent-death signal when the creating
// thread exits, not the process (go.dev/issue/27505).
func spawner(reqs <-chan spawnRequest) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for r := range reqs {
		var res spawnResult
		for _, c := range r.cmds {
			if res.err = c.Start(); res.err != nil {
				break
			}
			res.started++
		}
		r.done <- res
	}
}

// startOn starts cmds on the spawner and returns how many started.
func startOn(spawn chan<- spawnRequest, cmds []*exec.Cmd) (int, error) {
	done := make(chan spawnResult, 1)
	spawn <- spawnRequest{cmds: cmds, done: done}
	r := <-done
	return r.started, r.err
}

// startCmd starts one command on the spawner.
func startCmd(spawn chan<- spawnRequest, cmd *exec.Cmd) error {
	_, err := startOn(spawn, []*exec.Cmd{cmd})
	return err
}
