//go:build linux

package launcher

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkLaunchOverhead compares starting N trivial workers (/bin/true)
// and waiting for them:
//
//	direct    exec.Cmd for each worker, started together, then waited for
//	run       launcher.Run in this process (plan, preflight, shims, pipes,
//	          supervision)
//	binary    the launcher as its own process (launcher/internal/testmain,
//	          which is `parc launch` without the compiler): what a job pays.
//	          It also reports the launcher process's peak resident memory
//	          (VmHWM-MB, from /proc/self/status as the process ends).
//	parc      `parc launch` itself (cmd/parc, which also links the compiler),
//	          when it builds.
//
// The overhead is binary (or parc) minus direct (ns/op).
func BenchmarkLaunchOverhead(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "parc-launch")
	if out, err := exec.Command("go", "build", "-o", bin, "parc.dev/parc/launcher/internal/testmain").CombinedOutput(); err != nil {
		b.Fatalf("build testmain: %v\n%s", err, out)
	}
	parc := filepath.Join(b.TempDir(), "parc")
	if exec.Command("go", "build", "-o", parc, "parc.dev/parc/cmd/parc").Run() != nil ||
		exec.Command(parc, "launch", "--help").Run() != nil {
		parc = ""
	}
	for _, n := range []int{8, 64} {
		plan := blockPlan(1, n)
		plan.Command = []string{"/bin/true"}
		path := writePlan(b, plan)
		env := cleanEnv("CUDA_VISIBLE_DEVICES=" + gpuIDs(n))

		b.Run(fmt.Sprintf("direct/workers=%d", n), func(b *testing.B) {
			for b.Loop() {
				cmds := make([]*exec.Cmd, n)
				for i := range cmds {
					cmds[i] = exec.Command("/bin/true")
					if err := cmds[i].Start(); err != nil {
						b.Fatal(err)
					}
				}
				for _, c := range cmds {
					if err := c.Wait(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run(fmt.Sprintf("run/workers=%d", n), func(b *testing.B) {
			opts := Options{PlanPath: path, NodeRank: intp(0), Env: env, Stdout: io.Discard, Stderr: io.Discard,
				Signals: make(chan os.Signal)}
			for b.Loop() {
				if code, err := Run(context.Background(), opts); code != 0 || err != nil {
					b.Fatal(code, err)
				}
			}
		})
		b.Run(fmt.Sprintf("binary/workers=%d", n), func(b *testing.B) {
			hwm := filepath.Join(b.TempDir(), "vmhwm")
			var peakKB int
			for b.Loop() {
				cmd := exec.Command(bin, "launch", "--plan", path, "--node-rank", "0")
				cmd.Env = append(env, "PARC_TESTMAIN_VMHWM="+hwm)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
				var kb int
				if data, err := os.ReadFile(hwm); err == nil {
					fmt.Sscanf(string(data), "%d kB", &kb)
				}
				if kb == 0 {
					b.Fatalf("no VmHWM in %s", hwm)
				}
				peakKB = max(peakKB, kb)
			}
			b.ReportMetric(float64(peakKB)/1024, "VmHWM-MB")
		})
		b.Run(fmt.Sprintf("parc/workers=%d", n), func(b *testing.B) {
			if parc == "" {
				b.Skip("cmd/parc does not build or has no launch command")
			}
			for b.Loop() {
				cmd := exec.Command(parc, "launch", "--plan", path, "--node-rank", "0")
				cmd.Env = env
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
			}
		})
	}
}

func gpuIDs(n int) string {
	s := "0"
	for i := 1; i < n; i++ {
		s += fmt.Sprintf(",%d", i)
	}
	return s
}
