package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"parc.dev/parc/compiler"
)

// rename is os.Rename; tests make it fail.
var rename = os.Rename

// writeFiles writes the artifacts into dir as one set: a reader (sbatch, a
// launcher) never sees launch.json from one spec next to submit.sbatch from
// another.
//
//  1. Every artifact is written into a staging directory inside dir and
//     fsynced, then the staging directory is fsynced.
//  2. The artifacts already in dir are hard-linked (else copied) into a
//     backup directory inside dir.
//  3. Each staged file is renamed over its name (atomic per file; same file
//     system). If a rename fails, the renamed ones are put back from the
//     backup (or removed when they are new), so dir holds the old set again.
//  4. dir is fsynced; the staging and backup directories are removed.
//
// Other files in dir are left alone. A crash (power loss) between the first
// and last rename of step 3 can still leave a mixed set; the staging and
// backup directories (.parc-stage-*, .parc-old-*) then show it.
func writeFiles(dir string, files compiler.Files) (err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	stage, err := os.MkdirTemp(dir, ".parc-stage-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	names := files.Names()
	for _, name := range names {
		mode := fs.FileMode(0o644)
		if compiler.Executable(name) {
			mode = 0o755
		}
		if err := writeSynced(filepath.Join(stage, name), files[name], mode); err != nil {
			return err
		}
	}
	if err := syncDir(stage); err != nil {
		return err
	}

	backup, err := os.MkdirTemp(dir, ".parc-old-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(backup)
	hadOld := map[string]bool{}
	for _, name := range names {
		old := filepath.Join(dir, name)
		st, err := os.Lstat(old)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return err
		case !st.Mode().IsRegular():
			return fmt.Errorf("%s is not a regular file; parc compile would replace it", old)
		}
		if err := keepCopy(old, filepath.Join(backup, name)); err != nil {
			return fmt.Errorf("cannot keep a copy of %s while replacing it: %w", old, err)
		}
		hadOld[name] = true
	}

	for i, name := range names {
		if err := rename(filepath.Join(stage, name), filepath.Join(dir, name)); err != nil {
			rerr := rollBack(dir, backup, names[:i], hadOld)
			if rerr != nil {
				return fmt.Errorf("writing %s: %w; putting the previous files back failed too (%v): %s holds a mixed set, see %s",
					name, err, rerr, dir, backup)
			}
			return fmt.Errorf("writing %s: %w; the previous files are back in place, nothing changed", name, err)
		}
	}
	return syncDir(dir)
}

// rollBack undoes the renames of done: the old file back from backup, or
// the new one removed when there was none.
func rollBack(dir, backup string, done []string, hadOld map[string]bool) error {
	var errs []error
	for _, name := range done {
		target := filepath.Join(dir, name)
		if hadOld[name] {
			errs = append(errs, os.Rename(filepath.Join(backup, name), target))
		} else {
			errs = append(errs, os.Remove(target))
		}
	}
	errs = append(errs, syncDir(dir))
	return errors.Join(errs...)
}

// writeSynced writes data to a new file and fsyncs it before closing.
func writeSynced(path string, data []byte, mode fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	return errors.Join(werr, serr, cerr, os.Chmod(path, mode)) // Chmod: the umask may have narrowed mode
}

// keepCopy hard-links src to dst, or copies it where links are not allowed.
func keepCopy(src, dst string) error {
	if os.Link(src, dst) == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, st.Mode().Perm())
	if err != nil {
		return err
	}
	_, cerr := io.Copy(out, in)
	return errors.Join(cerr, out.Sync(), out.Close())
}

// syncDir fsyncs a directory, so the renames in it survive a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	serr := d.Sync()
	if errors.Is(serr, errors.ErrUnsupported) || errors.Is(serr, os.ErrInvalid) {
		serr = nil // file systems that cannot sync a directory
	}
	return errors.Join(serr, d.Close())
}
