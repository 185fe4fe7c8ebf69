package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/compiler"
)

func artifacts(tag string) compiler.Files {
	return compiler.Files{
		compiler.ArgsFile:   []byte("--tag\n" + tag + "\n"),
		compiler.LaunchJSON: []byte(`{"tag": "` + tag + `"}` + "\n"),
		compiler.SbatchFile: []byte("#!/bin/bash\n# " + tag + "\n"),
		compiler.TorchrunSh: []byte("#!/bin/bash\n# " + tag + "\n"),
		compiler.ReportFile: []byte("# " + tag + "\n"),
	}
}

// dirState is every file in dir (names and bytes), hidden ones included.
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

// failRenameOf makes the rename onto name fail.
func failRenameOf(t *testing.T, name string) {
	t.Cleanup(func() { rename = os.Rename })
	rename = func(from, to string) error {
		if filepath.Base(to) == name {
			return &os.LinkError{Op: "rename", Old: from, New: to, Err: errors.New("injected failure")}
		}
		return os.Rename(from, to)
	}
}

// Issue 12, item 11: a rename that fails half-way through leaves the old set
// exactly as it was (it used to leave launch.json and megatron.args from the
// new spec next to submit.sbatch from the old one), and no staging files.
func TestWriteFilesIsAllOrNothing(t *testing.T) {
	names := artifacts("x").Names()
	for _, failing := range names[1:] { // every position but the first
		t.Run(failing, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644))
			require.NoError(t, writeFiles(dir, artifacts("old")))
			before := dirState(t, dir)

			failRenameOf(t, failing)
			err := writeFiles(dir, artifacts("new"))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "the previous files are back in place")
			assert.Equal(t, before, dirState(t, dir), "the directory changed")
		})
	}
}

// Into an empty directory, a failure leaves none of the new files.
func TestWriteFilesFailureInEmptyDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	names := artifacts("x").Names()
	failRenameOf(t, names[len(names)-1])
	require.Error(t, writeFiles(dir, artifacts("new")))
	assert.Empty(t, dirState(t, dir))
}

func TestWriteFilesReplacesTheSet(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, writeFiles(dir, artifacts("old")))
	require.NoError(t, writeFiles(dir, artifacts("new")))
	got := dirState(t, dir)
	assert.Len(t, got, len(artifacts("new")), "no staging or backup directory is left: %v", got)
	for name, data := range artifacts("new") {
		assert.Equal(t, string(data), got[name])
		st, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, compiler.Executable(name), st.Mode()&0o111 != 0, name)
	}
	for name := range got {
		assert.False(t, strings.HasPrefix(name, ".parc-"), name)
	}
}
