package cli

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/compiler"
)

// The test binary doubles as a parc compile that crashes (SIGKILL, as power
// loss or the OOM killer would stop it) at one step of writeFiles:
// PARC_TEST_WRITE_CRASH=STEP|MODE|DIR.
const crashVar = "PARC_TEST_WRITE_CRASH"

func TestMain(m *testing.M) {
	if spec := os.Getenv(crashVar); spec != "" {
		parts := strings.SplitN(spec, "|", 3)
		step, mode, dir := parts[0], parts[1], parts[2]
		useMode(mode)
		failAt = func(s string) error {
			if s == step {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
			return nil
		}
		if err := writeFiles(dir, artifacts("new")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func artifacts(tag string) compiler.Files {
	return compiler.Files{
		compiler.ArgsFile:   []byte("--tag\n" + tag + "\n"),
		compiler.LaunchJSON: []byte(`{"tag": "` + tag + `"}` + "\n"),
		compiler.SbatchFile: []byte("#!/bin/bash\n# " + tag + "\n"),
		compiler.TorchrunSh: []byte("#!/bin/bash\n# " + tag + "\n"),
		compiler.ReportFile: []byte("# " + tag + "\n"),
	}
}

// dirState is every entry in dir (names and bytes), hidden ones included.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			out[e.Name()] = "(dir)"
			continue
		}
		out[e.Name()] = string(b)
	}
	return out
}

// whichSet says which complete set dir holds, "old" or "new", or describes
// the mix; the user's own entries (notes.txt, logs/) must be there.
func whichSet(t *testing.T, dir string, own map[string]string) string {
	t.Helper()
	got := dirState(t, dir)
	for name, want := range own {
		if got[name] != want {
			return fmt.Sprintf("lost %s (%q)", name, got[name])
		}
		delete(got, name)
	}
	for name := range got {
		if strings.HasPrefix(name, ".parc-") {
			delete(got, name) // leftovers are checked on their own
		}
	}
	for _, tag := range []string{"old", "new"} {
		want := map[string]string{}
		for name, data := range artifacts(tag) {
			want[name] = string(data)
		}
		if fmt.Sprint(want) == fmt.Sprint(got) {
			return tag
		}
	}
	return fmt.Sprintf("a mixed set: %v", got)
}

// leftovers lists parc's temporary entries in dir and next to it.
func leftovers(t *testing.T, dir string) []string {
	var out []string
	entries, _ := os.ReadDir(dir) // none when dir was never created
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".parc-") {
			out = append(out, e.Name())
		}
	}
	for name := range dirState(t, filepath.Dir(dir)) {
		if strings.Contains(name, ".parc-") {
			out = append(out, name)
		}
	}
	return out
}

// modes: how writeFiles can replace a set. "exchange" swaps directories;
// "journal" replaces files in place, forced here by a file system without
// RENAME_EXCHANGE; "journal-subdir" by a subdirectory in the output
// directory (which a swap cannot carry); "new" creates the directory.
var modes = []string{"exchange", "journal", "journal-subdir", "new"}

func useMode(mode string) {
	if mode == "journal" {
		exchange = func(a, b string) error { return errNoExchange }
	}
}

// prepare makes an output directory holding the old set (none for "new")
// and the user's own files; it returns the directory and those files.
func prepareOut(t *testing.T, mode string) (string, map[string]string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "out")
	own := map[string]string{}
	if mode == "new" {
		return dir, own
	}
	require.NoError(t, writeFiles(dir, artifacts("old")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644))
	own["notes.txt"] = "mine"
	if mode == "journal-subdir" {
		require.NoError(t, os.Mkdir(filepath.Join(dir, "logs"), 0o755))
		own["logs"] = "(dir)"
	}
	return dir, own
}

// stepsOf records the steps of one successful write in mode.
func stepsOf(t *testing.T, mode string) []string {
	dir, _ := prepareOut(t, mode)
	var steps []string
	failAt = func(s string) error { steps = append(steps, s); return nil }
	defer func() { failAt = func(string) error { return nil } }()
	require.NoError(t, writeFiles(dir, artifacts("new")))
	return steps
}

func restoreHooks(t *testing.T) {
	t.Cleanup(func() {
		failAt = func(string) error { return nil }
		exchange = renameExchange
	})
}

// Issue 12, item 11: a step of the write that fails (a full disk, an I/O
// error, a rename refused) leaves the directory holding one complete set,
// the old or the new one, never a mix, and the user's own files; the next
// write cleans up whatever the failed one left.
func TestWriteFilesEveryStepFails(t *testing.T) {
	restoreHooks(t)
	for _, mode := range modes {
		useMode(mode)
		steps := stepsOf(t, mode)
		require.NotEmpty(t, steps)
		for _, step := range steps {
			t.Run(mode+"/"+step, func(t *testing.T) {
				dir, own := prepareOut(t, mode)
				failAt = func(s string) error {
					if s == step {
						return errors.New("injected failure")
					}
					return nil
				}
				err := writeFiles(dir, artifacts("new"))
				failAt = func(string) error { return nil }
				require.ErrorContains(t, err, "injected failure")
				if mode == "new" {
					if _, serr := os.Stat(dir); serr == nil {
						assert.Equal(t, "new", whichSet(t, dir, own))
					}
				} else {
					set := whichSet(t, dir, own)
					assert.Contains(t, []string{"old", "new"}, set, "after %v", err)
				}
				require.NoError(t, writeFiles(dir, artifacts("new")), "the next write")
				assert.Equal(t, "new", whichSet(t, dir, own))
				assert.Empty(t, leftovers(t, dir))
			})
		}
		exchange = renameExchange
	}
}

// A crash (the process SIGKILLed, as by power loss or the OOM killer) at any
// step: where the directories are swapped, the output directory holds one
// complete set at every instant; under the journal (no RENAME_EXCHANGE), a
// crash between the renames leaves the commit record, and the next write
// finishes the interrupted one before doing its own (recovery). Either way
// the next write leaves no temporary entry behind.
func TestWriteFilesCrashAtEveryStep(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the directory swap is Linux's renameat2")
	}
	restoreHooks(t)
	for _, mode := range modes {
		useMode(mode)
		steps := stepsOf(t, mode)
		exchange = renameExchange
		for _, step := range steps {
			t.Run(mode+"/"+step, func(t *testing.T) {
				dir, own := prepareOut(t, mode)
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), crashVar+"="+step+"|"+mode+"|"+dir)
				out, err := cmd.CombinedOutput()
				var ee *exec.ExitError
				require.ErrorAs(t, err, &ee, "%s", out)
				require.Equal(t, syscall.SIGKILL, ee.Sys().(syscall.WaitStatus).Signal(), "%s", out)

				if _, serr := os.Stat(dir); serr == nil || mode != "new" {
					set := whichSet(t, dir, own)
					if strings.HasPrefix(mode, "journal") && strings.HasPrefix(step, "rename ") && set != "old" && set != "new" {
						// The renames were interrupted: the commit record
						// is on disk and recovery finishes them.
						_, jerr := os.Stat(filepath.Join(dir, journalName))
						require.NoError(t, jerr, "a mixed set without a commit record: %s", set)
						useMode(mode)
						require.NoError(t, recoverOut(dir))
						exchange = renameExchange
						assert.Equal(t, "new", whichSet(t, dir, own), "recovery finishes the interrupted write")
					} else {
						assert.Contains(t, []string{"old", "new"}, set)
					}
				}
				require.NoError(t, recoverOut(dir))
				assert.Empty(t, leftovers(t, dir))
				if _, serr := os.Stat(dir); serr == nil {
					assert.Contains(t, []string{"old", "new"}, whichSet(t, dir, own))
				}
				require.NoError(t, writeFiles(dir, artifacts("new")), "the next write")
				assert.Equal(t, "new", whichSet(t, dir, own))
				assert.Empty(t, leftovers(t, dir))
			})
		}
	}
}

// A crash between the renames of an in-place write, recovered: the journal's
// steps before the first rename leave the old set (no commit record), the
// ones after it the new set once recovered.
func TestWriteFilesRecoversInterruptedRenames(t *testing.T) {
	restoreHooks(t)
	useMode("journal")
	dir, own := prepareOut(t, "journal")
	names := artifacts("x").Names()
	// Simulate the crash: a failure that leaves everything as it is, by
	// failing the rollback too (the backup directory is gone).
	failAt = func(s string) error {
		if s == "rename "+names[2] {
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), backupPref) {
					os.RemoveAll(filepath.Join(dir, e.Name()))
				}
			}
			return errors.New("injected failure")
		}
		return nil
	}
	err := writeFiles(dir, artifacts("new"))
	require.ErrorContains(t, err, "the next parc compile into")
	failAt = func(string) error { return nil }
	assert.True(t, strings.HasPrefix(whichSet(t, dir, own), "a mixed set"), "the two renamed files are new, the rest old")
	require.NoError(t, writeFiles(dir, artifacts("newer")))
	// The interrupted write was finished first, then replaced as a whole.
	for name, data := range artifacts("newer") {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, string(data), string(b))
	}
	assert.Empty(t, leftovers(t, dir))
}

func TestWriteFilesReplacesTheSet(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			restoreHooks(t)
			useMode(mode)
			dir, own := prepareOut(t, mode)
			require.NoError(t, writeFiles(dir, artifacts("new")))
			assert.Equal(t, "new", whichSet(t, dir, own))
			assert.Empty(t, leftovers(t, dir))
			for name := range artifacts("new") {
				st, err := os.Stat(filepath.Join(dir, name))
				require.NoError(t, err)
				assert.Equal(t, compiler.Executable(name), st.Mode()&0o111 != 0, name)
			}
		})
	}
}

// The swapped-in directory keeps the old one's permissions, and a symlinked
// output directory stays a symlink (the set is written where it points).
func TestWriteFilesKeepsModeAndSymlink(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real")
	require.NoError(t, writeFiles(real, artifacts("old")))
	require.NoError(t, os.Chmod(real, 0o750))
	link := filepath.Join(root, "out")
	require.NoError(t, os.Symlink("real", link))
	require.NoError(t, writeFiles(link, artifacts("new")))
	st, err := os.Lstat(link)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, st.Mode().Type())
	assert.Equal(t, "new", whichSet(t, real, nil))
	st, err = os.Stat(real)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o750), st.Mode().Perm())
	names, _ := os.ReadDir(root)
	assert.Len(t, names, 2, "nothing left next to the directory: %v", names)
}

// An artifact name taken by a directory is refused before anything changes.
func TestWriteFilesRefusesNonRegular(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, compiler.LaunchJSON), 0o755))
	err := writeFiles(dir, artifacts("new"))
	require.ErrorContains(t, err, "is not a regular file")
	got := dirState(t, dir)
	assert.Equal(t, []string{compiler.LaunchJSON}, slices.Sorted(maps.Keys(got)))
}

// `parc compile -o .` (or a shell or job working in DIR): the directory is
// not swapped, which would leave them in the removed old one; the files are
// replaced in place (the journal) and DIR stays the same directory.
func TestWriteFilesKeepsAWorkingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	require.NoError(t, writeFiles(dir, artifacts("old")))
	before, err := os.Stat(dir)
	require.NoError(t, err)
	t.Chdir(dir)
	require.NoError(t, writeFiles(".", artifacts("new")))
	after, err := os.Stat(dir)
	require.NoError(t, err)
	assert.True(t, os.SameFile(before, after), "the output directory was swapped under the working directory")
	assert.Equal(t, "new", whichSet(t, dir, nil))
	assert.Empty(t, leftovers(t, dir))
}
